"""The rules as one table: every rule has a passing and a failing case (in tests/rules/test_<feature>.py, beside
gpufleet/rules/<feature>.py), the minimal fleet passes them all, hints across rules, and skipping rules."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.rules import cross_field
from tests.rules import (
    test_access,
    test_ami,
    test_capacity,
    test_cluster,
    test_devices,
    test_image_pull,
    test_karpenter,
    test_network,
    test_node_groups,
    test_references,
    test_sharing,
    test_storage,
    test_tenancy,
    test_versions,
    test_workloads,
)
from tests.rules.fleets import OPERATOR, Patch, add_group, at, build, group, quota

ALL_CASES: list[Any] = [
    case
    for feature in (
        test_access,
        test_ami,
        test_capacity,
        test_cluster,
        test_devices,
        test_image_pull,
        test_karpenter,
        test_network,
        test_node_groups,
        test_references,
        test_sharing,
        test_storage,
        test_tenancy,
        test_versions,
        test_workloads,
    )
    for case in feature.CASES
]


def test_minimal_fleet_passes_every_rule() -> None:
    assert cross_field.check(build()) == []


def test_every_rule_has_a_passing_and_a_failing_case() -> None:
    passing = {p.values[0] for p in ALL_CASES if not p.values[2]}
    failing = {p.values[0] for p in ALL_CASES if p.values[2]}
    assert set(cross_field.RULES) - passing == set(), "rules without a passing case"
    assert set(cross_field.RULES) - failing == set(), "rules without a failing case"


@pytest.mark.parametrize(
    ("patches", "hint"),
    [
        ([group(instanceType="p5.48xlarg")], 'did you mean "p5.48xlarge"?'),
        ([quota(nodeGroup="l44")], 'did you mean "l4"?'),
        (
            [add_group(name="a" * 32, instanceType="g6.xlarge")],
            "shorten the node group name to at most 31 characters (or metadata.name)",
        ),
        ([at("metadata", "name", value="f" * 30)], "shorten metadata.name to at most 29 characters"),
        (
            [at("versions", "addons", value={"kubeProxy": "v1.32.5-eksbuild.2"})],
            "pin a v1.33.<patch>-eksbuild.<n> build (aws eks describe-addon-versions --addon-name kube-proxy"
            " --kubernetes-version 1.33)",
        ),
        (
            [group(sharing={"strategy": "MIG", "profile": "1g.10gb"})],
            (
                "MIG needs A100 (p4d, p4de), B200 (p6-b200), B300 (p6-b300), H100 (p5), H200 (p5e, p5en) GPUs; use MPS"
                " or TimeSlicing on this group"
            ),
        ),
        ([quota(gpus=9)], "lower the quota to at most 4, or raise the group's maxSize"),
        (
            [
                group(
                    sharing={
                        "strategy": "MIG",
                        "migStrategy": "Mixed",
                        "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.40gb"}],
                    },
                    instanceType="p5.48xlarge",
                ),
                add_group(name="mps", instanceType="g6.xlarge", sharing={"strategy": "MPS", "replicas": 4}),
            ],
            (
                "use TimeSlicing on this group, or migStrategy Single on the MIG groups (one profile per group), or put"
                " the MPS and the Mixed groups in different clusters"
            ),
        ),
        ([group(instanceType="g5g.xlarge")], "use type: AL2023_ARM_64_NVIDIA"),
        (
            [
                OPERATOR,
                group(
                    instanceType="g5g.xlarge",
                    ami={"type": "AL2023_ARM_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
                ),
            ],
            "use AL2023_ARM_64_STANDARD (the operator installs the driver), or driver source Preinstalled",
        ),
        (
            [at("versions", "driver", value={"source": "Preinstalled", "gdrCopy": "Enabled"})],
            (
                "set source: Operator (its driver DaemonSet loads gdrdrv), or gdrCopy: Disabled; a node that loads"
                " gdrdrv itself gets GDRCopy from the device plugin without this setting"
            ),
        ),
    ],
)
def test_rule_hints(patches: list[Patch], hint: str) -> None:
    assert [i.hint for i in cross_field.check(build(*patches)) if i.severity == "error"] == [hint]


def test_check_can_skip_rules() -> None:
    fleet = build(quota(gpus=9))
    assert cross_field.check(fleet, skip=["quota-fits-node-group"]) == []
