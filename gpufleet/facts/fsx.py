"""Amazon FSx for Lustre as the FSx API and user guide define it: deployment types, throughput tiers, the storage
capacities a file system may have, what a data repository association needs, and the Lustre ports. No I/O.

- Deployment types: the FSx API's LustreDeploymentType, `SCRATCH_1 | SCRATCH_2 | PERSISTENT_1 | PERSISTENT_2`
  (API_CreateFileSystemLustreConfiguration; pulumi-aws 7.51.1 `fsx.LustreFileSystem` deployment_type). SSD storage
  only here (HDD exists only for PERSISTENT_1, Intelligent-Tiering only for PERSISTENT_2 with a throughput capacity).
- PerUnitStorageThroughput, MB/s per TiB: PERSISTENT_1 SSD 50, 100, 200; PERSISTENT_2 SSD 125, 250, 500, 1000
  (FSx for Lustre user guide, managing-throughput-capacity.html; the pulumi-aws argument's doc); required for the
  persistent types and not accepted for the scratch ones. Scratch file systems have a fixed baseline: 200 MB/s/TiB
  of disk read and 100 of disk write on SCRATCH_2, 200 on SCRATCH_1 (user guide, ssd-storage.html "File system
  performance for SSD storage options"; performance.html for SCRATCH_1).
- StorageCapacity, GiB (API_CreateFileSystem StorageCapacity): SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 on SSD
  1200, 2400, then increments of 2400; SCRATCH_1 1200, 2400, then increments of 3600.
- Data repository associations (API_CreateDataRepositoryAssociation): "supported on all FSx for Lustre 2.12 and 2.15
  file systems, excluding scratch_1"; at most 8 per file system; each links one file system directory and one S3
  bucket or prefix, unique on both sides. The file system's Lustre version must then be 2.12 or 2.15: the API's
  default is 2.10 except for PERSISTENT_2 (aws-cdk-lib aws_fsx LustreFileSystemProps fileSystemTypeVersion), so
  gpufleet always sets 2.15, which every deployment type accepts (pulumi-aws file_system_type_version).
  Auto-import and auto-export events: `NEW`, `CHANGED`, `DELETED` (DataRepositoryAssociation S3 AutoImportPolicy and
  AutoExportPolicy `Events`).
- Ports: Lustre clients and servers talk over TCP 988 and 1018-1023; the file system's security group must allow
  them in from itself (server to server) and from the clients' security groups, and the clients' group from the
  file system's (FSx for Lustre user guide, limit-access-security-groups.html).
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
