"""Rules on how a group's nodes pull images (imagePull) and the gp3 volume that holds the store
(diskThroughputMiBps, diskIops): the AMI release that has parallel pull, the settings only Bottlerocket takes, the
disk parallel pull needs, and what gp3 allows.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue
from gpufleet.facts import image_pull
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet

# imagePull's tuning keys and their fields, in schema order.
_TUNING = (
    ("maxConcurrentDownloadsPerImage", "max_concurrent_downloads_per_image"),
    ("maxConcurrentUnpacksPerImage", "max_concurrent_unpacks_per_image"),
    ("concurrentDownloadChunkSize", "concurrent_download_chunk_size"),
    ("discardUnpackedLayers", "discard_unpacked_layers"),
)


@rule("image-pull")
def _image_pull(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        pull = group.image_pull
        at = path + ("imagePull",)
        bottlerocket = group.ami_type.startswith("BOTTLEROCKET")
        if pull.mode == "Parallel":
            floor = image_pull.parallel_floor(group.ami_type, group.ami_release_version)
            if floor is not None:
                what = (
                    "the SOCI snapshotter's parallel pull" if bottlerocket else "nodeadm's FastImagePull feature gate"
                )
                yield Issue(
                    path=at + ("mode",),
                    message=(
                        f"imagePull.mode Parallel needs {what}, which {floor} or later has; ami.releaseVersion"
                        f" {group.ami_release_version} is older"
                    ),
                    hint=f"pin {floor} or later in ami.releaseVersion, or set imagePull.mode: Default",
                )
            if group.data_volume_snapshot_id is not None:
                yield Issue(
                    path=at + ("mode",),
                    message=(
                        "imagePull.mode Parallel switches Bottlerocket to the soci snapshotter, which does not use the"
                        " images dataVolumeSnapshotId's snapshot holds in containerd's overlayfs store (Bottlerocket"
                        " empties both stores when the snapshotter changes)"
                    ),
                    hint="set imagePull.mode: Default, or remove dataVolumeSnapshotId",
                )
            given = group.disk_throughput_mibps
            if given is not None and given < image_pull.PARALLEL_MIN_MIBPS and defaults.store_on_ebs(group):
                yield Issue(
                    path=path + ("diskThroughputMiBps",),
                    message=(
                        f"parallel pull is slower than containerd's own pull on a volume below"
                        f" {image_pull.PARALLEL_MIN_MIBPS} MiB/s (it writes each layer to disk before unpacking it:"
                        f" nodeadm doc/examples.md); diskThroughputMiBps is {given}"
                    ),
                    hint=(
                        f"set diskThroughputMiBps: {image_pull.PARALLEL_MIN_MIBPS} or more, or imagePull.mode: Default"
                    ),
                )
        for key, field in _TUNING:
            if getattr(pull, field) is None:
                continue
            if not bottlerocket:
                yield Issue(
                    path=at + (key,),
                    at_key=True,
                    message=(
                        f"imagePull.{key} is a Bottlerocket setting; on {group.ami_type} nodeadm writes the SOCI"
                        " snapshotter's configuration itself (20 downloads and 12 unpacks per image, 16mb chunks,"
                        " unpacked layers discarded)"
                    ),
                    hint=f"remove imagePull.{key}",
                )
            elif not defaults.parallel_pull(group):
                yield Issue(
                    path=at + (key,),
                    at_key=True,
                    message=f"imagePull.{key} tunes the parallel pull, and this group pulls with containerd's own",
                    hint=f"remove imagePull.{key}, or set imagePull.mode: Parallel",
                )


@rule("gp3-volume")
def _gp3_volume(fleet: Fleet) -> Iterator[Issue]:
    """gp3 allows at most 0.25 MiB/s per provisioned IOPS (EC2 User Guide, general-purpose SSD volumes); EC2 refuses
    the launch otherwise.

    Why: docs/cold-start.md, "Design notes", image_pull._gp3_volume."""
    for path, group in each_group(fleet):
        throughput, iops = defaults.disk_throughput(group), defaults.disk_iops(group)
        if throughput > iops * image_pull.GP3_MIBPS_PER_IOPS:
            need = int(throughput / image_pull.GP3_MIBPS_PER_IOPS)
            yield Issue(
                path=path + ("diskIops",),
                at_key=True,
                message=(
                    f"gp3 gives at most {image_pull.GP3_MIBPS_PER_IOPS} MiB/s per provisioned IOPS:"
                    f" diskThroughputMiBps {throughput} needs diskIops of at least {need}, not {iops}"
                ),
                hint=f"set diskIops: {need} or more, or lower diskThroughputMiBps",
            )
