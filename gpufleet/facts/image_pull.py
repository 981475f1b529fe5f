"""How fast a new node pulls a group's images: the figures gpufleet assumes where the spec measures nothing.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/facts/image_pull.py.
"""

from __future__ import annotations

SOURCE = "aws-samples/karpenter-blueprints soci-snapshotter @ 48a2104"
MEASURED_IMAGE_GB = 10.778400361
CONTAINERD_SECONDS = 112.33

# An image set whose size the spec does not give (imageSets[].sizeGB) counts this much per image: the blueprint's
# image, a CUDA framework image of the size the NGC PyTorch and Triton images have.
ASSUMED_IMAGE_GB = MEASURED_IMAGE_GB
CONTAINERD_GBPS = MEASURED_IMAGE_GB / CONTAINERD_SECONDS


def seconds(size_gb: float, gbps: float) -> float:
    return size_gb / gbps


# Parallel pull (SOCI snapshotter's parallel-pull-unpack mode): where each AMI has it, how it is set, and the disk it
# needs.
# Why: docs/cold-start.md, "Design notes", image_pull.FAST_IMAGE_PULL_AL2023_DATE.
FAST_IMAGE_PULL_AL2023_DATE = "20250821"
AL2023_MIN_VCPUS = 4
AL2023_MIN_MEMORY_GIB = 7
# nodeadm's values for the parallel-pull-unpack mode (its soci-snapshotter.config.toml): gpufleet's defaults on
# Bottlerocket too, whose own defaults are soci-snapshotter's conservative ones (3 downloads and 1 unpack per image,
# whole-layer chunks, blobs kept: soci-snapshotter docs/parallel-mode.md "Configuration"), which the
# karpenter-blueprints soci-snapshotter README recommends raising to 10-20 downloads and 16mb chunks for ECR.
NODEADM_MAX_CONCURRENT_DOWNLOADS_PER_IMAGE = 20
NODEADM_MAX_CONCURRENT_UNPACKS_PER_IMAGE = 12
NODEADM_CONCURRENT_DOWNLOAD_CHUNK_SIZE = "16mb"
NODEADM_DISCARD_UNPACKED_LAYERS = True
# Bottlerocket: settings.container-runtime.snapshotter = "soci" and
# settings.container-runtime-plugins.soci-snapshotter.pull-mode = "parallel-pull-unpack", tuned under
# settings.container-runtime-plugins.soci-snapshotter.parallel-pull-unpack.{max-concurrent-downloads-per-image,
# max-concurrent-unpacks-per-image, concurrent-download-chunk-size, discard-unpacked-layers}
# (https://bottlerocket.dev/en/os/1.53.x/api/settings/container-runtime-plugins/).
BOTTLEROCKET_SOCI_FLOOR = (1, 44, 0)

# The root volume (AL2023) or data volume (Bottlerocket) that holds the store.
# Why: docs/cold-start.md, "Design notes", image_pull.PARALLEL_MIN_MIBPS.
PARALLEL_MIN_MIBPS = 600
# gp3 (EC2 launch template and EC2NodeClass ebs.throughput/iops): 125 MiB/s and 3,000 IOPS are included; at most
# 1,000 MiB/s and 16,000 IOPS as the pinned Karpenter EC2NodeClass CRD and pulumi-aws document them (EC2's
# CreateVolume reference now allows 2,000 MiB/s and 80,000 IOPS; not taken until those pins say so), at most
# 0.25 MiB/s per provisioned IOPS and 500 IOPS per GiB (EC2 User Guide, general-purpose SSD volumes).
GP3_BASELINE_MIBPS = 125
GP3_BASELINE_IOPS = 3000
GP3_MAX_MIBPS = 1000
GP3_MAX_IOPS = 16000
GP3_MIBPS_PER_IOPS = 0.25

# The blueprint's parallel-pull times of the same image on the same disk (1,000 MiB/s, 16,000 IOPS).
SOCI_AL2023_SECONDS = 59.813
SOCI_BOTTLEROCKET_SECONDS = 44.974
SOCI_AL2023_GBPS = MEASURED_IMAGE_GB / SOCI_AL2023_SECONDS
SOCI_BOTTLEROCKET_GBPS = MEASURED_IMAGE_GB / SOCI_BOTTLEROCKET_SECONDS
MEASURED_DISK_MIBPS = 1000
_MIB_GB = 1024 * 1024 / 10**9


def disk_gbps(mibps: int) -> float:
    """A volume's throughput in GB/s (decimal), the most an image can land on it at."""
    return mibps * _MIB_GB


def assumed_gbps(parallel: bool, bottlerocket: bool, disk_mibps: int | None) -> float:
    """The pull rate gpufleet assumes: the blueprint's figure for the mode (and, in parallel, the AMI family), no
    more than the disk writes (`disk_mibps`; None: the store is on the instance-store array).

    Why: docs/cold-start.md, "Design notes", image_pull.assumed_gbps."""
    rate = CONTAINERD_GBPS
    if parallel:
        rate = SOCI_BOTTLEROCKET_GBPS if bottlerocket else SOCI_AL2023_GBPS
    return rate if disk_mibps is None else min(rate, disk_gbps(disk_mibps))


def _bottlerocket_version(release: str) -> tuple[int, ...] | None:
    head = release.split("-", 1)[0].split(".")
    return tuple(int(p) for p in head) if len(head) == 3 and all(p.isascii() and p.isdigit() for p in head) else None


# A bare `ephemeral-storage bind` binds the soci store too from this release.
# Why: docs/cold-start.md, "Design notes", image_pull.BOTTLEROCKET_DEFAULT_BIND_FLOOR.
BOTTLEROCKET_DEFAULT_BIND_FLOOR = (1, 46, 0)


def bottlerocket_default_bind(release: str) -> bool:
    """Whether a bare `ephemeral-storage bind` binds the release's default directories, the soci store among them."""
    version = _bottlerocket_version(release)
    return version is not None and version >= BOTTLEROCKET_DEFAULT_BIND_FLOOR


def parallel_floor(ami_type: str, release: str) -> str | None:
    """None when the AMI release has parallel pull as gpufleet renders it, else the release it needs."""
    if ami_type.startswith("BOTTLEROCKET"):
        version = _bottlerocket_version(release)
        floor = ".".join(str(p) for p in BOTTLEROCKET_SOCI_FLOOR)
        return None if version is not None and version >= BOTTLEROCKET_SOCI_FLOOR else f"Bottlerocket {floor}"
    date = release.rsplit("-", 1)[-1]
    ok = len(date) == 8 and date.isascii() and date.isdigit() and date >= FAST_IMAGE_PULL_AL2023_DATE
    return None if ok else f"AL2023 release v{FAST_IMAGE_PULL_AL2023_DATE}"


# The snapshot path's read rates. Why: docs/cold-start.md, "Design notes", image_pull.LAZY_LOAD_MIBPS.
LAZY_LOAD_MIBPS = 50
MIB = 2**20


def snapshot_read_seconds(size_gb: float, mibps: int) -> float:
    """`size_gb` (decimal GB) read at `mibps` MiB/s."""
    return size_gb * 1e9 / (mibps * MIB)


def fsr_credits(snapshot_gib: int) -> int:
    """Volumes a zone's fast snapshot restore creates initialized at once (EBS User Guide, volume creation credits)."""
    return max(1, min(10, 1024 // snapshot_gib))
