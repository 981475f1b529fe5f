"""How a node group's nodes are launched, the plan's side (gpufleet.spec.provisioning is the spec's): one
NodeProvisioner per `provisioner`, in PROVISIONERS.

Why, with sources: docs/karpenter.md, "Design notes", gpufleet/plan/builders/provisioners.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from gpufleet.plan.builders.karpenter import KARPENTER_POOLS
from gpufleet.plan.builders.node_groups import MANAGED_NODE_GROUPS
from gpufleet.plan.parts import AtFoundation, BuildContext, Resource, RolloutPlan
from gpufleet.spec.fleet import Fleet, NodeGroup
from gpufleet.spec.provisioning import Provisioning


class NodeProvisioner(Protocol):
    @property
    def provisioning(self) -> Provisioning: ...

    # Said once under plan.md's node-group table when a group uses the provisioner (None: nothing to say).
    @property
    def note(self) -> str | None: ...

    def group_resources(
        self, ctx: BuildContext, group: NodeGroup, labels: dict[str, str], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        """Stage 1's resources of one group: `labels` are the node labels later stages asked for, `later` their
        `at_foundation` parts (Bottlerocket settings, node repair)."""
        ...

    def controller_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        """Stage 1's resources once for the groups it provisions (never empty): its controller, if any."""
        ...

    def provisioned_by(self, fleet: Fleet, group: NodeGroup) -> str:
        """plan.md's "provisioned by" cell."""
        ...

    def sizes(self, plan: RolloutPlan, group: NodeGroup) -> str:
        """plan.md's "nodes" cell."""
        ...

    def capacity(self, group: NodeGroup) -> str:
        """What plan.md's "capacity" cell adds to the group's capacity type and reservation."""
        ...

    def warm(self, group: NodeGroup, warm: list[str]) -> str:
        """plan.md's "warm capacity" cell, given what headroom keeps (`warm`)."""
        ...

    def spot_capacity(self, group: NodeGroup) -> str | None:
        """How the group may run on Spot, for the cost estimate's Spot range; None when it never does."""
        ...

    def access(self, fleet: Fleet) -> dict[str, str] | None:
        """Its controller's row of plan.md's access table (`who`, `what`, `may`), or None."""
        ...

    def before_deploy(self, fleet: Fleet) -> list[str]:
        """Its items of plan.md's "Before you deploy"."""
        ...


PROVISIONERS: Mapping[str, NodeProvisioner] = {
    p.provisioning.name: p
    for p in (
        MANAGED_NODE_GROUPS,
        KARPENTER_POOLS,
    )
}


def of(group: NodeGroup) -> NodeProvisioner:
    return PROVISIONERS[group.provisioner]


def used(fleet: Fleet) -> tuple[NodeProvisioner, ...]:
    """The provisioners the fleet's groups use, in the order of their first group."""
    return tuple(PROVISIONERS[p] for p in dict.fromkeys(g.provisioner for g in fleet.node_groups))
