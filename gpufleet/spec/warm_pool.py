"""How many instances a node group's warm pool holds, and what they cost while they wait.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/spec/warm_pool.py.
"""

from __future__ import annotations

from gpufleet.facts import pricing
from gpufleet.spec import defaults
from gpufleet.spec.fleet import NodeGroup


def volume_usd_per_month(group: NodeGroup) -> float:
    """The gp3 volume that holds a node's store (diskSizeGiB, with diskThroughputMiBps and diskIops above the
    baseline) for a month."""
    return pricing.gp3_usd_per_month(group.disk_size_gib, defaults.disk_throughput(group), defaults.disk_iops(group))


def prepared_capacity(group: NodeGroup) -> int:
    """The `maxGroupPreparedCapacity` gpufleet renders: the spec's, else the pool's minSize (an absolute pool)."""
    assert group.warm_pool is not None
    pool = group.warm_pool
    return pool.max_prepared_capacity if pool.max_prepared_capacity is not None else pool.min_size


def held(group: NodeGroup, desired: int) -> int:
    """Instances the pool holds while the group's desired capacity is `desired` (PutWarmPool sizing)."""
    if group.warm_pool is None:
        return 0
    return max(group.warm_pool.min_size, prepared_capacity(group) - desired)


def standing_usd_per_month(group: NodeGroup, instances: int, instance_hour_usd: float) -> float:
    """What `instances` pooled instances cost per month while they wait: a Running pool the full instance rate;
    a Stopped or Hibernated one only its gp3 volumes (the instance-hours stop; volume_usd_per_month)."""
    assert group.warm_pool is not None
    if group.warm_pool.state == "Running":
        return instances * instance_hour_usd * pricing.HOURS_PER_MONTH
    return instances * volume_usd_per_month(group)
