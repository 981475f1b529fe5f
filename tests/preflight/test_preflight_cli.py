"""`gpufleet preflight SPEC --env ENV` end to end: the CLI over moto's EC2, with the services moto does not
implement (service quotas, EKS AMI parameters, capacity reservations) stubbed behind the clients factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.cli import main
from gpufleet.preflight.clients import Clients
from tests.preflight.support import (
    AL2023_PARAM,
    AMI_ID,
    BOTTLEROCKET_PARAM,
    NEEDED,
    P_ON_DEMAND,
    RELEASE,
    SYSTEM_PARAM,
    World,
    all_clients,
    reservation,
    spec_text,
)


def use(monkeypatch: pytest.MonkeyPatch, clients: Clients) -> list[str]:
    """Make the CLI build `clients`; returns the regions it asked for."""
    asked: list[str] = []

    def factory(region: str) -> Clients:
        asked.append(region)
        return clients

    monkeypatch.setattr("gpufleet.preflight.clients.make_clients", factory)
    return asked


def write_spec(tmp_path: Path, world: World) -> str:
    path = tmp_path / "fleet.yaml"
    path.write_text(spec_text(world))
    return str(path)


def test_a_fleet_that_fits_the_account_exits_0(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clients, stubs = all_clients(world)
    asked = use(monkeypatch, clients)
    assert main(["preflight", write_spec(tmp_path, world), "--env", "dev"]) == 0
    assert capsys.readouterr().out == "preflight probe/dev in us-east-1: all 12 checks passed\n"
    assert asked == ["us-east-1"]
    for stub in stubs:
        stub.assert_no_pending_responses()


def test_blocking_findings_exit_1_with_what_and_fix(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clients, _ = all_clients(
        world,
        quotas={**NEEDED, P_ON_DEMAND: 192},
        ssm=[(SYSTEM_PARAM, RELEASE), (AL2023_PARAM, None), (BOTTLEROCKET_PARAM, AMI_ID)],
        reservations=(reservation(State="scheduled"),),
    )
    use(monkeypatch, clients)
    assert main(["preflight", write_spec(tmp_path, world), "--env", "dev"]) == 1
    out = capsys.readouterr().out
    blocks = out.rstrip("\n").split("\n")
    assert blocks[-1] == "preflight probe/dev in us-east-1: 5 error(s), 1 warning(s)"
    heads = [line for line in blocks if not line.startswith("  fix: ")][:-1]
    assert heads == [
        (
            "error: nodeGroups/h100: the fleet needs 384 vCPUs of 'Running On-Demand P instances' (L-417A185B) at"
            " maxSize (h100: 2 x p5.48xlarge = 384), the quota in us-east-1 is 192"
        ),
        (
            "error: nodeGroups/h100: AMI release 1.33.13-20260714 (AL2023_x86_64_NVIDIA) does not exist for Kubernetes"
            f" 1.33 in us-east-1: no SSM parameter {AL2023_PARAM}"
        ),
        (
            "error: nodeGroups/cb: AMI release 1.33.13-20260714 (AL2023_x86_64_NVIDIA) does not exist for Kubernetes"
            f" 1.33 in us-east-1: no SSM parameter {AL2023_PARAM}"
        ),
        (
            "error: nodeGroups/l40s: AMI release 1.33.13-20260714 (AL2023_x86_64_NVIDIA) does not exist for Kubernetes"
            f" 1.33 in us-east-1: no SSM parameter {AL2023_PARAM}"
        ),
        (
            "error: nodeGroups/spot: AMI release 1.33.13-20260714 (AL2023_x86_64_NVIDIA) does not exist for Kubernetes"
            f" 1.33 in us-east-1: no SSM parameter {AL2023_PARAM}"
        ),
        (
            "warning: nodeGroups/cb: Capacity Block cr-0123456789abcdef0 is scheduled, not active yet: nodes launch"
            " from 2026-08-01 11:30:00+00:00"
        ),
    ]
    fixes = [line for line in blocks if line.startswith("  fix: ")]
    assert len(fixes) == 6
    assert fixes[0].startswith(
        "  fix: request at least 384: aws service-quotas request-service-quota-increase --service-code ec2 --quota-code"
        " L-417A185B"
    )


def test_an_environment_the_spec_lacks_is_a_spec_error(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(region: str) -> Any:
        raise AssertionError("no AWS call for an invalid spec")

    monkeypatch.setattr("gpufleet.preflight.clients.make_clients", never)
    assert main(["preflight", write_spec(tmp_path, world), "--env", "prod"]) == 1
    assert 'no environment "prod" in the spec' in capsys.readouterr().err
