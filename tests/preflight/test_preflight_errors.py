"""The real clients factory and AWS failures outside any emulator: no credentials is a finding, never a
traceback; the standard endpoint setting reaches every client. No moto here, and no request is sent: the
credential lookup fails before anything leaves the process."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.preflight import clients as aws
from tests.preflight.support import scrub_aws_env

SPEC = (Path(__file__).resolve().parents[2] / "fleet.yaml").read_text()


def test_no_credentials_is_one_blocking_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scrub_aws_env(monkeypatch, str(tmp_path), credentials=False)
    spec = tmp_path / "fleet.yaml"
    spec.write_text(SPEC)
    assert main(["preflight", str(spec), "--env", "dev"]) == 1
    out = capsys.readouterr().out
    assert (
        out == "error: aws: ec2:DescribeInstanceTypes failed: NoCredentialsError: Unable to locate credentials\n"
        f"  fix: {aws.CREDENTIALS_FIX}\n"
        "preflight research/dev in us-east-1: 1 error(s), 0 warning(s)\n"
    )


def test_aws_endpoint_url_points_every_client_at_an_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scrub_aws_env(monkeypatch, str(tmp_path), credentials=True)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    clients = aws.make_clients("us-east-1")
    for client in (clients.ec2, clients.service_quotas, clients.ssm, clients.capacity_reservations):
        assert client.meta.endpoint_url == "http://127.0.0.1:5000"
        assert client.meta.region_name == "us-east-1"


def test_a_missing_spec_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", str(tmp_path / "absent.yaml"), "--env", "dev"]) == 2
    assert "gpufleet preflight: error: cannot read" in capsys.readouterr().err


def test_env_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "fleet.yaml"]) == 2
    assert "--env" in capsys.readouterr().err


def test_a_profile_that_does_not_exist_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scrub_aws_env(monkeypatch, str(tmp_path), credentials=False)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    spec = tmp_path / "fleet.yaml"
    spec.write_text(SPEC)
    assert main(["preflight", str(spec), "--env", "dev"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "error: aws: session:CreateClient failed: ProfileNotFound: The config profile (no-such-profile) could not be"
        " found\n"
    )
    assert f"  fix: {aws.CREDENTIALS_FIX}\n" in out
