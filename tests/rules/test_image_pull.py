"""The rules of gpufleet/rules/image_pull.py (imagePull, diskThroughputMiBps, diskIops) on small fleets: a passing
and a failing case of each, with the exact message. The minimal fleet's group is a g6.xlarge on AL2023
1.33.13-20260714, which has nodeadm's FastImagePull gate."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.spec import defaults
from tests.rules.fleets import BOTTLEROCKET, Patch, build, found, group

OLD_AL2023 = {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.3-20250819"}
OLD_BOTTLEROCKET = {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.43.0-5043decc"}
SNAPSHOT = "snap-0123456789abcdef0"

CASES: list[Any] = [
    pytest.param("image-pull", [group(imagePull={"mode": "Parallel"})], [], id="parallel/al2023"),
    pytest.param(
        "image-pull",
        [group(ami=BOTTLEROCKET, imagePull={"mode": "Parallel", "maxConcurrentDownloadsPerImage": 10})],
        [],
        id="parallel/bottlerocket-tuned",
    ),
    pytest.param(
        "image-pull",
        [group(ami=OLD_AL2023, imagePull={"mode": "Parallel"})],
        [
            (
                "nodeGroups[0].imagePull.mode",
                "imagePull.mode Parallel needs nodeadm's FastImagePull feature gate, which AL2023 release v20250821"
                " or later has; ami.releaseVersion 1.33.3-20250819 is older",
            )
        ],
        id="parallel/al2023-before-the-gate",
    ),
    pytest.param(
        "image-pull",
        [group(ami=OLD_BOTTLEROCKET, imagePull={"mode": "Parallel"})],
        [
            (
                "nodeGroups[0].imagePull.mode",
                "imagePull.mode Parallel needs the SOCI snapshotter's parallel pull, which Bottlerocket 1.44.0 or"
                " later has; ami.releaseVersion 1.43.0-5043decc is older",
            )
        ],
        id="parallel/bottlerocket-before-soci",
    ),
    pytest.param(
        "image-pull",
        [group(ami=BOTTLEROCKET, dataVolumeSnapshotId=SNAPSHOT, imagePull={"mode": "Parallel"})],
        [
            (
                "nodeGroups[0].imagePull.mode",
                "imagePull.mode Parallel switches Bottlerocket to the soci snapshotter, which does not use the images"
                " dataVolumeSnapshotId's snapshot holds in containerd's overlayfs store (Bottlerocket empties both"
                " stores when the snapshotter changes)",
            )
        ],
        id="parallel/snapshot",
    ),
    pytest.param(
        "image-pull",
        [group(imagePull={"mode": "Parallel"}, diskThroughputMiBps=300)],
        [
            (
                "nodeGroups[0].diskThroughputMiBps",
                "parallel pull is slower than containerd's own pull on a volume below 600 MiB/s (it writes each layer"
                " to disk before unpacking it: nodeadm doc/examples.md); diskThroughputMiBps is 300",
            )
        ],
        id="parallel/slow-disk",
    ),
    # With RAID0 on AL2023 from v20251217 the SOCI store is on the array: the EBS volume's speed does not matter.
    pytest.param(
        "image-pull",
        [
            group(
                instanceType="g6.2xlarge", localStorage="RAID0", imagePull={"mode": "Parallel"}, diskThroughputMiBps=125
            )
        ],
        [],
        id="parallel/raid0-store-on-the-array",
    ),
    pytest.param(
        "image-pull",
        [group(imagePull={"maxConcurrentUnpacksPerImage": 4})],
        [
            (
                "nodeGroups[0].imagePull.maxConcurrentUnpacksPerImage",
                "imagePull.maxConcurrentUnpacksPerImage is a Bottlerocket setting; on AL2023_x86_64_NVIDIA nodeadm"
                " writes the SOCI snapshotter's configuration itself (20 downloads and 12 unpacks per image, 16mb"
                " chunks, unpacked layers discarded)",
            )
        ],
        id="tuning/al2023",
    ),
    pytest.param(
        "image-pull",
        [group(ami=BOTTLEROCKET, imagePull={"mode": "Default", "concurrentDownloadChunkSize": "8mb"})],
        [
            (
                "nodeGroups[0].imagePull.concurrentDownloadChunkSize",
                "imagePull.concurrentDownloadChunkSize tunes the parallel pull, and this group pulls with"
                " containerd's own",
            )
        ],
        id="tuning/default-mode",
    ),
    pytest.param("gp3-volume", [group(diskThroughputMiBps=1000, diskIops=4000)], [], id="gp3/at-the-ratio"),
    pytest.param(
        "gp3-volume",
        [group(diskThroughputMiBps=1000, diskIops=3000)],
        [
            (
                "nodeGroups[0].diskIops",
                "gp3 gives at most 0.25 MiB/s per provisioned IOPS: diskThroughputMiBps 1000 needs diskIops of at"
                " least 4000, not 3000",
            )
        ],
        id="gp3/too-few-iops",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected


@pytest.mark.parametrize(
    ("patches", "mode", "mibps", "iops"),
    [
        # A GPU group on a release with the gate pulls in parallel onto a 600 MiB/s volume at the baseline IOPS.
        ([], "Parallel", 600, 3000),
        ([group(ami=BOTTLEROCKET)], "Parallel", 600, 3000),
        # Too old an AMI, a slow volume set on purpose, a snapshot of the images: containerd's own pull at baseline.
        ([group(ami=OLD_AL2023)], "Default", 125, 3000),
        ([group(ami=OLD_BOTTLEROCKET)], "Default", 125, 3000),
        ([group(diskThroughputMiBps=300)], "Default", 300, 3000),
        ([group(ami=BOTTLEROCKET, dataVolumeSnapshotId=SNAPSHOT)], "Default", 125, 3000),
        # The store on the RAID0 array: parallel, and the EBS volume stays at the baseline.
        ([group(instanceType="g6.2xlarge", localStorage="RAID0")], "Parallel", 125, 3000),
        # Before v20251217 nodeadm left the SOCI store on the root volume.
        (
            [
                group(
                    instanceType="g6.2xlarge",
                    localStorage="RAID0",
                    ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.5-20251120"},
                )
            ],
            "Parallel",
            600,
            3000,
        ),
        # 1000 MiB/s needs 4000 IOPS.
        ([group(diskThroughputMiBps=1000)], "Parallel", 1000, 4000),
    ],
)
def test_computed_defaults(patches: list[Patch], mode: str, mibps: int, iops: int) -> None:
    (g,) = build(*patches).node_groups
    assert (defaults.image_pull_mode(g), defaults.disk_throughput(g), defaults.disk_iops(g)) == (mode, mibps, iops)
