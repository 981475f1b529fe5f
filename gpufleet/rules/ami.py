"""Rules on a node group's AMI: the architecture and Kubernetes minor of its release, where the NVIDIA driver comes
from, and Bottlerocket's image-cache snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue
from gpufleet.facts import ami_releases, catalog
from gpufleet.facts.versions import GPU_OPERATOR
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec.fleet import Fleet


@rule("data-volume-snapshot")
def _data_volume_snapshot(fleet: Fleet) -> Iterator[Issue]:
    """dataVolumeSnapshotId: Bottlerocket's boot-time image cache, its data volume created from a snapshot that holds
    the images (aws-samples/bottlerocket-images-cache).

    Why: docs/stage-1.md, "Design notes", ami._data_volume_snapshot."""
    for path, group in each_group(fleet):
        if group.data_volume_snapshot_id is None:
            continue
        at = path + ("dataVolumeSnapshotId",)
        if not ami_releases.is_bottlerocket(group.ami_type):
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    f"dataVolumeSnapshotId is a Bottlerocket data volume's; {group.ami_type} keeps its images on the"
                    " root volume and pulls the group's images at boot from its user data"
                ),
                hint="remove dataVolumeSnapshotId",
            )
        elif group.local_storage == "RAID0":
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    "with localStorage RAID0 Bottlerocket bind-mounts the instance-store array over /var/lib/containerd"
                    " (apiclient ephemeral-storage bind), hiding the images the snapshot put on the data volume"
                ),
                hint="remove dataVolumeSnapshotId, or set localStorage: None",
            )


@rule("snapshot-initialization")
def _snapshot_initialization(fleet: Fleet) -> Iterator[Issue]:
    """snapshotInitialization: each mode's setting, on a Bottlerocket volume restored from a snapshot.
    Why: docs/stage-1.md, "Design notes", ami._snapshot_initialization."""
    for path, group in each_group(fleet):
        init = group.snapshot_initialization
        if init is None:
            continue
        at = path + ("snapshotInitialization",)
        if not ami_releases.is_bottlerocket(group.ami_type):
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    "snapshotInitialization initializes a Bottlerocket data volume restored from dataVolumeSnapshotId;"
                    f" {group.ami_type} creates its volumes empty, which need no initialization"
                ),
                hint="remove snapshotInitialization",
            )
            continue
        if group.data_volume_snapshot_id is None:
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    "snapshotInitialization says how a volume restored from a snapshot is initialized, but this group"
                    " restores none: without dataVolumeSnapshotId its data volume is created empty"
                ),
                hint="remove snapshotInitialization, or set dataVolumeSnapshotId",
            )
            continue
        rate, zones = init.volume_initialization_rate, init.availability_zones
        if init.mode == "ProvisionedRate" and rate is None:
            yield Issue(
                path=at + ("mode",),
                message=(
                    "mode ProvisionedRate needs volumeInitializationRate: the rate, 100 to 300 MiB/s, at which EBS"
                    " downloads the snapshot's blocks to the new volume"
                ),
                hint="set volumeInitializationRate: 300",
            )
        if init.mode != "ProvisionedRate" and rate is not None:
            why = (
                "a rate on a volume whose snapshot has fast snapshot restore overrides it: EBS initializes the volume"
                " at that rate instead"
                if init.mode == "FastSnapshotRestore"
                else "mode Default loads the blocks lazily from S3 on first read"
            )
            yield Issue(
                path=at + ("volumeInitializationRate",),
                at_key=True,
                message=f"volumeInitializationRate is mode ProvisionedRate's; {why}",
                hint="remove volumeInitializationRate, or set mode: ProvisionedRate",
            )
        if init.mode == "FastSnapshotRestore" and zones is None:
            yield Issue(
                path=at + ("mode",),
                message=(
                    "mode FastSnapshotRestore needs availabilityZones: fast snapshot restore is enabled per"
                    " Availability Zone, in the zones of the group's subnets, which gpufleet cannot read offline"
                ),
                hint="set availabilityZones: the zone names of the group's subnets, e.g. [us-east-1a]",
            )
        if init.mode != "FastSnapshotRestore" and zones is not None:
            yield Issue(
                path=at + ("availabilityZones",),
                at_key=True,
                message=f"availabilityZones is mode FastSnapshotRestore's; mode {init.mode} enables nothing per zone",
                hint="remove availabilityZones, or set mode: FastSnapshotRestore",
            )
        for i, zone in enumerate(zones or ()):
            # A zone name is its region's name and a letter (us-east-1a); FastSnapshotRestore takes zone names.
            if zone[:-1] != fleet.cluster.region:
                yield Issue(
                    path=at + ("availabilityZones", i),
                    message=f"{zone} is not a zone of the cluster's region {fleet.cluster.region}",
                    hint=f"use a zone of {fleet.cluster.region}, such as {fleet.cluster.region}a",
                )


@rule("ami")
def _ami(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        info = catalog.lookup(group.instance_type)
        if info is not None:
            arm = "_ARM_64_" in group.ami_type
            if arm != (info.architecture == "arm64"):
                other = (
                    group.ami_type.replace("ARM_64", "x86_64") if arm else group.ami_type.replace("x86_64", "ARM_64")
                )
                yield Issue(
                    path=path + ("ami", "type"),
                    message=(
                        f"{group.ami_type} is an {'arm64' if arm else 'x86_64'} AMI, but {group.instance_type} is"
                        f" {info.architecture}"
                    ),
                    hint=f"use type: {other}",
                )
        found = ami_releases.check(group.ami_type, group.ami_release_version, fleet.cluster.kubernetes_version)
        if found is not None:
            yield Issue(
                path=path + ("ami", "releaseVersion"), severity=found.severity, message=found.message, hint=found.hint
            )


@rule("driver-source-matches-ami")
def _driver_source(fleet: Fleet) -> Iterator[Issue]:
    operator = fleet.versions.driver_source == "Operator"
    release = GPU_OPERATOR.get(fleet.versions.gpu_operator)
    if (
        fleet.versions.gdrcopy == "Enabled"
        and not operator
        and release is not None
        and release.gdrcopy_needs_operator_driver
    ):
        hint = "set source: Operator (its driver DaemonSet loads gdrdrv), or gdrCopy: Disabled"
        if release.device_plugin_detects_gdrdrv:
            hint += "; a node that loads gdrdrv itself gets GDRCopy from the device plugin without this setting"
        yield Issue(
            path=("versions", "driver", "gdrCopy"),
            message=(
                f"GPU Operator {fleet.versions.gpu_operator} loads gdrdrv only beside the driver it installs, and with"
                " source Preinstalled it installs none (the EKS NVIDIA AMI ships no gdrdrv)"
            ),
            hint=hint,
        )
    for path, group in each_group(fleet):
        nvidia_ami = group.ami_type.endswith("_NVIDIA")
        if operator and nvidia_ami:
            yield Issue(
                path=path + ("ami", "type"),
                message=f"{group.ami_type} ships its own NVIDIA driver, but versions.driver.source is Operator",
                hint=(
                    f"use {'AL2023_ARM_64_STANDARD' if '_ARM_64_' in group.ami_type else 'AL2023_x86_64_STANDARD'} (the"
                    " operator installs the driver), or driver source Preinstalled"
                ),
            )
        if not operator and not nvidia_ami:
            yield Issue(
                path=path + ("ami", "type"),
                message=f"{group.ami_type} has no NVIDIA driver, but versions.driver.source is Preinstalled",
                hint="use an *_NVIDIA AMI type, or set versions.driver.source: Operator with a pinned version",
            )
