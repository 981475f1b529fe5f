"""snapshot a Bottlerocket data volume that holds a group's images, for nodeGroups[].dataVolumeSnapshotId

Stop the instance, snapshot its /dev/xvdb, tag it, wait: the last steps of aws-samples/bottlerocket-images-cache
snapshot.sh. Usage, tags and exit codes: docs/cold-start.md "Building the snapshot".
Why: docs/cold-start.md, "Design notes", gpufleet/commands/snapshot.py.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpufleet.base.errors import UsageError
from gpufleet.preflight.clients import ApiError, Client, call, session_client, wait

DATA_VOLUME = "/dev/xvdb"  # Bottlerocket's data volume, where containerd keeps its images (bottlerocket.dev storage)
NAME_TAG = "Bottlerocket data volume"  # aws-samples/bottlerocket-images-cache snapshot.sh's Name tag
SOURCE_TAG = "gpufleet.io/source-volume"
POLL_SECONDS = 15  # between the waiters' checks (botocore's own default for both)
MAX_POLLS = 240  # an hour: a large snapshot's first copy to S3 takes long


class Refused(Exception):
    """The instance or volume cannot be snapshotted as asked; the message says why, the hint what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--instance-id", metavar="ID", help="a Bottlerocket instance whose data volume /dev/xvdb holds the images"
    )
    source.add_argument("--volume-id", metavar="ID", help="the data volume itself (detached, or its instance stopped)")
    parser.add_argument("--region", required=True, help="the AWS region of the instance or volume")
    parser.add_argument(
        "--tag", action="append", default=[], metavar="KEY=VALUE", help="a tag on the snapshot (repeatable)"
    )
    parser.add_argument(
        "--description", metavar="TEXT", help="the snapshot's description (default: names the source volume)"
    )
    parser.add_argument("--no-wait", action="store_true", help="return once the snapshot is started, not completed")


def _tags(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--tag {pair!r}: give KEY=VALUE, such as --tag team=vision")
        out[key] = value
    return out


def _instance_volume(ec2: Client, instance_id: str) -> str:
    """The instance's data volume, once the instance is stopped."""
    reservations = call(ec2, "describe_instances", InstanceIds=[instance_id])["Reservations"]
    instance: dict[str, Any] = reservations[0]["Instances"][0]
    volumes = [
        m["Ebs"]["VolumeId"] for m in instance.get("BlockDeviceMappings", []) if m.get("DeviceName") == DATA_VOLUME
    ]
    if not volumes:
        raise Refused(
            f"{instance_id} has no {DATA_VOLUME}: the snapshot is of a Bottlerocket data volume, where containerd"
            " keeps the images",
            "launch a Bottlerocket instance (its AMI maps /dev/xvdb), pull the images on it, then run this again",
        )
    state = instance["State"]["Name"]
    if state not in ("stopped", "stopping"):
        print(f"stopping {instance_id} so containerd's store is whole on {volumes[0]} ...", file=sys.stderr)
        call(ec2, "stop_instances", InstanceIds=[instance_id])
    wait(ec2, "instance_stopped", InstanceIds=[instance_id], WaiterConfig=_polls())
    return str(volumes[0])


def _check_volume(ec2: Client, volume_id: str) -> int:
    """The volume's size in GiB; refused while it is attached to a running instance."""
    (volume,) = call(ec2, "describe_volumes", VolumeIds=[volume_id])["Volumes"]
    attached = [a["InstanceId"] for a in volume.get("Attachments", []) if a.get("State") in ("attached", "attaching")]
    if attached:
        reservations = call(ec2, "describe_instances", InstanceIds=attached)["Reservations"]
        running = [
            i["InstanceId"] for r in reservations for i in r["Instances"] if i["State"]["Name"] not in ("stopped",)
        ]
        if running:
            raise Refused(
                f"{volume_id} is attached to {running[0]}, which is not stopped: a snapshot of a volume in use may"
                " catch containerd's store half-written",
                f"stop {running[0]} first, or pass --instance-id {running[0]} (which stops it)",
            )
    return int(volume["Size"])


def _polls() -> dict[str, int]:
    return {"Delay": POLL_SECONDS, "MaxAttempts": MAX_POLLS}


def snapshot(ec2: Client, args: argparse.Namespace) -> tuple[str, int]:
    """Make the snapshot: its id and the source volume's size in GiB."""
    tags = {"Name": NAME_TAG, **_tags(args.tag)}
    volume_id = _instance_volume(ec2, args.instance_id) if args.instance_id else args.volume_id
    size = _check_volume(ec2, volume_id)
    tags[SOURCE_TAG] = volume_id
    created = call(
        ec2,
        "create_snapshot",
        VolumeId=volume_id,
        Description=args.description or f"Bottlerocket data volume {volume_id} with cached images (gpufleet snapshot)",
        TagSpecifications=[
            {"ResourceType": "snapshot", "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]}
        ],
    )
    snapshot_id = str(created["SnapshotId"])
    if not args.no_wait:
        print(f"waiting for {snapshot_id} to complete ...", file=sys.stderr)
        wait(ec2, "snapshot_completed", SnapshotIds=[snapshot_id], WaiterConfig=_polls())
    return snapshot_id, size


def run(args: argparse.Namespace) -> int:
    _tags(args.tag)  # a usage error before any AWS call
    try:
        ec2 = session_client(args.region, "ec2")
        snapshot_id, size = snapshot(ec2, args)
    except ApiError as exc:
        print(f"gpufleet snapshot: {exc.operation} failed: {exc.code}: {exc.message}", file=sys.stderr)
        print(f"hint: {exc.hint}", file=sys.stderr)
        return 1
    except Refused as exc:
        print(f"gpufleet snapshot: {exc}", file=sys.stderr)
        print(f"hint: {exc.hint}", file=sys.stderr)
        return 1
    print(snapshot_id)
    print(
        f"set nodeGroups[].dataVolumeSnapshotId: {snapshot_id} on the Bottlerocket group (diskSizeGiB at least {size})",
        file=sys.stderr,
    )
    return 0
