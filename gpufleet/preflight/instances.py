"""Instance checks: the type exists with the GPUs the catalog promises, is offered in the group's zones, and
has EFA when the group's fabric is EFA. EC2's answer is the truth here, the catalog the expectation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.facts import catalog
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec.fleet import Fabric


def _gpus(described: Mapping[str, Any]) -> tuple[str, int, int] | None:
    """(model, count, MiB per GPU) from EC2 GpuInfo; None when EC2 reports no GPU."""
    gpus = described.get("GpuInfo", {}).get("Gpus", [])
    if not gpus:
        return None
    models = "+".join(sorted({str(g["Name"]) for g in gpus}))
    count = sum(int(g.get("Count", 0)) for g in gpus)
    memory = min(int(g.get("MemoryInfo", {}).get("SizeInMiB", 0)) for g in gpus)
    return models, count, memory


def check_instance_types(ctx: Context) -> Iterator[AccountFinding]:
    """Every instance type exists in the region and has the GPU model, count and memory the catalog says (each of a
    Karpenter pool's instanceTypes)."""
    described = ctx.instance_types()
    for group, name in ((g, t) for g in ctx.fleet.node_groups for t in g.instance_types):
        if name not in described:
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=f"instance type {name} does not exist in {ctx.region} (DescribeInstanceTypes does not know it)",
                hint=(
                    f"use an instance type EC2 offers in {ctx.region}: aws ec2 describe-instance-type-offerings"
                    f" --region {ctx.region}"
                ),
            )
            continue
        expected = catalog.lookup(name)
        if expected is None:  # the spec rules reject such a group; nothing to compare against
            continue
        want = (expected.gpu_model, expected.gpu_count, expected.gpu_memory_mib)
        got = _gpus(described[name])
        if got != want:
            reported = "no GPU" if got is None else f"{got[1]} x {got[0]} with {got[2]} MiB each"
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=(
                    f"EC2 reports {reported} for {name}; gpufleet's catalog says {want[1]} x {want[0]} with {want[2]}"
                    " MiB each"
                ),
                hint=(
                    f"correct the {name} entry in gpufleet/facts/catalog.py (every label, quota and MIG profile derives"
                    " from it), or choose the instance type that has the GPUs you expect"
                ),
            )


def check_zones(ctx: Context) -> Iterator[AccountFinding]:
    """A pinned zone is a zone ID of the cluster's region."""
    zones = ctx.zone_names()
    for group in ctx.fleet.node_groups:
        if group.zone is not None and group.zone not in zones:
            known = ", ".join(f"{z} ({n})" for z, n in sorted(zones.items()))
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=f"zone {group.zone} is not an availability zone ID of {ctx.region}",
                hint=f"set zone to one of {known} (zone IDs, not names)",
            )


def check_offerings(ctx: Context) -> Iterator[AccountFinding]:
    """The instance type is offered in the group's zone, or in the zones of its subnets (each of a Karpenter pool's
    instanceTypes: Karpenter launches none of them where EC2 does not offer it)."""
    described = ctx.instance_types()
    offerings = ctx.offerings()
    zones = ctx.zone_names()
    for group, name in ((g, t) for g in ctx.fleet.node_groups for t in g.instance_types):
        if name not in described:
            continue  # reported by check_instance_types
        offered = offerings.get(name, frozenset())
        where = ", ".join(ctx.zone_label(z) for z in sorted(offered))
        if not offered:
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=f"{name} is not offered in any zone of {ctx.region}",
                hint="choose a region that offers it, or another instance type",
            )
            continue
        if group.zone is not None:
            if group.zone in zones and group.zone not in offered:
                yield AccountFinding(
                    severity="error",
                    node_group=group.name,
                    message=f"{name} is not offered in zone {ctx.zone_label(group.zone)}; it is offered in {where}",
                    hint="pin the group to a zone that offers it (and give it a subnet there)",
                )
            continue
        wanted = ctx.group_subnet_zones(group)
        missing = wanted - offered
        if not wanted or not missing:
            continue
        labels = ", ".join(ctx.zone_label(z) for z in sorted(missing))
        if missing == wanted:
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=(
                    f"{name} is not offered in any zone of the group's subnets ({labels}); it is offered in {where}"
                ),
                hint="give the group subnets (nodeGroups[].subnetIds) in zones that offer it",
            )
        else:
            yield AccountFinding(
                severity="warning",
                node_group=group.name,
                message=f"{name} is not offered in {labels}; the group's subnets there get no nodes",
                hint="set nodeGroups[].subnetIds to the subnets in zones that offer it",
            )


def check_efa(ctx: Context) -> Iterator[AccountFinding]:
    """A group with fabric EFA uses an instance type EC2 says supports EFA."""
    described = ctx.instance_types()
    for group in ctx.fleet.node_groups:
        if group.fabric is not Fabric.EFA or group.instance_type not in described:
            continue
        network = described[group.instance_type].get("NetworkInfo", {})
        if not network.get("EfaSupported", False):
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=f"fabric is EFA but EC2 reports no EFA support for {group.instance_type}",
                hint="use fabric None, or an EFA instance type (p4d, p5, p5e, p5en, p6, g6e.8xlarge and larger...)",
            )
