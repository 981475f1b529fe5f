"""`gpufleet snapshot` against moto's EC2: the snapshot of a Bottlerocket instance's data volume, tagged, the
instance stopped first; a volume in use refused; every failure exit 1 with its fix. No credentials, no network:
moto answers in-process and the environment is scrubbed (tests/preflight/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpufleet.cli import main
from gpufleet.commands import snapshot as command
from tests.preflight.support import REGION, boto3, moto, scrub_aws_env

AMI = "ami-12c6146b"  # one of moto's own images


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    scrub_aws_env(monkeypatch, str(tmp_path), credentials=True)
    monkeypatch.setattr(command, "POLL_SECONDS", 0)
    with moto.mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def _instance(ec2: Any, *, data_volume: bool = True) -> str:
    devices = [{"DeviceName": "/dev/xvdb", "Ebs": {"VolumeSize": 60}}] if data_volume else []
    out = ec2.run_instances(ImageId=AMI, MinCount=1, MaxCount=1, BlockDeviceMappings=devices)
    return str(out["Instances"][0]["InstanceId"])


def _data_volume(ec2: Any, instance: str) -> str:
    mappings = ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["BlockDeviceMappings"]
    return next(str(m["Ebs"]["VolumeId"]) for m in mappings if m["DeviceName"] == "/dev/xvdb")


def test_an_instances_data_volume_is_snapshotted_and_tagged_once_the_instance_is_stopped(
    ec2: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = _instance(ec2)
    volume = _data_volume(ec2, instance)
    code = main(["snapshot", "--instance-id", instance, "--region", REGION, "--tag", "team=vision"])
    out, err = capsys.readouterr()
    assert code == 0, err
    snapshot_id = out.strip()
    (snap,) = ec2.describe_snapshots(SnapshotIds=[snapshot_id])["Snapshots"]
    assert snap["VolumeId"] == volume and snap["State"] == "completed"
    assert {t["Key"]: t["Value"] for t in snap["Tags"]} == {
        "Name": "Bottlerocket data volume",
        "gpufleet.io/source-volume": volume,
        "team": "vision",
    }
    assert ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["State"]["Name"] == (
        "stopped"
    )
    assert (
        f"set nodeGroups[].dataVolumeSnapshotId: {snapshot_id} on the Bottlerocket group (diskSizeGiB at least 60)"
        in err
    )


def test_a_detached_volume_is_snapshotted_as_it_is(ec2: Any, capsys: pytest.CaptureFixture[str]) -> None:
    volume = ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=40)["VolumeId"]
    code = main(["snapshot", "--volume-id", volume, "--region", REGION, "--no-wait", "--description", "vllm images"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (snap,) = ec2.describe_snapshots(SnapshotIds=[out.strip()])["Snapshots"]
    assert snap["Description"] == "vllm images" and snap["VolumeId"] == volume
    assert "(diskSizeGiB at least 40)" in err


def test_a_volume_of_a_running_instance_is_refused(ec2: Any, capsys: pytest.CaptureFixture[str]) -> None:
    instance = _instance(ec2)
    volume = _data_volume(ec2, instance)
    assert main(["snapshot", "--volume-id", volume, "--region", REGION]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"gpufleet snapshot: {volume} is attached to {instance}, which is not stopped: a snapshot of a volume in use"
        " may catch containerd's store half-written",
        f"hint: stop {instance} first, or pass --instance-id {instance} (which stops it)",
    ]
    assert [s for s in ec2.describe_snapshots()["Snapshots"] if s.get("VolumeId") == volume] == []


def test_an_instance_without_a_data_volume_is_refused(ec2: Any, capsys: pytest.CaptureFixture[str]) -> None:
    instance = _instance(ec2, data_volume=False)
    assert main(["snapshot", "--instance-id", instance, "--region", REGION]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"gpufleet snapshot: {instance} has no /dev/xvdb: the snapshot is of a Bottlerocket data volume, where"
        " containerd keeps the images",
        "hint: launch a Bottlerocket instance (its AMI maps /dev/xvdb), pull the images on it, then run this again",
    ]


def test_an_unknown_instance_is_the_aws_error_with_its_fix(ec2: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--instance-id", "i-0123456789abcdef0", "--region", REGION]) == 1
    first, hint = capsys.readouterr().err.splitlines()
    assert first.startswith("gpufleet snapshot: ec2:DescribeInstances failed: InvalidInstanceID.NotFound: ")
    assert hint == "hint: rerun once ec2:DescribeInstances succeeds; see the AWS error for the cause"


def test_without_credentials_it_says_how_to_give_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scrub_aws_env(monkeypatch, str(tmp_path), credentials=False)
    assert main(["snapshot", "--volume-id", "vol-0123456789abcdef0", "--region", REGION]) == 1
    first, hint = capsys.readouterr().err.splitlines()
    assert first.startswith("gpufleet snapshot: ec2:DescribeVolumes failed: NoCredentialsError")
    assert hint.startswith("hint: ") and "credential" in hint.lower()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--volume-id", "vol-1", "--region", REGION, "--tag", "team"], "--tag 'team': give KEY=VALUE"),
        (["--region", REGION], "one of the arguments --instance-id --volume-id is required"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", *argv]) == 2
    assert message in capsys.readouterr().err
