"""Stage 8: cost. Allocated and allocated-but-idle GPU-hours (and their price) per team namespace as recording
rules, the weekly report dashboard for budget owners, and the fleet's cost estimate in plan.md."""

from __future__ import annotations

from gpufleet.facts import catalog, pricing
from gpufleet.plan.builders.common import k8s
from gpufleet.plan.builders.telemetry import prometheus_dependency
from gpufleet.plan.manifests import dashboards, rules_promql, sharing, telemetry
from gpufleet.plan.parts import BuildContext, StageContent
from gpufleet.spec import warm_pool
from gpufleet.spec.fleet import CapacityType, Fleet, NodeGroup, SharingStrategy

# What the idle figure of a group can and cannot tell, by sharing strategy (rules_promql.telemetry_groups; the
# exporter's per-pod series under KUBERNETES_VIRTUAL_GPUS, gpufleet/plan/manifests/telemetry.py).
IDLE_MEANING = {
    SharingStrategy.EXCLUSIVE: "the GPU's SMs stayed below the threshold while the pod held it",
    SharingStrategy.MIG: "the MIG instance's own SMs stayed below the threshold (DCGM reports each instance): per pod",
    SharingStrategy.TIME_SLICING: (
        "the whole GPU stayed idle while the pod held a replica, split between the pods holding it; "
        "a pod idling beside a busy neighbour is not idle (DCGM reports the GPU, not the replica)"
    ),
    SharingStrategy.MPS: (
        "the whole GPU stayed idle while the pod held a replica, split between the pods holding it; "
        "a pod idling beside a busy MPS client is not idle (DCGM reports the GPU, not the client)"
    ),
}


def group_gpu_hour_usd(fleet: Fleet, group: NodeGroup) -> tuple[float | None, str]:
    """USD per GPU-hour of a group and where it comes from: the spec's cost.gpuHourUsd, else the price table."""
    if group.name in fleet.gpu_hour_usd:
        return float(fleet.gpu_hour_usd[group.name]), "spec"
    price = pricing.gpu_hour_usd(group.instance_type)
    if price is None:
        return None, "unknown"
    suffix = (
        ""
        if group.capacity_type is CapacityType.ON_DEMAND
        else f" (on-demand rate; {group.capacity_type.value} prices differ)"
    )
    return price, f"table {pricing.PRICES_AS_OF}{suffix}"


def usd(value: float) -> str:
    if value == 0:
        return "$0"
    return f"${value:,.0f}" if value >= 100 else f"${value:,.2f}"


def _devices(ctx: BuildContext, group: NodeGroup) -> dict[str, int]:
    """Devices per physical GPU by resource name, as the sharing stage configures them (whole GPUs without it); the
    same figures as the `gpufleet:devices_per_gpu` constants of the telemetry stage (builders/telemetry.py)."""
    return sharing.devices_per_gpu(group, with_sharing=ctx.includes("sharing"))


def estimate_notes(fleet: Fleet) -> tuple[list[str], list[str]]:
    """plan.md lines (a table per node group and totals) and warnings for groups without a price."""
    lines = [
        (
            f"Monthly = {pricing.HOURS_PER_MONTH} hours. Stopped or hibernated warm-pool instances cost their EBS"
            f" volumes (diskSizeGiB x ${pricing.GP3_USD_PER_GB_MONTH}/GB-month gp3); running ones the full instance"
            " rate."
        ),
        *(
            [
                "An On-Demand Capacity Reservation is billed at the on-demand rate for every reserved instance, running"
                " or not: a group with one costs at least its reserved count (capacity.reservation.instanceCount) at"
                " any size."
            ]
            if any(g.reservation for g in fleet.node_groups)
            else []
        ),
        "",
        (
            "| node group | instance | GPUs/node | USD/GPU-hour (source) | USD/instance-hour | monthly at minSize |"
            " monthly at maxSize | warm pool standing/month |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    warnings = []
    total_min = total_max = total_pool = 0.0
    for group in fleet.node_groups:
        info = catalog.lookup(group.instance_type)
        gpus = info.gpu_count if info else 0
        price, source = group_gpu_hour_usd(fleet, group)
        if price is None or gpus == 0:
            warnings.append(
                f"cost: no price for node group {group.name} ({group.instance_type}); set cost.gpuHourUsd.{group.name}"
            )
            lines.append(f"| {group.name} | {group.instance_type} | {gpus} | unknown | - | - | - | - |")
            continue
        hourly = price * gpus
        reserved = group.reservation.instance_count if group.reservation else 0
        at_min = pricing.billed_nodes(group.min_size, reserved) * hourly * pricing.HOURS_PER_MONTH
        at_max = pricing.billed_nodes(group.max_size, reserved) * hourly * pricing.HOURS_PER_MONTH
        pool = 0.0
        pool_text = "-"
        n = warm_pool.held(group, group.min_size)
        if group.warm_pool and n > 0:
            pool = warm_pool.standing_usd_per_month(group, n, hourly)
            pool_text = f"{usd(pool)} ({n} {group.warm_pool.state})"
        total_min += at_min
        total_max += at_max
        total_pool += pool
        held = f" ({reserved} reserved)" if reserved else ""
        lines.append(
            f"| {group.name} | {group.instance_type} | {gpus} | {price:.2f} ({source}) | {hourly:,.2f} |"
            f" {usd(at_min)}{held} | {usd(at_max)}{held} | {pool_text} |"
        )
    lines += [
        "",
        (
            f"Fleet: {usd(total_min + total_pool)} per month at minSize (warm pools included),"
            f" {usd(total_max + total_pool)} at maxSize."
        ),
    ]
    return lines, warnings


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    ns = telemetry.monitoring_namespace(fleet)
    prices = {g.name: p for g in fleet.node_groups if (p := group_gpu_hour_usd(fleet, g)[0]) is not None}
    teams = {t.namespace: t.name for t in fleet.teams}
    after = prometheus_dependency(ctx)
    resources = (
        k8s(
            rules_promql.prometheus_rule("gpufleet-cost", ns, rules_promql.cost_groups(prices, teams)), depends_on=after
        ),
        k8s(
            telemetry.dashboard_configmap(
                "gpufleet-dashboard-gpu-cost", ns, "gpufleet-gpu-cost.json", dashboards.cost_dashboard()
            ),
            depends_on=after,
        ),
    )
    estimate, warnings = estimate_notes(fleet)
    notes = [
        (
            "- Weekly report: the Grafana dashboard *GPU fleet: cost by team (weekly report)*, backed by the recording"
            " rules `team:gpufleet_gpu_hours_allocated:1h`, `team:gpufleet_gpu_hours_idle:1h` and their `_cost_*_usd`"
            " twins (last 7 days, by team)."
        ),
        (
            "- GPU-hours are physical GPU-hours, priced per physical GPU: a pod's GPU devices (`nvidia.com/gpu`, or"
            " `nvidia.com/mig-<profile>` under MIG strategy mixed) over the devices one GPU of its group advertises,"
            " counted minute by minute (an hour with no GPUs held adds nothing)."
        ),
        "",
        "| node group | devices per GPU | one device is | idle means |",
        "|---|---|---|---|",
        *(
            f"| {g.name} | {n} `{name}` | {1 / n:.3g} GPU | {IDLE_MEANING[g.sharing.strategy]} |"
            for g in fleet.node_groups
            for name, n in _devices(ctx, g).items()
        ),
        "",
        *estimate,
    ]
    return StageContent(resources=resources, warnings=tuple(warnings), notes=tuple(notes))
