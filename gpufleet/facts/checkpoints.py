"""Checkpoint sizing: bytes, write times and the Young/Daly interval. Pure arithmetic, no I/O.

The model (docs/network-and-storage.md, "Checkpoint sizing"):

* Size. Mixed-precision Adam holds 16 bytes per parameter: fp16/bf16 weights (2) and gradients (2), fp32
  master weights, momentum and variance (4 + 4 + 4) (ZeRO, Rajbhandari et al. 2020, section 3.1). A
  checkpoint usually drops the gradients (14), so 16 is a safe upper bound. 7e9 parameters -> 112 GB, 7e10 ->
  1.12 TB. Units are decimal (GB = 1e9 bytes), like network and disk bandwidth.
* Write time = bytes / (per-node bandwidth x nodes writing shards in parallel), for node-local NVMe and for
  the bucket. The bandwidths are spec fields with documented defaults (schemas/fleet.schema.json).
* The blocking write C is what stops training: the local NVMe write when the fleet stages checkpoints on a
  RAID0 group (the upload to the bucket runs in the background), else the bucket write.
* Young's first-order optimum interval T = sqrt(2 x C x MTBF) (J. W. Young, CACM 17(9), 1974; Daly's
  refinement, FGCS 22(3), 2006, agrees to first order while C << MTBF). The interval is never shorter than
  the bucket write: otherwise the next checkpoint starts before the previous one is durable.
* Expected waste fraction ~ C / T + T / (2 x MTBF): checkpoint cost per interval plus half an interval of
  lost work per failure.
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


def young_daly_seconds(write_s: float, mtbf_s: float) -> float:
    """The optimum checkpoint interval sqrt(2 x C x MTBF), in seconds."""
    return math.sqrt(2.0 * write_s * mtbf_s)


def waste_fraction(interval_s: float, write_s: float, mtbf_s: float) -> float:
    """First-order expected share of time lost to checkpointing and to rework after failures."""
    return write_s / interval_s + interval_s / (2.0 * mtbf_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizing:
    """One fleet's checkpoint numbers (all times in seconds)."""

    checkpoint_bytes: int
    writer_nodes: int
    local_gbps: float
    bucket_gbps: float
    local_write_s: float | None  # None when no group stages checkpoints on local NVMe
    bucket_write_s: float
    mtbf_s: float
    configured_interval_s: float | None

    @property
    def blocking_write_s(self) -> float:
        """C: the write training waits for (local NVMe when staged, else the bucket)."""
        return self.local_write_s if self.local_write_s is not None else self.bucket_write_s

    @property
    def young_daly_s(self) -> float:
        return young_daly_seconds(self.blocking_write_s, self.mtbf_s)

    @property
    def recommended_interval_s(self) -> float:
        return max(self.young_daly_s, self.bucket_write_s)

    @property
    def interval_s(self) -> float:
        """The interval the fleet runs with: the configured one, else the recommended one."""
        return self.configured_interval_s if self.configured_interval_s is not None else self.recommended_interval_s

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
    interval_minutes: float | None = None,
) -> Sizing:
    """The checkpoint numbers; `staged` when checkpoints are written to node-local NVMe first."""
    nbytes = checkpoint_bytes(parameters, bytes_per_parameter)
    return Sizing(
        checkpoint_bytes=nbytes,
        writer_nodes=writer_nodes,
        local_gbps=local_gbps,
        bucket_gbps=bucket_gbps,
        local_write_s=write_seconds(nbytes, local_gbps, writer_nodes) if staged else None,
        bucket_write_s=write_seconds(nbytes, bucket_gbps, writer_nodes),
        mtbf_s=mtbf_hours * 3600.0,
        configured_interval_s=None if interval_minutes is None else interval_minutes * 60.0,
    )


def interval_warnings(s: Sizing) -> list[str]:
    """Problems with a configured interval: shorter than a checkpoint takes to write."""
    if s.configured_interval_s is None:
        return []
    interval = duration(s.configured_interval_s)
    if s.configured_interval_s < s.blocking_write_s:
        where = "node-local NVMe" if s.local_write_s is not None else "the bucket"
        return [
            f"checkpoints.intervalMinutes ({interval}) is shorter than writing one checkpoint to {where}"
            f" ({duration(s.blocking_write_s)}): the job would do nothing but checkpoint; the Young/Daly interval is"
            f" {duration(s.young_daly_s)}"
        ]
    if s.configured_interval_s < s.bucket_write_s:
        return [
            f"checkpoints.intervalMinutes ({interval}) is shorter than uploading one checkpoint to the bucket "
            f"({duration(s.bucket_write_s)}): uploads queue up and the newest durable checkpoint falls further behind; "
            f"use at least {duration(s.recommended_interval_s)}"
        ]
    return []


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
