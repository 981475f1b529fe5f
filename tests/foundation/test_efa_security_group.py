"""EFA's SRD traffic passes only between interfaces whose security groups allow all traffic to and from themselves
(issue 29 item 10; https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html, "Prepare an EFA-enabled
security group"). The test evaluates the planned rules as EC2 does, for two EFA interfaces of one group, in mode
Create and Existing. Before, the interfaces carried only the cluster security group, whose self rule EKS lists only
from Kubernetes 1.33 (eksctl PR #8509) and which gpufleet neither created nor checked on an existing cluster."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.plan.builders.node_groups import EFA_SECURITY_GROUP, EFA_SELF_RULES
from gpufleet.plan.parts import Ref, RolloutPlan

RULES = {
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "in",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "out",
}


def _resources(plan: RolloutPlan) -> list[Any]:
    return [r for s in plan.stages for r in s.content.resources]


def _sg(value: Any) -> str:
    """A security group as the plan names it: a Ref to a planned one, or the cluster's."""
    assert isinstance(value, Ref)
    return value.resource if value.resource != "cluster" else "cluster"


def srd_passes(plan: RolloutPlan, a: list[Any], b: list[Any]) -> bool:
    """All traffic from an interface with groups `a` to one with groups `b`: some egress rule of a group in `a` and
    some ingress rule of a group in `b` allow every protocol to and from a group the other interface carries. The
    cluster security group's own rules are unknown here (EKS-managed), so they count for nothing."""
    rules = [(RULES[r.type], _sg(r.args["securityGroupId"]), r.args) for r in _resources(plan) if r.type in RULES]

    def allows(direction: str, own: list[Any], peer: list[Any]) -> bool:
        return any(
            d == direction
            and sg in {_sg(g) for g in own}
            and args["ipProtocol"] == "-1"
            and _sg(args["referencedSecurityGroupId"]) in {_sg(g) for g in peer}
            for d, sg, args in rules
        )

    return allows("out", a, b) and allows("in", b, a)


@pytest.mark.parametrize(("fixture", "group"), [("prod", "h100"), ("existing", "h200-block")])
def test_every_efa_interface_can_reach_every_other_over_srd(
    fixture: str, group: str, request: pytest.FixtureRequest
) -> None:
    plan: RolloutPlan = request.getfixturevalue(fixture)
    template = next(r for r in _resources(plan) if r.id == f"{group}-launch-template")
    interfaces = template.args["networkInterfaces"]
    assert len(interfaces) > 1 and {i["interfaceType"] for i in interfaces} <= {"efa", "efa-only"}
    for first in interfaces:
        for second in interfaces:
            assert srd_passes(plan, first["securityGroups"], second["securityGroups"])
    # Nodes launch only after the rules exist.
    assert set(EFA_SELF_RULES) <= set(template.depends_on)
    sg = next(r for r in _resources(plan) if r.id == EFA_SECURITY_GROUP)
    assert sg.args["vpcId"] == plan.fleet.cluster.vpc_id


def test_without_efa_groups_there_is_no_efa_security_group() -> None:
    from tests.network.fleets import fleet, group, plan

    p = plan(fleet([group("l4", "g6.xlarge")]))
    assert not [r for r in _resources(p) if r.id == EFA_SECURITY_GROUP or r.type in RULES]
