"""plan.md, per Inference group: weight-load and scale-up times of a replica, with and without a warm node.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/plan/builders/serving_start.py.
"""

from __future__ import annotations

from gpufleet.facts import catalog, checkpoints, weights
from gpufleet.plan.manifests import mountpoint, prefetch
from gpufleet.spec import cold_start
from gpufleet.spec.fleet import Fleet, NodeGroup, WorkloadClass


def ready_time(fleet: Fleet, group: NodeGroup) -> weights.ReadyTime | None:
    """The group's figures as Kueue's waitForPodsReady default counts them (gpufleet.spec.cold_start: its cold node
    is cold_start.ready_seconds), with the NVMe cache where the group has one."""
    cached = mountpoint.enabled(fleet) is not None and group.local_storage == "RAID0"
    load = cold_start.serving_load(
        fleet, group, nvme_devices=catalog.local_nvme_devices(group.instance_type) if cached else 0
    )
    if load is None:
        return None
    return weights.ReadyTime(
        node_start_s=cold_start.group_seconds(fleet, group),
        image_pull_s=cold_start.pod_pull_seconds(fleet, group),
        warm_up_s=weights.WARM_UP_SECONDS,
        load=load,
    )


def weights_per_node_gb(fleet: Fleet, group: NodeGroup) -> float | None:
    """What one node of a replica on an Inference group loads (workloads.servingModelGB), else None."""
    if group.workload_class is not WorkloadClass.INFERENCE or group.name not in fleet.workloads.serving_model_gb:
        return None
    t = ready_time(fleet, group)
    return None if t is None else t.load.share_gb


MEASURED = " (measured)"


def prefetching_teams(fleet: Fleet, group: NodeGroup) -> list[str]:
    """The teams whose weights every node of the group keeps in its cache (teams[].prefetch, with the claims)."""
    return [team.name for team, on, _ in prefetch.entries(fleet) if on.name == group.name]


def expected(fleet: Fleet, group: NodeGroup, t: weights.ReadyTime) -> tuple[float, str]:
    """The time the group's next scale-up takes, and why: onto a headroom node (whole replicas of them), with the
    weights in its cache where a team prefetches them, else onto a node that starts."""
    warm = group.headroom.nodes // t.load.nodes if group.headroom else 0
    if not warm:
        return t.cold_node_s, "no warm node (no headroom)"
    teams = prefetching_teams(fleet, group)
    cached = t.warm_node_cached_s
    if teams and cached is not None:
        return cached, f"first {warm} replica(s) on headroom nodes, cache warm (prefetch: {', '.join(teams)})"
    return t.warm_node_s3_s, f"first {warm} replica(s) on headroom nodes, weights from S3"


def notes(fleet: Fleet) -> list[str]:
    d = checkpoints.duration
    rows = [
        "",
        "Scale-up time per Inference group (a new replica: weights from S3 through Mountpoint, at most one network"
        " card's rate, a ceiling a single loader may not reach; or from the node's NVMe once its Mountpoint cache"
        " holds them, at a conservative 2 GB/s per device; figures and assumptions in gpufleet/facts/weights.py;"
        " a rate marked measured is the spec's, workloads.weightLoadGBps):",
        "",
        "| group | weights (per node) | from S3 | from NVMe cache | node start | image pull | warm-up | no warm node"
        " | warm node, S3 | warm node, cache warm | next scale-up (this spec) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group in fleet.node_groups:
        if group.workload_class is not WorkloadClass.INFERENCE:
            continue
        t = ready_time(fleet, group)
        if t is None:
            continue
        given = group.name in fleet.workloads.serving_model_gb
        size = f"{t.load.model_gb:g} GB" + ("" if given else " (servingModelGB omitted)")
        if t.load.nodes > 1:
            size += f" ({t.load.share_gb:g} GB on each of {t.load.nodes} nodes)"
        nvme = t.load.from_nvme_s
        cached = t.warm_node_cached_s
        next_s, why = expected(fleet, group, t)
        rows.append(
            f"| {group.name} | {size} | {d(t.load.from_s3_s)} at {min(t.load.s3_gbps, t.load.gpu_gbps):g} GB/s"
            f"{MEASURED if t.load.s3_measured else ''} |"
            + (
                f" {d(nvme)} at {min(t.load.nvme_gbps or 0, t.load.gpu_gbps):g} GB/s"
                f"{MEASURED if t.load.nvme_measured else ''} |"
                if nvme is not None
                else " none (no RAID0 array with checkpoints.mountpoint) |"
            )
            + f" {d(t.node_start_s)} | {d(t.image_pull_s) if t.image_pull_s else 'pre-pulled'} | {d(t.warm_up_s)} |"
            f" **{d(t.cold_node_s)}** | {d(t.warm_node_s3_s)} | {d(cached) if cached is not None else '-'} |"
            f" **{d(next_s)}**: {why} |"
        )
    rows.append("")
    return rows
