"""A dated on-demand price table for the catalog's GPU instance types, for the cost estimate in plan.md.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/facts/pricing.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpufleet.facts import catalog

PRICES_AS_OF = "2025-08-01"
HOURS_PER_MONTH = 730  # AWS's own convention for monthly estimates
GP3_USD_PER_GB_MONTH = 0.08
GP3_USD_PER_IOPS_MONTH = 0.005  # above GP3_INCLUDED_IOPS
GP3_USD_PER_MIBPS_MONTH = 0.04  # above GP3_INCLUDED_MIBPS
GP3_INCLUDED_IOPS = 3000
GP3_INCLUDED_MIBPS = 125
FSR_USD_PER_DSU_HOUR = 0.75  # per snapshot per Availability Zone, while enabled
S3_STANDARD_USD_PER_GB_MONTH = 0.023
# (deployment type, MB/s/TiB or None for scratch) -> USD per GB-month, us-east-1
FSX_LUSTRE_USD_PER_GB_MONTH: Mapping[tuple[str, int | None], float] = MappingProxyType(
    {
        ("SCRATCH_1", None): 0.140,
        ("SCRATCH_2", None): 0.140,
        ("PERSISTENT_1", 50): 0.145,
        ("PERSISTENT_1", 100): 0.210,
        ("PERSISTENT_1", 200): 0.290,
        ("PERSISTENT_2", 125): 0.145,
        ("PERSISTENT_2", 250): 0.210,
        ("PERSISTENT_2", 500): 0.340,
        ("PERSISTENT_2", 1000): 0.600,
    }
)

# The deepest Spot discount AWS states (https://aws.amazon.com/ec2/spot/, "up to a 90% discount"); the Spot price
# never exceeds the On-Demand rate without a maximum price (the module docstring).
SPOT_MAX_DISCOUNT = 0.90

ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType(
    {
        "g4dn.xlarge": 0.526, "g4dn.2xlarge": 0.752, "g4dn.4xlarge": 1.204, "g4dn.8xlarge": 2.176,
        "g4dn.12xlarge": 3.912, "g4dn.16xlarge": 4.352, "g4dn.metal": 7.824,
        "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448,
        "g5.12xlarge": 5.672, "g5.16xlarge": 4.096, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288,
        "g5g.xlarge": 0.42, "g5g.2xlarge": 0.556, "g5g.4xlarge": 0.828, "g5g.8xlarge": 1.372,
        "g5g.16xlarge": 2.744, "g5g.metal": 2.744,
        "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144,
        "g6.12xlarge": 4.6016, "g6.16xlarge": 3.3968, "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504,
        "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208, "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856,
        "g6e.12xlarge": 10.49264, "g6e.16xlarge": 7.57719, "g6e.24xlarge": 15.06559, "g6e.48xlarge": 30.13118,
        "p3dn.24xlarge": 31.212,
        "p4d.24xlarge": 21.96, "p4de.24xlarge": 27.45,
        "p5.4xlarge": 6.88, "p5.48xlarge": 55.04,
        "p5e.48xlarge": 61.54, "p5en.48xlarge": 63.30,
        "p6-b200.48xlarge": 113.93, "p6-b300.48xlarge": 142.42,
    }
)  # fmt: skip


# CPU types for cluster.systemNodes (m7i.xlarge is the default), USD per instance-hour, us-east-1, as of PRICES_AS_OF.
CPU_ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType(
    {
        "m5.large": 0.096, "m5.xlarge": 0.192, "m5.2xlarge": 0.384,
        "m6i.large": 0.096, "m6i.xlarge": 0.192, "m6i.2xlarge": 0.384,
        "m7i.large": 0.1008, "m7i.xlarge": 0.2016, "m7i.2xlarge": 0.4032,
    }
)  # fmt: skip
SYSTEM_NODE_ROOT_GIB = 20

EKS_STANDARD_USD_PER_HOUR = 0.10
EKS_EXTENDED_USD_PER_HOUR = 0.60
# End of standard and of extended support per Kubernetes minor (UTC dates), from the "Amazon EKS Kubernetes release
# calendar" (awsdocs/amazon-eks-user-guide latest/ug/versioning/kubernetes-versions.adoc @ 0138560); extended support is
# billed from the first day past standard support.
EKS_SUPPORT_CALENDAR: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "1.32": ("2026-03-23", "2027-03-23"),
        "1.33": ("2026-07-29", "2027-07-29"),
        "1.34": ("2026-12-02", "2027-12-02"),
        "1.35": ("2027-03-27", "2028-03-27"),
    }
)
CALENDAR_AS_OF = "2026-12-01"


def instance_hour_usd(instance_type: str) -> float | None:
    return ON_DEMAND_USD_PER_HOUR.get(instance_type, CPU_ON_DEMAND_USD_PER_HOUR.get(instance_type))


def billed_nodes(nodes: int, reserved: int) -> int:
    """Instances billed at the on-demand rate for `nodes` running ones beside a reservation of `reserved`: the
    reservation always, and the nodes it does not cover."""
    return max(nodes, reserved)


def gpu_hour_usd(instance_type: str) -> float | None:
    """The table's on-demand rate divided by the instance's GPU count."""
    price = instance_hour_usd(instance_type)
    info = catalog.lookup(instance_type)
    if price is None or info is None or info.gpu_count == 0:
        return None
    return price / info.gpu_count


def gp3_usd_per_month(size_gib: int, mibps: int, iops: int) -> float:
    """One gp3 volume a month: its size, and the throughput and IOPS above the included baseline."""
    return (
        size_gib * GP3_USD_PER_GB_MONTH
        + max(0, mibps - GP3_INCLUDED_MIBPS) * GP3_USD_PER_MIBPS_MONTH
        + max(0, iops - GP3_INCLUDED_IOPS) * GP3_USD_PER_IOPS_MONTH
    )
