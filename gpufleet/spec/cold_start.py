"""How long an admitted workload may reasonably take to get every pod ready: the default of Kueue's
`waitForPodsReady.timeout` (admission.podsReadyTimeoutSeconds), derived from the slowest group.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/spec/cold_start.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.facts import catalog, image_pull, weights
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet, NodeGroup, WorkloadClass

NODE_READY_SECONDS = 180
OPERANDS_SECONDS = 180
WARM_RESUME_SECONDS = 60
MARGIN = 1.5


@dataclass(frozen=True, slots=True, kw_only=True)
class Pull:
    """What a new node of a group pulls, and how fast."""

    size_gb: float
    size_measured: bool  # every image set of the group gives imageSets[].sizeGB
    gbps: float
    gbps_measured: bool  # workloads.imagePullGBps names the group
    prepulled: bool  # the group pre-pulls image sets at boot; else a pod pulls its own image
    parallel: bool = False  # imagePull.mode Parallel (the SOCI snapshotter's parallel pull)
    disk_mibps: int | None = None  # the EBS volume's throughput where it holds the store; None: the RAID0 array

    @property
    def seconds(self) -> float:
        return image_pull.seconds(self.size_gb, self.gbps)


def pull(fleet: Fleet, group: NodeGroup) -> Pull:
    """The group's image sets (each by its sizeGB, else ASSUMED_IMAGE_GB per image), else the one image a pod pulls."""
    sets = [s for s in fleet.image_sets if s.name in group.images]
    measured_gbps = fleet.workloads.image_pull_gbps.get(group.name)
    parallel = defaults.parallel_pull(group)
    disk = defaults.disk_throughput(group) if defaults.store_on_ebs(group) else None
    bottlerocket = group.ami_type.startswith("BOTTLEROCKET")
    return Pull(
        size_gb=sum(s.size_gb if s.size_gb is not None else len(s.images) * image_pull.ASSUMED_IMAGE_GB for s in sets)
        if sets
        else image_pull.ASSUMED_IMAGE_GB,
        size_measured=bool(sets) and all(s.size_gb is not None for s in sets),
        gbps=measured_gbps if measured_gbps is not None else image_pull.assumed_gbps(parallel, bottlerocket, disk),
        gbps_measured=measured_gbps is not None,
        prepulled=bool(sets),
        parallel=parallel,
        disk_mibps=disk,
    )


def group_seconds(fleet: Fleet, group: NodeGroup) -> float:
    """Estimated seconds from a scale-up to a new node of this group with its GPUs allocatable (and its pre-pulled
    image sets on its disk)."""
    p = pull(fleet, group)
    return NODE_READY_SECONDS + (p.seconds if p.prepulled else 0) + OPERANDS_SECONDS


def pod_pull_seconds(fleet: Fleet, group: NodeGroup) -> float:
    """The image pull a pod does itself on a new node: none where the group pre-pulls image sets."""
    p = pull(fleet, group)
    return 0 if p.prepulled else p.seconds


def serving_load(fleet: Fleet, group: NodeGroup, nvme_devices: int = 0) -> weights.Load | None:
    """What a serving replica's node of the group loads, and at which rates (None: an instance type the catalog does
    not know, which validate refuses); `nvme_devices` 0: from S3 only (a new node's cache is empty)."""
    info = catalog.lookup(group.instance_type)
    if info is None:
        return None
    measured = fleet.workloads.weight_load_gbps.get(group.name)
    return weights.load(
        model_gb=fleet.workloads.serving_model_gb.get(group.name, weights.DEFAULT_MODEL_GB),
        replica_gpus=fleet.workloads.inference_replica_gpus.get(group.name, 1),
        node_gpus=info.gpu_count,
        network_gbps=info.network_gbps,
        network_cards=info.network_cards,
        nvme_devices=nvme_devices,
        measured_s3_gbps=measured.s3 if measured else None,
        measured_nvme_gbps=measured.nvme if measured else None,
    )


def ready_seconds(fleet: Fleet, group: NodeGroup) -> float:
    """Estimated seconds from a scale-up to a pod of the group Ready on a new node: the node, the pod's own pull and,
    on an Inference group, the weights from S3 and the warm-up (plan.md's "cold" figure)."""
    out: float = group_seconds(fleet, group) + pod_pull_seconds(fleet, group)
    load = serving_load(fleet, group) if group.workload_class is WorkloadClass.INFERENCE else None
    if load is not None:
        out += load.from_s3_s + weights.WARM_UP_SECONDS
    return out


def default_timeout_seconds(fleet: Fleet) -> tuple[int, str]:
    """The derived default and the group it comes from."""
    # A MultiKueue manager runs no GPU group: its workloads start on the workers, whose slowest group it waits for.
    fleet = fleet.queued if fleet.multikueue is not None else fleet
    slowest = max(fleet.node_groups, key=lambda g: ready_seconds(fleet, g))
    return 60 * math.ceil(ready_seconds(fleet, slowest) * MARGIN / 60), slowest.name


def pods_ready_timeout_seconds(fleet: Fleet) -> int:
    """The spec's admission.podsReadyTimeoutSeconds, else the derived default."""
    given = fleet.admission.pods_ready_timeout_seconds
    return given if given is not None else default_timeout_seconds(fleet)[0]
