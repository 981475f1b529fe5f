"""The rules of gpufleet/rules/tenancy.py (quotas and admission) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import Patch, add_group, at, build, found, group, quota, team, through

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # quota-fits-node-group
    pytest.param("quota-fits-node-group", [quota(gpus=4)], [], id="quota/exactly-full"),
    pytest.param(
        "quota-fits-node-group",
        [quota(gpus=5)],
        [
            (
                "teams[0].quotas[0].gpus",
                '5 GPUs is more than node group "l4" can ever hold (maxSize 4 x 1 GPU(s) per g6.xlarge = 4)',
            )
        ],
        id="quota/too-large",
    ),
    pytest.param(
        "quota-fits-node-group",
        [group(instanceType="p4d.24xlarge", scaling={"maxSize": 2}), quota(gpus=16)],
        [],
        id="quota/8-gpu-nodes",
    ),
    pytest.param(
        "quota-fits-node-group",
        [group(instanceType="p4d.24xlarge", scaling={"maxSize": 2}), quota(gpus=17)],
        [
            (
                "teams[0].quotas[0].gpus",
                '17 GPUs is more than node group "l4" can ever hold (maxSize 2 x 8 GPU(s) per p4d.24xlarge = 16)',
            )
        ],
        id="quota/8-gpu-nodes-too-large",
    ),
    pytest.param("quota-fits-node-group", [team(cohort="r"), quota(lendingLimit=4)], [], id="quota/lend-all"),
    pytest.param(
        "quota-fits-node-group",
        [team(cohort="r"), quota(lendingLimit=5)],
        [("teams[0].quotas[0].lendingLimit", "lendingLimit 5 is more than the nominal quota of 4 GPUs")],
        id="quota/lend-more-than-owned",
    ),
    pytest.param(
        "quota-fits-node-group",
        [add_group(name="l4", instanceType="g6.2xlarge", scaling={"maxSize": 1})],
        [],
        id="quota/first-of-duplicate-names",
    ),
    # limits-need-cohort
    pytest.param(
        "limits-need-cohort", [team(cohort="research"), quota(borrowingLimit=2, lendingLimit=2)], [], id="cohort/with"
    ),
    pytest.param(
        "limits-need-cohort",
        [quota(borrowingLimit=2)],
        [("teams[0].quotas[0].borrowingLimit", 'borrowingLimit needs a cohort, but team "vision" has none')],
        id="cohort/borrowing",
    ),
    pytest.param(
        "limits-need-cohort",
        [quota(lendingLimit=2)],
        [("teams[0].quotas[0].lendingLimit", 'lendingLimit needs a cohort, but team "vision" has none')],
        id="cohort/lending",
    ),
    # A group without image sets: boot and join 180 s + operands 180 s + the pod's own pull (10.78 GB at 0.096 GB/s:
    # 112.33 s, gpufleet.facts.image_pull) = 472.33 s, x1.5 = 708.5 s, a whole minute up: 720 s
    # (gpufleet.spec.cold_start). Issue 41 item 9: 540 s, ai-on-eks's, counted no pull the pod does itself (nor a
    # weight load) and passed.
    pytest.param(
        "admission",
        [at("admission", "podsReadyTimeoutSeconds", value=720)],
        [],
        id="admission/timeout-covers-cold-start",
    ),
    pytest.param(
        "admission",
        [at("admission", "podsReadyTimeoutSeconds", value=540)],
        [
            (
                "admission.podsReadyTimeoutSeconds",
                (
                    "540s is shorter than a cold start of node group l4 (about 660s with margin: node boot and join,"
                    " image pulls, GPU Operator operands, the pull a pod does itself and, on an Inference group, the"
                    " weight load and warm-up before its readiness probe passes): a workload that must scale the"
                    " group up is evicted before its pods are ready, and deactivated after 5 requeues"
                ),
            )
        ],
        id="admission/timeout-shorter-than-cold-start",
    ),
    # admission
    pytest.param(
        "admission",
        [
            team(cohort="r"),
            at(
                "admission",
                "preemption",
                value={"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": "LowerPriority"},
            ),
        ],
        [],
        id="admission/borrow-with-reclaim",
    ),
    pytest.param(
        "admission",
        [at("admission", "preemption", value={"reclaimWithinCohort": "Never", "borrowWithinCohort": "LowerPriority"})],
        [
            (
                "admission.preemption.borrowWithinCohort",
                (
                    "borrowWithinCohort LowerPriority needs reclaimWithinCohort other than Never (Kueue rejects the"
                    " ClusterQueue otherwise)"
                ),
            )
        ],
        id="admission/borrow-without-reclaim",
    ),
    pytest.param(
        "admission",
        [team(namespace="kube-system")],
        [("teams[0].namespace", 'team namespace "kube-system" is a system namespace')],
        id="admission/system-namespace",
    ),
    pytest.param(
        "admission",
        [group(topology={"placement": "Required"})],
        [
            (
                "nodeGroups[0].topology.placement",
                (
                    "topology-aware placement needs the EKS network topology labels, which g6.xlarge nodes do not get"
                    " (Kueue would find no capacity)"
                ),
            )
        ],
        id="admission/placement-without-topology",
    ),
    pytest.param(
        "admission", [team(namespace="kube-system"), through("telemetry")], [], id="admission/stage-not-deployed"
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
