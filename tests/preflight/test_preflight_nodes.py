"""Preflight of the deploying identity and the EKS add-on pins (issue 29 items 6 and 7), with botocore Stubbers for
STS and EKS (no network, no credentials)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.preflight.core import preflight
from gpufleet.preflight.identity import principal_key
from tests.preflight.support import World, all_clients, eks_client, fleet_of
from tests.preflight.test_preflight_cli import use, write_spec


@pytest.mark.parametrize(
    ("arn", "key"),
    [
        ("arn:aws:sts::111122223333:assumed-role/platform-admin/alice", ("111122223333", "role", "platform-admin")),
        ("arn:aws:iam::111122223333:role/teams/platform-admin", ("111122223333", "role", "platform-admin")),
        ("arn:aws:iam::111122223333:user/ops/bob", ("111122223333", "user", "bob")),
        ("arn:aws:sts::111122223333:federated-user/bob", None),
    ],
)
def test_an_assumed_role_session_is_its_role(arn: str, key: tuple[str, str, str] | None) -> None:
    assert principal_key(arn) == key


def test_a_deployer_outside_cluster_admins_blocks_in_mode_create(world: World) -> None:
    caller = "arn:aws:sts::111122223333:assumed-role/ci-runner/build-42"
    clients, stubs = all_clients(world, caller=caller)
    findings = [f for f in preflight(fleet_of(world), clients) if "deploying identity" in f.message]
    assert [(f.blocking, f.where, f.message, f.hint) for f in findings] == [
        (
            True,
            "account",
            f"the deploying identity {caller} is not one of cluster.admins"
            " (arn:aws:iam::111122223333:role/platform-admin): the cluster is created without creator admin"
            " (bootstrapClusterCreatorAdminPermissions false, immutable), so `pulumi up` could not apply a single"
            " Kubernetes resource",
            "run preflight and `pulumi up` as a cluster.admins principal, or add this one to cluster.admins",
        )
    ]
    for stub in stubs:
        stub.assert_no_pending_responses()


def test_an_admin_session_passes(world: World) -> None:
    clients, _ = all_clients(world)
    assert not [f for f in preflight(fleet_of(world), clients) if "deploying identity" in f.message]


def test_an_addon_pin_eks_does_not_offer_blocks_with_the_default(world: World) -> None:
    fleet = fleet_of(world)
    pinned = dataclasses.replace(
        fleet,
        versions=dataclasses.replace(
            fleet.versions, addons={"kubeProxy": "v1.33.1-eksbuild.1", "vpcCni": "v1.20.2-eksbuild.1"}
        ),
    )
    clients, stubs = all_clients(world)
    eks, eks_stub = eks_client(
        [
            ("kube-proxy", "1.33", ["v1.33.3-eksbuild.6", "v1.33.0-eksbuild.2"], "v1.33.0-eksbuild.2"),
            ("vpc-cni", "1.33", ["v1.20.2-eksbuild.1", "v1.19.6-eksbuild.7"], "v1.19.6-eksbuild.7"),
        ]
    )
    findings = [f for f in preflight(pinned, dataclasses.replace(clients, eks=eks)) if "EKS add-on" in f.message]
    assert [(f.blocking, f.message, f.hint) for f in findings] == [
        (
            True,
            "EKS add-on kube-proxy v1.33.1-eksbuild.1 is not offered for Kubernetes 1.33 in us-east-1 (2 versions are,"
            " the default v1.33.0-eksbuild.2)",
            "pin versions.addons.kubeProxy: v1.33.0-eksbuild.2",
        )
    ]
    eks_stub.assert_no_pending_responses()


@pytest.mark.parametrize(("region", "exit_code"), [("us-east-1", 0), ("us-west-2", 1)])
def test_the_stacks_aws_region_must_be_the_specs(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    region: str,
    exit_code: int,
) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpufleet\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    stack = tmp_path / "stacks" / "Pulumi.dev.yaml"
    stack.write_text(f"config:\n  aws:region: {region}\n  gpufleet:spec: fleet.yaml\n")
    clients, _ = all_clients(world)
    use(monkeypatch, clients)
    assert main(["preflight", write_spec(tmp_path, world), "--env", "dev"]) == exit_code
    out = capsys.readouterr().out
    if exit_code:
        assert (
            f"error: stack: stack dev ({stack}) has aws:region us-west-2, the spec's cluster.region is us-east-1\n"
            "  fix: pulumi config set aws:region us-east-1 --stack dev (or change cluster.region)\n"
        ) in out
    else:
        assert "aws:region" not in out
