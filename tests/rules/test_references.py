"""The rules of gpufleet/rules/references.py (names) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import IMAGES, Patch, add_group, add_team, at, build, found, group, quota, team

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # duplicate-names
    pytest.param("duplicate-names", [add_group(name="l4b", instanceType="g6.xlarge")], [], id="dup/distinct-groups"),
    pytest.param(
        "duplicate-names",
        [add_group(name="l4", instanceType="g6.2xlarge")],
        [("nodeGroups[1].name", 'duplicate name "l4" in nodeGroups')],
        id="dup/group",
    ),
    pytest.param(
        "duplicate-names",
        [add_team(name="vision", namespace="vision-2")],
        [("teams[1].name", 'duplicate name "vision" in teams')],
        id="dup/team",
    ),
    pytest.param(
        "duplicate-names",
        [add_team(name="speech", namespace="vision")],
        [("teams[1].namespace", 'namespace "vision" is already used by team "vision"')],
        id="dup/namespace",
    ),
    pytest.param("duplicate-names", [add_team(name="speech")], [], id="dup/namespace-defaults-to-team-name"),
    pytest.param(
        "duplicate-names",
        [team(quotas=[{"nodeGroup": "l4", "gpus": 1}, {"nodeGroup": "l4", "gpus": 2}])],
        [("teams[0].quotas[1].nodeGroup", 'a second quota on node group "l4"')],
        id="dup/quota",
    ),
    pytest.param(
        "duplicate-names",
        [at("imageSets", value=[{"name": "t", "images": ["a:1"]}, {"name": "t", "images": ["b:1"]}])],
        [("imageSets[1].name", 'duplicate name "t" in imageSets')],
        id="dup/image-set",
    ),
    pytest.param(
        "duplicate-names",
        [at("admission", "priorities", value=[{"name": "batch", "value": 1}, {"name": "batch", "value": 2}])],
        [("admission.priorities[1].name", 'duplicate priority class "batch"')],
        id="dup/priority",
    ),
    # references
    pytest.param(
        "references",
        [IMAGES, group(images=["training"]), at("cost", "gpuHourUsd", value={"l4": 0.8})],
        [],
        id="refs/all-known",
    ),
    pytest.param(
        "references",
        [IMAGES, group(images=["trainig"])],
        [("nodeGroups[0].images[0]", 'unknown image set "trainig"')],
        id="refs/image-set",
    ),
    pytest.param(
        "references",
        [quota(nodeGroup="l40s")],
        [("teams[0].quotas[0].nodeGroup", 'unknown node group "l40s"')],
        id="refs/node-group",
    ),
    pytest.param(
        "references",
        [at("cost", "gpuHourUsd", value={"l40s": 1.0})],
        [("cost.gpuHourUsd.l40s", 'price for unknown node group "l40s"')],
        id="refs/cost",
    ),
    # eks-names (issue 29 item 5): nodeGroupNamePrefix at most 63 - 26 = 37 (terraform-provider-aws eks/node_group.go)
    pytest.param(
        "eks-names",
        [add_group(name="a" * 31, instanceType="g6.xlarge"), at("metadata", "name", value="f" * 4)],
        [],
        id="eks-names/prefix-of-37",
    ),
    pytest.param(
        "eks-names",
        [add_group(name="a" * 32, instanceType="g6.xlarge")],
        [
            (
                "nodeGroups[1].name",
                f"node group name prefix mini-{'a' * 32}- is 38 characters; EKS allows at most 37 (node group names are"
                " at most 63, 26 of them the unique suffix)",
            )
        ],
        id="eks-names/group-too-long",
    ),
    pytest.param(
        "eks-names",
        [at("metadata", "name", value="f" * 30)],
        [
            (
                "metadata.name",
                f'fleet name "{"f" * 30}" is 30 characters: the node group name prefixes {"f" * 30}-<group>- and the'
                " system node group's may be at most 37 (EKS node group names are at most 63, 26 of them the unique"
                " suffix)",
            )
        ],
        id="eks-names/fleet-too-long",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
