"""How long a new serving replica takes to load its weights, and to be ready after a scale decision.

Why, with sources: docs/inference.md, "Design notes", gpufleet/facts/weights.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LOCAL_DEVICE_READ_GBPS = 2.0
HOST_COPY_GBPS = 10.0
WARM_UP_SECONDS = 60
DEFAULT_MODEL_GB = 100.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Load:
    model_gb: float
    nodes: int  # nodes one replica spans
    share_gb: float  # what one node loads
    s3_gbps: float
    nvme_gbps: float | None  # None: no instance-store array
    gpu_gbps: float  # the replica's GPUs on one node, host to device
    s3_measured: bool = False  # s3_gbps is the spec's measured rate, not the assumption
    nvme_measured: bool = False

    @property
    def from_s3_s(self) -> float:
        return self.share_gb / min(self.s3_gbps, self.gpu_gbps)

    @property
    def from_nvme_s(self) -> float | None:
        return None if self.nvme_gbps is None else self.share_gb / min(self.nvme_gbps, self.gpu_gbps)


def s3_gbps(network_gbps: int, network_cards: int) -> float:
    return network_gbps / max(network_cards, 1) / 8


def load(
    *,
    model_gb: float,
    replica_gpus: int,
    node_gpus: int,
    network_gbps: int,
    network_cards: int,
    nvme_devices: int,
    measured_s3_gbps: float | None = None,
    measured_nvme_gbps: float | None = None,
) -> Load:
    """`nvme_devices` 0: no cache (a measured NVMe rate then does not apply)."""
    nodes = max(1, math.ceil(replica_gpus / max(node_gpus, 1)))
    on_node = min(replica_gpus, node_gpus)
    nvme = measured_nvme_gbps if measured_nvme_gbps is not None else nvme_devices * LOCAL_DEVICE_READ_GBPS
    return Load(
        model_gb=model_gb,
        nodes=nodes,
        share_gb=model_gb / nodes,
        s3_gbps=measured_s3_gbps if measured_s3_gbps is not None else s3_gbps(network_gbps, network_cards),
        nvme_gbps=nvme if nvme_devices else None,
        gpu_gbps=on_node * HOST_COPY_GBPS,
        s3_measured=measured_s3_gbps is not None,
        nvme_measured=bool(nvme_devices) and measured_nvme_gbps is not None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadyTime:
    """Seconds from a scale decision to a ready replica."""

    node_start_s: float  # a new node until its GPUs are allocatable (with the pre-pulled image sets)
    image_pull_s: float  # the serving image, where the group pre-pulls none
    warm_up_s: float
    load: Load

    @property
    def cold_node_s(self) -> float:
        """No free node: a node starts, then the image, the weights from S3 (its cache is empty) and warm-up."""
        return self.node_start_s + self.image_pull_s + self.load.from_s3_s + self.warm_up_s

    @property
    def warm_node_s3_s(self) -> float:
        """A running node with free GPUs: image, weights from S3, warm-up."""
        return self.image_pull_s + self.load.from_s3_s + self.warm_up_s

    @property
    def warm_node_cached_s(self) -> float | None:
        """A running node whose Mountpoint cache holds the weights (another replica of the claim there)."""
        local = self.load.from_nvme_s
        return None if local is None else self.image_pull_s + local + self.warm_up_s
