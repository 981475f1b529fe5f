"""The rules of gpufleet/rules/access.py (access) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import CUSTOMER_KEY, Patch, add_group, at, build, found, group, quota, team

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # access
    pytest.param(
        "access",
        [team(members=[{"principalArn": "arn:aws:iam::111122223333:role/teams/vision"}])],
        [],
        id="access/admin-and-member",
    ),
    pytest.param(
        "access",
        [
            at("cluster", "mode", value="Existing"),
            at("cluster", "systemNodes", value=None),
            at("cluster", "admins", value=None),
        ],
        [],
        id="access/existing-without-admins",
    ),
    pytest.param(
        "access",
        [at("cluster", "admins", value=None)],
        [
            (
                "cluster",
                (
                    "mode Create needs cluster.admins: the cluster is created without an implicit admin"
                    " (bootstrapClusterCreatorAdminPermissions false), so nobody could deploy into it"
                ),
            )
        ],
        id="access/create-without-admins",
    ),
    pytest.param(
        "access",
        [team(members=[{"principalArn": "arn:aws:iam::111122223333:role/platform-admin"}])],
        [
            (
                "teams[0].members[0].principalArn",
                (
                    "arn:aws:iam::111122223333:role/platform-admin is already listed in cluster.admins: EKS allows one"
                    " access entry per principal"
                ),
            )
        ],
        id="access/admin-in-a-team",
    ),
    pytest.param("access", [CUSTOMER_KEY], [], id="access/key-with-admins"),
    pytest.param(
        "access",
        [
            at("cluster", "mode", value="Existing"),
            at("cluster", "systemNodes", value=None),
            at("cluster", "admins", value=None),
            CUSTOMER_KEY,
        ],
        [
            (
                "checkpoints.encryption",
                (
                    "encryption CustomerManagedKey needs cluster.admins: they administer the checkpoint key, and nobody"
                    " else may"
                ),
            )
        ],
        id="access/key-without-admins",
    ),
    pytest.param(
        "access",
        [team(members=[{"principalArn": "arn:aws-cn:iam::111122223333:role/vision"}])],
        [
            (
                "teams[0].members[0].principalArn",
                (
                    "arn:aws-cn:iam::111122223333:role/vision is in partition aws-cn, the cluster (region us-east-1)"
                    " in aws"
                ),
            )
        ],
        id="access/partition",
    ),
    # resource-ids (issue 26 item 2: these validated and then made plan and synth exit 3)
    pytest.param(
        "resource-ids",
        [
            team(members=[{"principalArn": f"arn:aws:iam::111122223333:role/{n}"} for n in ("ml", "x.y", "teams/x")]),
            at("cluster", "admins", value=[{"principalArn": "arn:aws:iam::111122223333:role/ml"}]),
            add_group(name="system-node", instanceType="g6.xlarge"),
        ],
        [],
        id="ids/distinct",
    ),
    pytest.param(
        "resource-ids",
        [
            at(
                "cluster",
                "admins",
                value=[{"principalArn": f"arn:aws:iam::111122223333:role/{n}"} for n in ("x.y", "x_y")],
            )
        ],
        [
            (
                "cluster.admins[1].principalArn",
                "the access entry of arn:aws:iam::111122223333:role/x_y gets the resource id"
                ' "access-admin-111122223333-x-y", as the access entry of arn:aws:iam::111122223333:role/x.y does',
            )
        ],
        id="ids/dot-and-underscore",
    ),
    pytest.param(
        "resource-ids",
        [
            team(
                members=[
                    {"principalArn": "arn:aws:iam::111122223333:role/teams/x"},
                    {"principalArn": "arn:aws:iam::111122223333:user/teams-x"},
                ]
            )
        ],
        [
            (
                "teams[0].members[1].principalArn",
                "the access entry of arn:aws:iam::111122223333:user/teams-x gets the resource id"
                ' "access-team-vision-111122223333-teams-x", as the access entry of'
                " arn:aws:iam::111122223333:role/teams/x does",
            )
        ],
        id="ids/path-and-role-or-user",
    ),
    pytest.param(
        "resource-ids",
        [
            team(
                members=[
                    {"principalArn": "arn:aws:iam::111122223333:role/ml"},
                    {"principalArn": "arn:aws:iam::111122223333:role/ml-edit"},
                ]
            )
        ],
        [
            (
                "teams[0].members[1].principalArn",
                "the access entry of arn:aws:iam::111122223333:role/ml-edit gets the resource id"
                ' "access-team-vision-111122223333-ml-edit", as the AmazonEKSEditPolicy association of'
                " arn:aws:iam::111122223333:role/ml does",
            )
        ],
        id="ids/entry-meets-association",
    ),
    pytest.param(
        "resource-ids",
        [group(name="system"), quota(nodeGroup="system")],
        [
            (
                "nodeGroups[0].name",
                '"system" is the system node group\'s: its nodes carry gpufleet.io/node-group: system and its resource'
                " id is system-node-group",
            )
        ],
        id="ids/gpu-node-group-named-system",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
