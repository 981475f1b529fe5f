"""plan.md, per GPU group: the time from a scale decision to a pod Ready, by the path the pod's node takes (a cold
node, a warm-pool instance, a headroom node, a node whose data volume comes from a snapshot of the images), each
figure marked measured (the spec's) or assumed, with its source.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/builders/scale_up.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.facts import catalog, image_pull, weights
from gpufleet.facts.checkpoints import duration
from gpufleet.plan.builders import serving_start
from gpufleet.spec import cold_start, defaults
from gpufleet.spec.fleet import Fleet, NodeGroup, WorkloadClass


@dataclass(frozen=True, slots=True, kw_only=True)
class Paths:
    """One group's figures, in seconds; None: the group does not have the path."""

    node_start_s: float  # launch, boot, join and the GPU Operator's operands (assumed)
    pull: cold_start.Pull
    weight_s: float | None  # Inference: a replica's weights from S3 (an empty cache); else None
    weight_measured: bool
    warm_up_s: float  # Inference: weights.WARM_UP_SECONDS; else 0
    cold_s: float
    warm_pool_s: float | None
    headroom_s: float | None
    snapshot_s: float | None


def paths(fleet: Fleet, group: NodeGroup) -> Paths:
    p = cold_start.pull(fleet, group)
    t = serving_start.ready_time(fleet, group) if group.workload_class is WorkloadClass.INFERENCE else None
    weight = t.load.from_s3_s if t is not None else None
    warm_up = float(weights.WARM_UP_SECONDS) if t is not None else 0.0
    after_node = (weight or 0.0) + warm_up
    node = float(cold_start.NODE_READY_SECONDS + cold_start.OPERANDS_SECONDS)
    warm_pool = None
    if group.warm_pool is not None and group.warm_pool.min_size > 0:
        # A Stopped or Hibernated instance keeps its EBS root volume and the images on it; instance store is lost at
        # every stop, so with RAID0 it pulls them again (docs/stage-1.md). Its Mountpoint cache is on that array.
        again = group.local_storage == "RAID0" or not p.prepulled
        warm_pool = cold_start.WARM_RESUME_SECONDS + cold_start.OPERANDS_SECONDS + (p.seconds if again else 0.0)
        warm_pool += after_node
    headroom = None
    if group.headroom is not None:
        # A headroom node is Ready with its pre-pulled images; where a team prefetches the weights, its cache holds
        # them (serving_start.expected).
        if t is not None:
            headroom = serving_start.expected(fleet, group, t)[0] if group.headroom.nodes >= t.load.nodes else None
        else:
            headroom = 0.0 if p.prepulled else p.seconds
    snapshot = None
    read = snapshot_read(group)
    if read is not None:
        # Bottlerocket's data volume restored from a snapshot of the images: nothing to pull, the images read once at
        # the rate the restored volume has (gpufleet.facts.image_pull.snapshot_read_seconds).
        snapshot = node + image_pull.snapshot_read_seconds(p.size_gb, read[0]) + after_node
    return Paths(
        node_start_s=node,
        pull=p,
        weight_s=weight,
        weight_measured=t is not None and t.load.s3_measured,
        warm_up_s=warm_up,
        cold_s=node + p.seconds + after_node,
        warm_pool_s=warm_pool,
        headroom_s=headroom,
        snapshot_s=snapshot,
    )


def snapshot_read(group: NodeGroup) -> tuple[int, str] | None:
    """The MiB/s a data volume restored from the group's snapshot reads its images at, and what it stands for; None
    without dataVolumeSnapshotId."""
    if group.data_volume_snapshot_id is None:
        return None
    init = group.snapshot_initialization
    mode = "Default" if init is None else init.mode
    if mode == "ProvisionedRate" and init is not None and init.volume_initialization_rate is not None:
        return init.volume_initialization_rate, "provisioned rate, spec"
    if mode == "FastSnapshotRestore":
        return defaults.disk_throughput(group), "fast snapshot restore: gp3 throughput, assumed"
    return image_pull.LAZY_LOAD_MIBPS, "lazy load from S3, assumed"


def _mark(measured: bool) -> str:
    return " (measured)" if measured else " (assumed)"


def _rate(group: NodeGroup, p: cold_start.Pull) -> str:
    """The pull rate and what it stands for: measured (workloads.imagePullGBps), or assumed by pull mode, AMI family
    and the disk that holds the store."""
    if p.gbps_measured:
        return f"{p.gbps:.3g} GB/s (measured)"
    family = "Bottlerocket" if group.ami_type.startswith("BOTTLEROCKET") else "AL2023"
    mode = f"parallel, {family}" if p.parallel else "containerd"
    disk = "RAID0 array" if p.disk_mibps is None else f"gp3 {p.disk_mibps} MiB/s"
    return f"{p.gbps:.3g} GB/s (assumed: {mode}, {disk})"


def row(group: NodeGroup, f: Paths) -> str:
    p = f.pull
    images = f"{p.size_gb:.4g} GB{_mark(p.size_measured)}" + ("" if p.prepulled else ", the pod's own pull")
    weight = "-" if f.weight_s is None else f"{duration(f.weight_s)}{_mark(f.weight_measured)}"
    warm_up = "-" if not f.warm_up_s else f"{duration(f.warm_up_s)} (assumed)"
    return (
        f"| {group.name} | {images} | {_rate(group, p)} |"
        f" {duration(f.node_start_s)} (assumed) | {duration(p.seconds)} | {weight} | {warm_up} |"
        f" **{duration(f.cold_s)}** |"
        f" {duration(f.warm_pool_s) if f.warm_pool_s is not None else 'no warm pool'} |"
        f" {duration(f.headroom_s) if f.headroom_s is not None else 'no headroom'} |"
        f" {_snapshot_cell(group, f)} |"
    )


def _snapshot_cell(group: NodeGroup, f: Paths) -> str:
    read = snapshot_read(group)
    if f.snapshot_s is None or read is None:
        return "not configured"
    return f"{duration(f.snapshot_s)} (images at {read[0]} MiB/s, {read[1]})"


def notes(fleet: Fleet) -> list[str]:
    groups = [g for g in fleet.node_groups if (info := catalog.lookup(g.instance_type)) and info.gpu_count]
    if not groups:
        return []
    return [
        "",
        "Scale-up time per GPU group, from a scale decision to a pod Ready (Kueue's waitForPodsReady default is the"
        " slowest cold figure x1.5). Assumed: node start (EC2 launch, boot and join"
        f" {cold_start.NODE_READY_SECONDS} s, the GPU Operator's operands {cold_start.OPERANDS_SECONDS} s); an image"
        f" set's size where it gives no imageSets[].sizeGB ({image_pull.ASSUMED_IMAGE_GB:.4g} GB per image) and the"
        " pull rate where workloads.imagePullGBps does not name the group, by imagePull.mode"
        f" ({image_pull.MEASURED_IMAGE_GB:.2f} GB on gp3 at {image_pull.MEASURED_DISK_MIBPS:,} MiB/s,"
        f" {image_pull.SOURCE}:"
        f" containerd's own pull {image_pull.CONTAINERD_GBPS:.3g} GB/s in {image_pull.CONTAINERD_SECONDS:g} s, parallel"
        f" pull {image_pull.SOCI_AL2023_GBPS:.3g} GB/s on AL2023 in {image_pull.SOCI_AL2023_SECONDS:g} s and"
        f" {image_pull.SOCI_BOTTLEROCKET_GBPS:.3g} GB/s on Bottlerocket in {image_pull.SOCI_BOTTLEROCKET_SECONDS:g} s),"
        " at most the throughput of the gp3 volume holding the store (diskThroughputMiBps; an upper bound below"
        f" {image_pull.MEASURED_DISK_MIBPS:,} MiB/s, not a measurement); the weight load and"
        " warm-up of an Inference group as in its table (gpufleet/facts/weights.py; measured where"
        " workloads.weightLoadGBps gives the rate). A warm-pool instance resumes in"
        f" {cold_start.WARM_RESUME_SECONDS} s and pulls again only with RAID0; a headroom node is Ready with its"
        " images; a snapshot path needs a Bottlerocket data-volume snapshot (dataVolumeSnapshotId): nothing to pull,"
        " the images read once at the restored volume's rate (an upper bound: a container reads only what it opens):"
        " snapshotInitialization's volumeInitializationRate (ProvisionedRate), the gp3 throughput (FastSnapshotRestore,"
        " fully initialized at creation while the zone has fast snapshot restore credits), else EBS's lazy load from"
        f" S3 on first read, whose rate AWS does not publish ({image_pull.LAZY_LOAD_MIBPS} MiB/s assumed).",
        "",
        "| group | images | pull rate | node start | image pull | weight load | warm-up | cold | warm pool"
        " | headroom node | snapshot |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(row(g, paths(fleet, g)) for g in groups),
    ]
