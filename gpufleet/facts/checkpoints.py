"""Checkpoint sizing: bytes, write times and Daly's interval. Pure arithmetic, no I/O.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/facts/checkpoints.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GB = 10**9
TB = 10**12
DEFAULT_BYTES_PER_PARAMETER = 16


def checkpoint_bytes(parameters: int, bytes_per_parameter: int = DEFAULT_BYTES_PER_PARAMETER) -> int:
    """Bytes of one full checkpoint (model weights and optimizer state)."""
    return parameters * bytes_per_parameter


def write_seconds(nbytes: int, gbps_per_node: float, nodes: int = 1) -> float:
    """Seconds to write `nbytes` at `gbps_per_node` GB/s on each of `nodes` nodes writing in parallel."""
    return nbytes / (gbps_per_node * GB * nodes)


def young_seconds(write_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum interval sqrt(2 x C x MTBF), in seconds (CACM 17(9), 1974)."""
    return math.sqrt(2.0 * write_s * mtbf_s)


def daly_seconds(write_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum compute time between checkpoints (FGCS 22(3), 2006), in seconds."""
    if write_s >= 2.0 * mtbf_s:
        return mtbf_s
    ratio = write_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * write_s * mtbf_s) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - write_s


def waste_fraction(interval_s: float, write_s: float, mtbf_s: float) -> float:
    """Expected share of wall time lost to checkpoint writes and to rework after failures (Daly's exponential
    model, restart time 0): 1 - T / (M (e^((T + C) / M) - 1))."""
    return 1.0 - interval_s / (mtbf_s * math.expm1((interval_s + write_s) / mtbf_s))


# Above this expected loss plan.md warns: a tenth of the GPU-hours is lost to checkpointing and rework.
LARGE_LOSS = 0.10


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizing:
    """One job's checkpoint numbers (all times in seconds; bandwidths per node, GB/s)."""

    checkpoint_bytes: int
    writer_nodes: int
    local_gbps: float  # the node's RAID0 array: devices x per-device bandwidth
    bucket_gbps: float
    host_copy_gbps: float | None  # the GPU-to-host copy of an asynchronous save; None: synchronous
    local_write_s: float | None  # None when the job's group does not stage checkpoints on local NVMe
    bucket_write_s: float
    mtbf_s: float
    configured_interval_s: float | None

    @property
    def host_copy_s(self) -> float | None:
        if self.host_copy_gbps is None:
            return None
        return write_seconds(self.checkpoint_bytes, self.host_copy_gbps, self.writer_nodes)

    @property
    def blocking_write_s(self) -> float:
        """C: the part of a save training waits for (the host copy of an async save, else the local NVMe write
        when staged, else the bucket write)."""
        if (copy := self.host_copy_s) is not None:
            return copy
        return self.local_write_s if self.local_write_s is not None else self.bucket_write_s

    @property
    def blocking_what(self) -> str:
        if self.host_copy_gbps is not None:
            return "the GPU-to-host copy of an asynchronous save"
        return "node-local NVMe" if self.local_write_s is not None else "the bucket"

    @property
    def young_s(self) -> float:
        return young_seconds(self.blocking_write_s, self.mtbf_s)

    @property
    def daly_s(self) -> float:
        return daly_seconds(self.blocking_write_s, self.mtbf_s)

    @property
    def recommended_interval_s(self) -> float:
        return max(self.daly_s, self.bucket_write_s)

    @property
    def interval_s(self) -> float:
        """The interval the job runs with: the configured one, else the recommended one."""
        return self.configured_interval_s if self.configured_interval_s is not None else self.recommended_interval_s

    @property
    def waste(self) -> float:
        return waste_fraction(self.interval_s, self.blocking_write_s, self.mtbf_s)

    @property
    def shard_bytes(self) -> int:
        """Bytes each writer node holds of one checkpoint."""
        return math.ceil(self.checkpoint_bytes / self.writer_nodes)


def sizing(
    *,
    parameters: int,
    bytes_per_parameter: int,
    mtbf_hours: float,
    local_gbps: float,
    bucket_gbps: float,
    writer_nodes: int,
    staged: bool,
    host_copy_gbps: float | None = None,
    interval_minutes: float | None = None,
) -> Sizing:
    """The checkpoint numbers; `staged` when checkpoints are written to node-local NVMe first, `host_copy_gbps`
    (per node) when saves are asynchronous."""
    nbytes = checkpoint_bytes(parameters, bytes_per_parameter)
    return Sizing(
        checkpoint_bytes=nbytes,
        writer_nodes=writer_nodes,
        local_gbps=local_gbps,
        bucket_gbps=bucket_gbps,
        host_copy_gbps=host_copy_gbps,
        local_write_s=write_seconds(nbytes, local_gbps, writer_nodes) if staged else None,
        bucket_write_s=write_seconds(nbytes, bucket_gbps, writer_nodes),
        mtbf_s=mtbf_hours * 3600.0,
        configured_interval_s=None if interval_minutes is None else interval_minutes * 60.0,
    )


def interval_warnings(s: Sizing, field: str = "checkpoints.intervalMinutes") -> list[str]:
    """Problems with a configured interval: shorter than a checkpoint takes to write."""
    if s.configured_interval_s is None:
        return []
    interval = duration(s.configured_interval_s)
    if s.configured_interval_s < s.blocking_write_s:
        return [
            f"{field} ({interval}) is shorter than {_writing(s)} ({duration(s.blocking_write_s)}): the job would do"
            f" nothing but checkpoint; Daly's interval is {duration(s.daly_s)}"
        ]
    if s.configured_interval_s < s.bucket_write_s:
        return [
            f"{field} ({interval}) is shorter than uploading one checkpoint to the bucket "
            f"({duration(s.bucket_write_s)}): uploads queue up and the newest durable checkpoint falls further behind; "
            f"use at least {duration(s.recommended_interval_s)}"
        ]
    return []


def _writing(s: Sizing) -> str:
    if s.host_copy_gbps is not None:
        return "copying one checkpoint shard from GPU to host memory"
    return f"writing one checkpoint to {s.blocking_what}"


def loss_warnings(s: Sizing, who: str) -> list[str]:
    """A warning when the expected loss at the interval in use is LARGE_LOSS or more, with what lowers it."""
    if s.waste < LARGE_LOSS:
        return []
    fixes = []
    if s.host_copy_gbps is None:
        fixes.append("save asynchronously (checkpoints.save: Asynchronous)")
    if s.writer_nodes == 1:
        fixes.append("write shards from every node of the job (checkpoints.writerNodes)")
    if s.local_write_s is None and s.host_copy_gbps is None:
        fixes.append("stage on a RAID0 NVMe group (localStorage: RAID0)")
    fixes.append("measure and set the write bandwidths")
    return [
        f"{who}: about {s.waste:.0%} of the time would be lost to checkpointing and rework (blocking write"
        f" {duration(s.blocking_write_s)}, {s.blocking_what}; interval {duration(s.interval_s)}, MTBF"
        f" {duration(s.mtbf_s)}): " + ", ".join(fixes)
    ]


def human_bytes(nbytes: int) -> str:
    """Decimal units, three significant digits: 112 GB, 1.12 TB."""
    for unit, size in (("PB", 10**15), ("TB", TB), ("GB", GB), ("MB", 10**6)):
        if nbytes >= size:
            value = nbytes / size
            return f"{value:.3g} {unit}"
    return f"{nbytes} B"


def duration(seconds: float) -> str:
    """45 s, 9.3 min, 82.0 min, 2.5 h: minutes up to 100 (intervals are set in minutes), then hours."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 6000:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
