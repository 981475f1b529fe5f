"""Amazon FSx for Lustre as the FSx API and user guide define it: deployment types, throughput tiers, the storage
capacities a file system may have, what a data repository association needs, and the Lustre ports. No I/O.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/facts/fsx.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

DEPLOYMENT_TYPES = ("SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
PERSISTENT = ("PERSISTENT_1", "PERSISTENT_2")
THROUGHPUT_TIERS: Mapping[str, tuple[int, ...]] = MappingProxyType(
    {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
)
# Baseline disk throughput of a scratch file system, MB/s per TiB: (read, write).
SCRATCH_DISK: Mapping[str, tuple[int, int]] = MappingProxyType({"SCRATCH_1": (200, 200), "SCRATCH_2": (200, 100)})
# The capacities below the first increment, and the increment after them, GiB.
FIRST_CAPACITIES = (1200, 2400)
CAPACITY_STEP: Mapping[str, int] = MappingProxyType(
    {"SCRATCH_1": 3600, "SCRATCH_2": 2400, "PERSISTENT_1": 2400, "PERSISTENT_2": 2400}
)
LUSTRE_VERSION = "2.15"
DRA_TYPES = ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
MAX_DATA_REPOSITORIES = 8
EVENTS = ("NEW", "CHANGED", "DELETED")
# (from port, to port) over TCP.
LUSTRE_PORTS = ((988, 988), (1018, 1023))
GIB_PER_TIB = 1024


def valid_capacity(deployment_type: str, gib: int) -> bool:
    """Whether `gib` is a storage capacity the deployment type allows."""
    return gib in FIRST_CAPACITIES or (gib > 0 and gib % CAPACITY_STEP[deployment_type] == 0)


def nearest_capacities(deployment_type: str, gib: int) -> tuple[int, int]:
    """The valid capacities just below and just above `gib` (the first one for anything under it)."""
    step = CAPACITY_STEP[deployment_type]
    valid = sorted({*FIRST_CAPACITIES, *range(step, max(gib, step) + step + 1, step)})
    below = max((c for c in valid if c <= gib), default=valid[0])
    return below, min(c for c in valid if c >= gib)


def tib(gib: int) -> float:
    return gib / GIB_PER_TIB


def write_mbps_per_tib(deployment_type: str, per_unit: int | None) -> int:
    """Baseline disk write throughput per TiB: the provisioned tier on persistent types, the fixed one on scratch."""
    if deployment_type in PERSISTENT:
        assert per_unit is not None  # rules: fsx-lustre
        return per_unit
    return SCRATCH_DISK[deployment_type][1]


def read_mbps_per_tib(deployment_type: str, per_unit: int | None) -> int:
    if deployment_type in PERSISTENT:
        assert per_unit is not None  # rules: fsx-lustre
        return per_unit
    return SCRATCH_DISK[deployment_type][0]
