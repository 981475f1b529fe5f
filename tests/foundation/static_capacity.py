"""A test double of a third provisioner: nodes that always run, one EC2 instance each (the shape of static capacity
for an NVLink domain). It is the one module a provisioner is (gpufleet.plan.builders.provisioners); the test that
registers it (tests/foundation/test_provisioner_seam.py) adds the registry lines."""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.plan.parts import AtFoundation, BuildContext, Resource, RolloutPlan
from gpufleet.spec.fleet import Fleet, NodeGroup
from gpufleet.spec.provisioning import Provisioning

NAME = "StaticCapacity"
STATIC = Provisioning(name=NAME, auto_scaling_group=False, scales_itself=None, repairs="EKS", controller=None)  # type: ignore[arg-type]
NOTE = "Static groups run maxSize nodes around the clock."
CONTROLLER = "static-capacity-controller"


class StaticCapacity:
    provisioning = STATIC
    note: str | None = NOTE

    def group_resources(
        self, ctx: BuildContext, group: NodeGroup, labels: dict[str, str], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        return [
            Resource(
                id=f"static-{group.name}-{i}",
                type="aws:ec2/instance:Instance",
                args={"instanceType": group.instance_type, "labels": labels},
            )
            for i in range(group.max_size)
        ]

    def controller_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        return [Resource(id=CONTROLLER, type="kubernetes:core/v1:ConfigMap", args={"groups": [g.name for g in groups]})]

    def provisioned_by(self, fleet: Fleet, group: NodeGroup) -> str:
        return f"static capacity `{group.name}`"

    def sizes(self, plan: RolloutPlan, group: NodeGroup) -> str:
        return f"always {group.max_size}"

    def capacity(self, group: NodeGroup) -> str:
        return "; static"

    def warm(self, group: NodeGroup, warm: list[str]) -> str:
        return "every node, always"

    def spot_capacity(self, group: NodeGroup) -> str | None:
        return None

    def access(self, fleet: Fleet) -> dict[str, str] | None:
        return {"who": "kube-system/static", "what": "the static capacity controller", "may": "nothing at all"}

    def before_deploy(self, fleet: Fleet) -> list[str]:
        return ["The static instances' capacity is reserved."]
