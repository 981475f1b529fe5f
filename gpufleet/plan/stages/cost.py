"""Stage 8: cost. Allocated and allocated-but-idle GPU-hours (and their price) per team namespace as recording
rules, the weekly report dashboard for budget owners, and the fleet's cost estimate in plan.md.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/stages/cost.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.facts import catalog, pricing
from gpufleet.plan.builders import fsx, provisioners
from gpufleet.plan.builders.common import k8s
from gpufleet.plan.manifests import dashboards, headroom, rules_promql, sharing, telemetry
from gpufleet.plan.parts import BuildContext, StageContent
from gpufleet.plan.stages.telemetry import prometheus_dependency
from gpufleet.spec import defaults, warm_pool
from gpufleet.spec.devices import device_managing
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


def _counted(group: NodeGroup, resource: str) -> str:
    """The device a pod of the group holds: a device plugin resource, or on a DRA group a device of the class its
    claims name (counted from the claims' templates: rules_promql, DraAllocation)."""
    return device_managing(group).claimed.get(resource, resource)


def _idle_meaning(fleet: Fleet, group: NodeGroup) -> str:
    meaning = IDLE_MEANING[group.sharing.strategy]
    if not device_managing(group).claims:
        return meaning
    if telemetry.exporter_maps_dra(fleet):
        return meaning + " (dcgm-exporter maps a claimed GPU to its pod: KUBERNETES_ENABLE_DRA)"
    return (
        "not counted: dcgm-exporter maps no claimed GPU to its pod while KUBERNETES_VIRTUAL_GPUS is on for the"
        " time-sliced and MPS groups (docs/dra.md); allocated GPU-hours are counted"
    )


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
    same figures as the `gpufleet:devices_per_gpu` constants of the telemetry stage (stages/telemetry.py)."""
    return sharing.devices_per_gpu(group, with_sharing=ctx.includes("sharing"))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMonthly:
    """A priced group's figures in the estimate: USD per GPU-hour and its source, per instance-hour, per month at
    minSize (the nodes an idle group runs) and at maxSize, and its warm pool's standing cost."""

    gpus: int
    price: float
    source: str
    hourly: float
    at_min: float
    at_max: float
    pool: float
    pool_nodes: int
    reserved: int


def group_monthly(fleet: Fleet, group: NodeGroup) -> GroupMonthly | None:
    """The group's figures, or None when it has no price (no cost.gpuHourUsd and not in the table) or no GPUs."""
    info = catalog.lookup(group.instance_type)
    gpus = info.gpu_count if info else 0
    price, source = group_gpu_hour_usd(fleet, group)
    if price is None or gpus == 0:
        return None
    hourly = price * gpus
    reserved = group.reservation.instance_count if group.reservation else 0
    # at minSize: the nodes an idle group runs, which headroom's placeholders may raise above minSize
    at_min = pricing.billed_nodes(headroom.idle_nodes(group), reserved) * hourly * pricing.HOURS_PER_MONTH
    at_max = pricing.billed_nodes(group.max_size, reserved) * hourly * pricing.HOURS_PER_MONTH
    n = warm_pool.held(group, group.min_size)
    pool = warm_pool.standing_usd_per_month(group, n, hourly) if group.warm_pool and n > 0 else 0.0
    return GroupMonthly(
        gpus=gpus,
        price=price,
        source=source,
        hourly=hourly,
        at_min=at_min,
        at_max=at_max,
        pool=pool,
        pool_nodes=n if group.warm_pool else 0,
        reserved=reserved,
    )


def fleet_monthly(fleet: Fleet) -> tuple[float, float, list[str]]:
    """The estimate's last line: USD per month at minSize and at maxSize with warm pools, the control plane, system
    nodes, root volumes and FSx for Lustre, and the groups left out for want of a price."""
    figures = {g.name: group_monthly(fleet, g) for g in fleet.node_groups}
    priced = [m for m in figures.values() if m is not None]
    _, extra_min, extra_max = around_the_gpu_nodes(fleet)
    pools = sum(m.pool for m in priced)
    return (
        sum(m.at_min for m in priced) + pools + extra_min,
        sum(m.at_max for m in priced) + pools + extra_max,
        [name for name, m in figures.items() if m is None],
    )


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
        *(
            [
                "A group with headroom runs at least headroom.nodes nodes: its placeholders keep them up, so its"
                " minSize figures count max(minSize, headroom.nodes) nodes."
            ]
            if any(g.headroom for g in fleet.node_groups)
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
        m = group_monthly(fleet, group)
        if m is None:
            warnings.append(
                f"cost: no price for node group {group.name} ({group.instance_type}); set cost.gpuHourUsd.{group.name}"
            )
            gpus = info.gpu_count if (info := catalog.lookup(group.instance_type)) else 0
            lines.append(f"| {group.name} | {group.instance_type} | {gpus} | unknown | - | - | - | - |")
            continue
        pool_text = (
            f"{usd(m.pool)} ({m.pool_nodes} {group.warm_pool.state})" if group.warm_pool and m.pool_nodes else "-"
        )
        total_min += m.at_min
        total_max += m.at_max
        total_pool += m.pool
        held = f" ({m.reserved} reserved)" if m.reserved else ""
        lines.append(
            f"| {group.name} | {group.instance_type} | {m.gpus} | {m.price:.2f} ({m.source}) | {m.hourly:,.2f} |"
            f" {usd(m.at_min)}{held} | {usd(m.at_max)}{held} | {pool_text} |"
        )
    lines += [
        "",
        (
            f"Fleet: {usd(total_min + total_pool)} per month at minSize (warm pools included),"
            f" {usd(total_max + total_pool)} at maxSize."
        ),
    ]
    lines += spot_range(fleet, total_max + total_pool)
    around, extra_min, extra_max = around_the_gpu_nodes(fleet)
    lines += around
    lustre = " and the FSx for Lustre file system" if fleet.fsx_lustre is not None else ""
    lines += [
        "",
        (
            f"With the control plane, system nodes and root volumes{lustre}: {usd(total_min + total_pool + extra_min)}"
            " per"
            f" month at minSize, {usd(total_max + total_pool + extra_max)} at maxSize."
        ),
        "",
        NOT_COUNTED,
    ]
    lines += raid0_warm_pool_caveats(fleet)
    return lines, warnings


def spot_capacity(group: NodeGroup) -> str | None:
    """How a group may run on Spot: "Spot" (only), or a Karpenter pool's capacity types in the order it tries them
    ("Spot, then On-Demand"; gpufleet.plan.manifests.karpenter.capacity_types, capacity.fallback), or None when it
    never runs on Spot."""
    return provisioners.of(group).spot_capacity(group)


# What the Spot range leaves out, said beside it.
SPOT_NOT_COUNTED = (
    "The range is for the nodes' instance-hours only: Spot prices move by zone and hour and are not known offline"
    " (set cost.gpuHourUsd to the rate you see), a pool that falls back to On-Demand counts at the upper end, and the"
    " cost of interruptions (the work a reclaimed node loses, its replacement's boot and image pull) is not priced."
)


def spot_range(fleet: Fleet, fleet_max: float) -> list[str]:
    """plan.md lines for the groups that may run on Spot: their monthly cost at maxSize between the deepest
    discount AWS states and the on-demand list rate (Spot's default maximum price; gpufleet.facts.pricing), and the
    fleet's total at maxSize with them at either end.

    Why: docs/telemetry-health-cost.md, "Design notes", cost.spot_range."""
    rows, low_delta, high_delta = [], 0.0, 0.0
    for group in fleet.node_groups:
        capacity = spot_capacity(group)
        info = catalog.lookup(group.instance_type)
        list_rate = pricing.instance_hour_usd(group.instance_type)
        price, source = group_gpu_hour_usd(fleet, group)
        if capacity is None or info is None or not info.gpu_count or list_rate is None or price is None:
            continue
        nodes = group.max_size
        on_demand = nodes * list_rate * pricing.HOURS_PER_MONTH
        deepest = on_demand * (1 - pricing.SPOT_MAX_DISCOUNT)
        counted = nodes * price * info.gpu_count * pricing.HOURS_PER_MONTH
        low_delta += deepest - counted
        high_delta += on_demand - counted
        rate = "its cost.gpuHourUsd" if source == "spec" else "the on-demand rate"
        rows.append(
            f"| {group.name} | {capacity} | {nodes} x {group.instance_type} | {usd(deepest)} | {usd(on_demand)} |"
            f" {usd(counted)} ({rate}) |"
        )
    if not rows:
        return []
    discount = f"{pricing.SPOT_MAX_DISCOUNT:.0%}"
    return [
        "",
        (
            f"Spot: a Spot node bills the Spot price in effect, never above the on-demand rate (neither gpufleet nor"
            f" Karpenter sets a maximum price, so EC2's default maximum, the On-Demand price, applies) and at most"
            f' {discount} below it (AWS\'s "up to a 90% discount"). Monthly at maxSize:'
        ),
        "",
        (
            "| node group | capacity | nodes | Spot at its deepest discount | Spot at most (on-demand rate) |"
            " the table counts |"
        ),
        "|---|---|---|---|---|---|",
        *rows,
        "",
        (
            f"Fleet at maxSize with these groups on Spot: {usd(fleet_max + low_delta)} at the deepest discount to"
            f" {usd(fleet_max + high_delta)} at the on-demand rate (the table: {usd(fleet_max)}). {SPOT_NOT_COUNTED}"
        ),
    ]


# What the estimate leaves out, said next to it: a total without its exclusions reads as the bill.
NOT_COUNTED = (
    "Not counted: the checkpoint bucket's storage and requests, CloudWatch (control plane logs, metrics), data"
    " transfer (across zones and out), NAT gateways and VPC endpoints, load balancers, and volumes beyond the root"
    " volumes."
)


def control_plane(fleet: Fleet) -> tuple[str, float | None]:
    """A sentence on the EKS control plane's charge and the USD per month it adds (None: not billed here)."""
    k8s_version = fleet.cluster.kubernetes_version
    if fleet.cluster.mode != "Create":
        return "EKS control plane: the existing cluster's, billed to it already (not counted here).", None
    standard = pricing.EKS_STANDARD_USD_PER_HOUR * pricing.HOURS_PER_MONTH
    extended = pricing.EKS_EXTENDED_USD_PER_HOUR * pricing.HOURS_PER_MONTH
    # gpufleet sets no upgradePolicy, so EKS's default EXTENDED applies.
    policy = (
        "gpufleet sets no upgradePolicy, so EKS's default supportType EXTENDED applies: past the end of standard"
        " support the control plane stays on its minor and is billed at the extended rate until kubernetesVersion is"
        " raised (STANDARD would upgrade it instead)"
    )
    dates = pricing.EKS_SUPPORT_CALENDAR.get(k8s_version)
    rates = (
        f"${pricing.EKS_STANDARD_USD_PER_HOUR:.2f}/cluster-hour ({usd(standard)}/month) in standard support,"
        f" ${pricing.EKS_EXTENDED_USD_PER_HOUR:.2f} ({usd(extended)}) in extended support"
    )
    if dates is None:
        return (
            f"EKS control plane: {rates}. Kubernetes {k8s_version} is not in gpufleet's EKS support calendar (as of"
            f" {pricing.CALENDAR_AS_OF}); counted at the standard rate. {policy}."
        ), standard
    end_standard, end_extended = dates
    in_extended = pricing.CALENDAR_AS_OF >= end_standard  # ISO dates compare as text
    state = (
        f"on {pricing.CALENDAR_AS_OF} Kubernetes {k8s_version} is in extended support (standard ended {end_standard},"
        f" extended ends {end_extended}): counted at {usd(extended)}/month"
        if in_extended
        else f"Kubernetes {k8s_version} is in standard support until {end_standard} (extended until {end_extended}):"
        f" counted at {usd(standard)}/month"
    )
    return f"EKS control plane: {rates}; {state}. {policy}.", extended if in_extended else standard


def extended_support(fleet: Fleet) -> str | None:
    """plan.md's risk line on the control plane's price past the end of standard support (the same calendar and
    policy as `control_plane`); None for an existing cluster, whose control plane is billed to it already."""
    if fleet.cluster.mode != "Create":
        return None
    k8s_version = fleet.cluster.kubernetes_version
    standard = usd(pricing.EKS_STANDARD_USD_PER_HOUR * pricing.HOURS_PER_MONTH)
    extended = usd(pricing.EKS_EXTENDED_USD_PER_HOUR * pricing.HOURS_PER_MONTH)
    dates = pricing.EKS_SUPPORT_CALENDAR.get(k8s_version)
    if dates is None:
        return (
            f"EKS extended support: Kubernetes {k8s_version} is not in gpufleet's EKS support calendar (as of"
            f" {pricing.CALENDAR_AS_OF}); past its end of standard support the control plane bills {extended} a month"
            f" instead of {standard} until `cluster.kubernetesVersion` is raised (8. cost)."
        )
    end_standard, end_extended = dates
    if pricing.CALENDAR_AS_OF >= end_standard:  # ISO dates compare as text
        return (
            f"EKS extended support: Kubernetes {k8s_version} left standard support on {end_standard}: the control"
            f" plane bills {extended} a month instead of {standard} until `cluster.kubernetesVersion` is raised"
            f" (extended support ends {end_extended}; 8. cost)."
        )
    return (
        f"EKS extended support: Kubernetes {k8s_version} leaves standard support on {end_standard}; gpufleet sets no"
        f" upgradePolicy, so EKS's default (EXTENDED) then keeps the control plane on {k8s_version} at {extended} a"
        f" month instead of {standard} until `cluster.kubernetesVersion` is raised (8. cost)."
    )


def around_the_gpu_nodes(fleet: Fleet) -> tuple[list[str], float, float]:
    """plan.md lines for what the GPU table leaves out (control plane, system nodes, running nodes' root volumes) and
    the USD per month they add at minSize and at maxSize."""
    month, gp3 = pricing.HOURS_PER_MONTH, pricing.GP3_USD_PER_GB_MONTH
    sentence, plane = control_plane(fleet)
    extra_min = extra_max = plane or 0.0
    lines = ["", "Around the GPU nodes:", "", f"- {sentence}"]
    system = fleet.cluster.system_nodes
    if fleet.cluster.mode == "Create" and system is not None:
        hourly = pricing.instance_hour_usd(system.instance_type)
        volume = pricing.SYSTEM_NODE_ROOT_GIB * gp3
        if hourly is None:
            lines.append(
                f"- System nodes: {system.min_size}..{system.max_size} x {system.instance_type}, no price in the table"
                " (not counted)."
            )
        else:
            each = hourly * month + volume
            extra_min += system.min_size * each
            extra_max += system.max_size * each
            lines.append(
                f"- System nodes: {system.min_size}..{system.max_size} x {system.instance_type} at ${hourly:.4f}/hour"
                f" with a {pricing.SYSTEM_NODE_ROOT_GIB} GiB gp3 root volume (the managed node group default):"
                f" {usd(system.min_size * each)} at minSize, {usd(system.max_size * each)} at maxSize."
            )
    rows = []
    included = (pricing.GP3_INCLUDED_MIBPS, pricing.GP3_INCLUDED_IOPS)
    for group in fleet.node_groups:
        per_node = warm_pool.volume_usd_per_month(group)
        at_min, at_max = headroom.idle_nodes(group) * per_node, group.max_size * per_node
        extra_min += at_min
        extra_max += at_max
        mibps, iops = defaults.disk_throughput(group), defaults.disk_iops(group)
        performance = f" {mibps} MiB/s {iops} IOPS" if (mibps, iops) != included else ""
        rows.append(f"{group.name} {group.disk_size_gib} GiB{performance}: {usd(at_min)}..{usd(at_max)}")
    lines.append(
        f"- Running GPU nodes' gp3 volumes (diskSizeGiB x ${gp3}/GB-month each, and above 125 MiB/s and 3,000 IOPS"
        f" ${pricing.GP3_USD_PER_MIBPS_MONTH}/MiB/s-month and ${pricing.GP3_USD_PER_IOPS_MONTH}/IOPS-month [A], at"
        " minSize..maxSize): " + "; ".join(rows) + "."
    )
    fsr = {
        (g.data_volume_snapshot_id, zone)
        for g in fleet.node_groups
        if g.data_volume_snapshot_id is not None
        and g.snapshot_initialization is not None
        and g.snapshot_initialization.mode == "FastSnapshotRestore"
        for zone in g.snapshot_initialization.availability_zones or ()
    }
    if fsr:
        # Billed per snapshot and zone while enabled, whatever the nodes do (stage 1 enables it).
        restore = len(fsr) * pricing.FSR_USD_PER_DSU_HOUR * month
        extra_min += restore
        extra_max += restore
        lines.append(
            f"- EBS fast snapshot restore: {len(fsr)} snapshot-zone pair(s) x ${pricing.FSR_USD_PER_DSU_HOUR}/DSU-hour"
            f" x {month} hours = {usd(restore)}, at every size."
        )
    provisioned = [
        g
        for g in fleet.node_groups
        if g.data_volume_snapshot_id is not None
        and g.snapshot_initialization is not None
        and g.snapshot_initialization.mode == "ProvisionedRate"
    ]
    for g in provisioned:
        lines.append(
            f"- {g.name}: the Provisioned Rate for Volume Initialization bills each node launch by the snapshot data"
            f" its data volume initializes (at most diskSizeGiB, {g.disk_size_gib} GiB); gpufleet has no sourced"
            " price for it (aws.amazon.com/ebs/pricing), so it is not counted."
        )
    if fleet.fsx_lustre is not None:
        # Billed by provisioned capacity whatever the nodes do (the storage stage's plan.md section has the figures).
        price, lustre = fsx.monthly_usd(fleet.fsx_lustre)
        extra_min += lustre
        extra_max += lustre
        lines.append(
            f"- FSx for Lustre ({fleet.fsx_lustre.deployment_type}): {fleet.fsx_lustre.storage_capacity_gib:,}"
            f" GB-month x ${price:.3f} = {usd(lustre)}, at every size."
        )
    return lines, extra_min, extra_max


def raid0_warm_pool_caveats(fleet: Fleet) -> list[str]:
    """A group with instance-store RAID0 and a Stopped or Hibernated warm pool pays for less than it seems:
    instance store is lost at every stop.

    Why: docs/telemetry-health-cost.md, "Design notes", cost.raid0_warm_pool_caveats."""
    lines = []
    for g in fleet.node_groups:
        pool = g.warm_pool
        if g.local_storage != "RAID0" or pool is None or pool.state not in ("Stopped", "Hibernated"):
            continue
        lines.append(
            f"- Warm pool of {g.name} ({pool.state}) with localStorage RAID0: instance store is lost at every stop, so"
            " a resumed instance rebuilds the array and pulls every image again; its standing cost buys only EC2"
            " launch and boot, not a warm start with images (keep images on EBS, or a Running pool)."
        )
    return ["", *lines] if lines else []


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
            f"| {g.name} | {n} `{_counted(g, name)}` | {1 / n:.3g} GPU | {_idle_meaning(fleet, g)} |"
            for g in fleet.node_groups
            for name, n in _devices(ctx, g).items()
        ),
        "",
        *estimate,
    ]
    return StageContent(resources=resources, warnings=tuple(warnings), notes=tuple(notes))
