"""vCPU quota check: the account's EC2 quotas for P and G instances cover the whole fleet at maxSize.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/quotas.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gpufleet.facts import catalog
from gpufleet.preflight.clients import ApiError, call
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec import warm_pool
from gpufleet.spec.fleet import CapacityType, Fleet, NodeGroup


@dataclass(frozen=True, slots=True)
class ServiceQuota:
    code: str
    name: str


# (instance family class, capacity type) -> the EC2 vCPU quota it draws on.
QUOTAS: Mapping[tuple[str, CapacityType], ServiceQuota] = {
    ("P", CapacityType.ON_DEMAND): ServiceQuota("L-417A185B", "Running On-Demand P instances"),
    ("G", CapacityType.ON_DEMAND): ServiceQuota("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("P", CapacityType.SPOT): ServiceQuota("L-7212CCBC", "All P Spot Instance Requests"),
    ("G", CapacityType.SPOT): ServiceQuota("L-3819A6DF", "All G and VT Spot Instance Requests"),
}


@dataclass(frozen=True, slots=True)
class Demand:
    """vCPUs one node group needs from one quota at maxSize."""

    group: str
    instances: int
    instance_type: str
    vcpus: int

    def describe(self) -> str:
        return f"{self.group}: {self.instances} x {self.instance_type} = {self.vcpus}"


def running_instances(group: NodeGroup) -> int:
    """Instances running at full scale: maxSize plus a warm pool kept Running.

    Why: docs/commands.md, "Design notes", quotas.running_instances."""
    pool = group.warm_pool
    if pool is None or pool.state != "Running":
        return group.max_size
    return group.max_size + warm_pool.held(group, group.max_size)


def _by_capacity(group: NodeGroup, count: int) -> list[tuple[CapacityType, int]]:
    """How many of the group's `count` instances draw on which capacity type's quota.

    Why: docs/commands.md, "Design notes", quotas._by_capacity."""
    fallback = group.capacity_fallback
    if not fallback:
        return [(group.capacity_type, count)]
    if "OnDemand" in fallback:
        return [(CapacityType.ON_DEMAND, count)]
    # [Reserved, Spot]: the reserved instances on the On-Demand quota, the rest on Spot
    reserved = min(group.reservation.instance_count, count) if group.reservation is not None else 0
    return [(CapacityType.ON_DEMAND, reserved), (CapacityType.SPOT, count - reserved)]


def demand(fleet: Fleet) -> dict[tuple[str, CapacityType], list[Demand]]:
    """Per quota key, what each node group needs.

    Why: docs/commands.md, "Design notes", quotas.demand."""
    needs: dict[tuple[str, CapacityType], list[Demand]] = {}
    for group in fleet.node_groups:
        infos = [i for i in (catalog.lookup(t) for t in group.instance_types) if i is not None]
        if not infos or group.capacity_type is CapacityType.CAPACITY_BLOCK:
            continue
        info = max(infos, key=lambda i: i.vcpus)
        for capacity, count in _by_capacity(group, running_instances(group)):
            key = (info.family[0].upper(), capacity)
            if key in QUOTAS and count:
                needs.setdefault(key, []).append(Demand(group.name, count, info.name, count * info.vcpus))
    return needs


def _quota_value(ctx: Context, quota: ServiceQuota) -> tuple[float, str]:
    """The applied quota (or AWS's default where none was applied) and the name AWS gives it."""
    try:
        found = call(ctx.clients.service_quotas, "get_service_quota", ServiceCode="ec2", QuotaCode=quota.code)
    except ApiError as exc:
        if exc.code != "NoSuchResourceException":
            raise
        found = call(
            ctx.clients.service_quotas, "get_aws_default_service_quota", ServiceCode="ec2", QuotaCode=quota.code
        )
    return float(found["Quota"]["Value"]), str(found["Quota"].get("QuotaName", quota.name))


def check_quotas(ctx: Context) -> Iterator[AccountFinding]:
    for key, needs in sorted(demand(ctx.fleet).items(), key=lambda kv: (kv[0][0], kv[0][1].value)):
        quota = QUOTAS[key]
        value, name = _quota_value(ctx, quota)
        total = sum(d.vcpus for d in needs)
        group = needs[0].group if len(needs) == 1 else None
        if name != quota.name:
            yield AccountFinding(
                severity="warning",
                node_group=group,
                message=f"quota {quota.code} is named '{name}' in {ctx.region}, gpufleet expects '{quota.name}'",
                hint=(
                    "check in the Service Quotas console that this is the quota for these instances; report it if AWS"
                    " renamed or split it"
                ),
                scope="account",
            )
        if total > value:
            breakdown = "; ".join(d.describe() for d in needs)
            yield AccountFinding(
                severity="error",
                node_group=group,
                message=(
                    f"the fleet needs {total} vCPUs of '{quota.name}' ({quota.code}) at maxSize ({breakdown}), the"
                    f" quota in {ctx.region} is {value:g}"
                ),
                hint=(
                    f"request at least {total}: aws service-quotas request-service-quota-increase --service-code ec2"
                    f" --quota-code {quota.code} --desired-value {total} --region {ctx.region}; or lower"
                    " scaling.maxSize"
                ),
                scope="account",
            )
