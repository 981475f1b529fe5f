"""Prometheus rule groups (recording rules and alerts) for stages 2, 7 and 8, as plain dicts.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/manifests/rules_promql.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.spec.names import LABEL_MANAGED_BY

# kube-state-metrics' name for our node-group label: labelName("label", "gpufleet.io/node-group").
KSM_NODE_GROUP = "label_gpufleet_io_node_group"
# GPU resources in device-plugin units: whole GPUs, shared replicas (renameByDefault) and MIG slices (mixed strategy).
# Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.GPU_RESOURCES.
GPU_RESOURCES = "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"
GPU_TAINT_KEY = "nvidia.com/gpu"
# kube-state-metrics' name for the device-manager node label (gpufleet.spec.devices.LABEL_DEVICE_MANAGER).
KSM_DEVICE_MANAGER = "label_gpufleet_io_device_manager"

# DCGM clock event reason bits (NVIDIA/DCGM dcgmlib/dcgm_fields.h, as quoted in NVIDIA/dcgm-exporter
# internal/pkg/collector/clock_events_collector.go). PromQL has no bitwise operators: bit b of x is
# floor(x / 2^b) % 2.
CLOCK_HW_SLOWDOWN = 0x8
CLOCK_SW_THERMAL = 0x20
CLOCK_HW_THERMAL = 0x40
CLOCK_HW_POWER_BRAKE = 0x80

# XIDs that mean hardware or memory trouble (critical).
# Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.HARDWARE_XIDS.
HARDWARE_XIDS = (48, 63, 64, 74, 79, 94, 95, 119, 120, 121, 140)

# How long an XID alert fires after the exporter's last-XID gauge changes.
XID_WINDOW = "10m"

# Straggler: a rank whose step time (5 m average) exceeds the job's fastest quartile of ranks by this factor.
STRAGGLER_RATIO = 1.2
# The metric training jobs export (documented in docs/telemetry-health-cost.md).
TRAINING_STEP_METRIC = "gpufleet_training_step_seconds"

# Node condition the DCGM health plugin sets (gpufleet/plan/manifests/health.py).
DCGM_CONDITION = "DCGMUnhealthy"

MONITORING_LABEL = {"gpufleet.io/monitoring": "true"}
API_VERSION = "monitoring.coreos.com/v1"


def _fmt(value: float) -> str:
    return f"{value:g}"


def _bit(expr: str, bit: int) -> str:
    return f"(floor({expr} / {bit}) % 2 == 1)"


def prometheus_rule(name: str, namespace: str, groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A PrometheusRule object holding `groups`, labelled so Prometheus selects it (see telemetry.py)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": {**LABEL_MANAGED_BY, **MONITORING_LABEL}},
        "spec": {"groups": [dict(g) for g in groups]},
    }


def _record(name: str, expr: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"record": name, "expr": expr}
    if labels:
        rule["labels"] = dict(labels)
    return rule


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "alert": name,
        "expr": expr,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }
    if for_ != "0m":
        rule["for"] = for_
    return rule


# ---------------------------------------------------------------------------------------------------------
# Stage 2: telemetry
# ---------------------------------------------------------------------------------------------------------


def window(duration_seconds: int, step: str) -> str:
    """A subquery range of `duration_seconds` minus one second at `step`: exactly duration / step steps in
    Prometheus 2 and 3 alike.

    Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.window."""
    left = duration_seconds - 1
    hours, rest = divmod(left, 3600)
    minutes, seconds = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{seconds}s" if seconds else "")
    return f"[{text}:{step}]"


def gpu_hours(expr: str, duration_seconds: int) -> str:
    """GPU-hours of a series of GPUs held, over the `duration_seconds` before now.

    Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.gpu_hours."""
    return f"sum_over_time({expr}{window(duration_seconds, '1m')}) / 60"


# The exporter's device labels (NVIDIA/dcgm-exporter internal/pkg/rendermetrics/render_metrics.go): one physical GPU is
# (node, gpu); a MIG instance adds GPU_I_ID.
# Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.DEVICE.
DEVICE = "node, gpu, GPU_I_ID"


def per_device(expr: str) -> str:
    return f"max by ({DEVICE}) ({expr})"


def ksm_resource(name: str) -> str:
    """A resource name as kube-state-metrics labels it (`resource="nvidia_com_mig_1g_5gb"`)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


@dataclass(frozen=True, slots=True)
class DraAllocation:
    """What the rules need of a fleet's DRA groups: GPUs per node by group, the GPUs each ResourceClaimTemplate
    claims by (namespace, template, group), and the resource name (as kube-state-metrics spells it) their GPUs are
    counted under beside the device plugin's."""

    node_gpus: Mapping[str, int]
    template_gpus: Mapping[tuple[str, str, str], int]
    resource: str


def telemetry_groups(
    idle_sm_active_below: float,
    devices_per_gpu: Sequence[tuple[Mapping[str, str], int]],
    whole_gpu_groups: Sequence[str] = (),
    dra: DraAllocation | None = None,
) -> list[dict[str, Any]]:
    """Allocation versus work per node group, fragmentation, GPUs held and idle per namespace, and the GPU alerts.

    Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.telemetry_groups."""
    thr = _fmt(idle_sm_active_below)
    running = 'max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"} == 1)'
    ready = 'max by (node) (kube_node_status_condition{condition="Ready",status="true"} == 1)'
    schedulable_ready = f"(({ready}) unless on (node) (kube_node_spec_unschedulable == 1))"
    per_request = "on (node_group, resource) group_left () gpufleet:devices_per_gpu"
    per_series = "on (node_group, GPU_I_PROFILE) group_left () gpufleet:devices_per_gpu"
    constants = [
        _record("gpufleet:devices_per_gpu", f"vector({n})", dict(labels))
        for labels, n in sorted(devices_per_gpu, key=lambda item: sorted(item[0].items()))
    ]
    constants += [
        _record("gpufleet:whole_gpu_node_group:info", "vector(1)", {"node_group": group})
        for group in sorted(whole_gpu_groups)
    ]
    if dra is not None:
        constants += [
            _record("gpufleet:dra_node_gpus", f"vector({n})", {"node_group": group})
            for group, n in sorted(dra.node_gpus.items())
        ]
        constants += [
            _record(
                "gpufleet:dra_template_gpus",
                f"vector({n})",
                {"namespace": ns, "resourceclaim_template_name": name, "node_group": group},
            )
            for (ns, name, group), n in sorted(dra.template_gpus.items())
        ]
    # GPUs a node has for pods: what the device plugin advertises, and on a DRA node its instance type's GPUs (the
    # NVIDIA DRA driver publishes each GPU of the node as a device of class gpu.nvidia.com).
    allocatable = (
        f'sum by (node) (kube_node_status_allocatable{{resource=~"{GPU_RESOURCES}"}}) * on (node) group_left'
        " (node_group) gpufleet:node_group:info"
    )
    # GPUs held by pods bound to a node and not finished: the device plugin allocates at admission, a claim is
    # allocated when its pod is scheduled and released when the pod ends.
    requested = (
        "sum by (namespace, pod, node, resource)"
        f' (kube_pod_container_resource_requests{{resource=~"{GPU_RESOURCES}",node!=""}}) * on (namespace, pod)'
        f" group_left () {running}"
    )
    if dra is not None:
        allocatable = (
            f"{allocatable} or (gpufleet:node_group:info * on (node_group) group_left () gpufleet:dra_node_gpus)"
        )
        # One series per claim a pod names: the GPUs of its template, on the pod's node, under the resource name
        # the ResourceQuota and Kueue count them by.
        requested = (
            f"({requested}) or (sum by (namespace, pod, node, resource) (label_replace(kube_pod_resourceclaim_info"
            " * on (namespace, resourceclaim_template_name) group_left () gpufleet:dra_template_gpus,"
            f' "resource", "{dra.resource}", "", "") * on (namespace, pod) group_left (node) max by (namespace, pod,'
            f' node) (kube_pod_info{{node!=""}})) * on (namespace, pod) group_left () {running})'
        )
    records = [
        # node -> node group (value 1), from the kube-state-metrics node label allowlist.
        _record(
            "gpufleet:node_group:info",
            f'max by (node, node_group) (label_replace(kube_node_labels{{{KSM_NODE_GROUP}!=""}}, "node_group", "$1",'
            f' "{KSM_NODE_GROUP}", "(.+)"))',
        ),
        _record("gpufleet:node_gpus_allocatable:sum", allocatable),
        _record("gpufleet:pod_gpus_requested:sum", requested),
        _record(
            "gpufleet:node_gpus_allocated:sum",
            "sum by (node) (gpufleet:pod_gpus_requested:sum) * on (node) group_left (node_group)"
            " gpufleet:node_group:info",
        ),
        # Physical GPUs a namespace holds: its devices over the devices per GPU of the group.
        _record(
            "namespace_node_group:gpufleet_gpus_allocated:sum",
            "sum by (namespace, node_group) (sum by (namespace, node_group, resource) (gpufleet:pod_gpus_requested:sum"
            f" * on (node) group_left (node_group) gpufleet:node_group:info) / {per_request})",
        ),
        # Free GPUs on nodes that can take a pod now (Ready, not cordoned).
        _record(
            "gpufleet:node_gpus_free:sum",
            "(gpufleet:node_gpus_allocatable:sum - on (node, node_group) (gpufleet:node_gpus_allocated:sum or"
            f" gpufleet:node_gpus_allocatable:sum * 0)) and on (node) {schedulable_ready}",
        ),
        _record("node_group:gpufleet_gpus_allocatable:sum", "sum by (node_group) (gpufleet:node_gpus_allocatable:sum)"),
        _record("node_group:gpufleet_gpus_allocated:sum", "sum by (node_group) (gpufleet:node_gpus_allocated:sum)"),
        _record("node_group:gpufleet_gpus_free:sum", "sum by (node_group) (gpufleet:node_gpus_free:sum)"),
        # The fragmentation signal: the largest block of free GPUs on any one node of the group.
        _record("node_group:gpufleet_largest_free_block:max", "max by (node_group) (gpufleet:node_gpus_free:sum)"),
        _record("node_group:gpufleet_gpus_per_node:max", "max by (node_group) (gpufleet:node_gpus_allocatable:sum)"),
        # SM activity per exporter series, smoothed, with its node group, and only while the series is live.
        _record(
            "gpufleet:gpu_sm_active:avg5m",
            "(avg_over_time(DCGM_FI_PROF_SM_ACTIVE[5m]) and DCGM_FI_PROF_SM_ACTIVE) * on (node) group_left (node_group)"
            " gpufleet:node_group:info",
        ),
        # Physical GPUs doing work, the unit of node_group:gpufleet_gpus_held:sum beside it on the dashboard: a shared
        # GPU counts once however many pods hold a copy of its series, a working MIG instance as its share of a GPU.
        _record(
            "node_group:gpufleet_gpus_busy:sum",
            f"sum by (node_group) ((max by (node_group, {DEVICE}, GPU_I_PROFILE)"
            f' (gpufleet:gpu_sm_active:avg5m{{GPU_I_PROFILE!=""}}) >= bool {thr}) / {per_series} or (max by'
            f' (node_group, node, gpu) (gpufleet:gpu_sm_active:avg5m{{GPU_I_PROFILE=""}}) >= bool {thr}))',
        ),
        # Idle physical GPUs held per namespace: its devices whose SMs stayed below the threshold, over the devices per
        # GPU.
        _record(
            "namespace_node_group:gpufleet_gpus_idle:sum",
            "sum by (namespace, node_group) (sum by (namespace, node_group, GPU_I_PROFILE)"
            ' (label_replace(label_replace(gpufleet:gpu_sm_active:avg5m{exported_pod!=""}'
            f' < bool {thr}, "namespace", "$1", "exported_namespace", "(.+)"), "pod", "$1", "exported_pod", "(.+)")'
            f" and on (namespace, pod) gpufleet:pod_gpus_requested:sum) / {per_series})",
        ),
        _record(
            "node_group:gpufleet_gpus_allocated_idle:sum",
            "sum by (node_group) (namespace_node_group:gpufleet_gpus_idle:sum)",
        ),
        _record(
            "namespace:gpufleet_gpus_allocated:sum",
            "sum by (namespace) (namespace_node_group:gpufleet_gpus_allocated:sum)",
        ),
        # Physical GPUs held per node group (node_group:gpufleet_gpus_allocated:sum is in devices).
        _record(
            "node_group:gpufleet_gpus_held:sum",
            "sum by (node_group) (namespace_node_group:gpufleet_gpus_allocated:sum)",
        ),
        _record("namespace:gpufleet_gpus_idle:sum", "sum by (namespace) (namespace_node_group:gpufleet_gpus_idle:sum)"),
    ]
    # DCGM_FI_DEV_XID_ERRORS holds the last XID until a driver reset (NVIDIA/DCGM#277, NVIDIA/dcgm-exporter#500).
    xid = "DCGM_FI_DEV_XID_ERRORS"
    changed = f"(changes({xid}[{XID_WINDOW}]) > 0)"
    hardware = "(" + " or ".join(f"{xid} == {code}" for code in HARDWARE_XIDS) + ")"
    reasons = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
    gpu_nodes = (
        f'(max by (node) (kube_node_spec_taint{{key="{GPU_TAINT_KEY}"}}) or on (node) max by (node)'
        " (gpufleet:node_group:info))"
    )
    # A DRA node advertises no GPU resource by design: the alert is for the device plugin's nodes.
    advertising = f'(sum by (node) (kube_node_status_allocatable{{resource=~"{GPU_RESOURCES}"}}) > 0)'
    if dra:
        advertising = f'({advertising} or on (node) max by (node) (kube_node_labels{{{KSM_DEVICE_MANAGER}="DRA"}}))'

    alerts = [
        _alert(
            "GPUNodeZeroAllocatable",
            f"({gpu_nodes} and on (node) {ready}) unless on (node) {advertising}",
            "10m",
            "critical",
            "Ready GPU node {{ $labels.node }} advertises no allocatable GPUs",
            "The node is Ready but the NVIDIA device plugin has not registered (or lost) its GPUs, so GPU pods cannot"
            " land there. Check the nvidia-device-plugin and driver validator pods on the node.",
        ),
        _alert(
            "GPUXidHardwareError",
            f"{hardware} and {changed}",
            "0m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $value }}",
            f"A hardware or memory XID (NVIDIA XID catalog), new in the last {XID_WINDOW}. EKS node auto repair reboots"
            " or replaces the node for the codes it knows; the DCGM health check cordons it.",
        ),
        _alert(
            "GPUXidError",
            f"(({xid} > 0) unless {hardware}) and {changed}",
            "0m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $value }}",
            f"Usually an application fault (e.g. XID 13 or 31), new in the last {XID_WINDOW}: check the workload"
            " that held the GPU when it changed ({{ $labels.exported_namespace }}/{{ $labels.exported_pod }}).",
        ),
        _alert(
            "GPUThermalThrottling",
            f"{_bit(reasons, CLOCK_SW_THERMAL)} or {_bit(reasons, CLOCK_HW_THERMAL)}",
            "5m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} is thermally throttled",
            "DCGM clock event reasons report SW or HW thermal slowdown for 5 minutes: clocks are reduced and so is"
            " every job on this GPU.",
        ),
        _alert(
            "GPUPowerThrottling",
            f"{_bit(reasons, CLOCK_HW_SLOWDOWN)} or {_bit(reasons, CLOCK_HW_POWER_BRAKE)}",
            "5m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} is in HW slowdown or power brake",
            "DCGM clock event reasons report HW slowdown or HW power brake (clocks cut by half or more) for 5 minutes:"
            " a power supply or cooling fault. The SW power cap alone is not alerted.",
        ),
        _alert(
            "GPUUtilizationMisleading",
            f"({per_device('DCGM_FI_DEV_GPU_UTIL')} > 90) and on ({DEVICE}) ({per_device('DCGM_FI_PROF_SM_ACTIVE')} <"
            " 0.3)",
            "15m",
            "info",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} looks 90%+ busy but its SMs are mostly idle",
            "DCGM_FI_DEV_GPU_UTIL only says a kernel was running; SM active below 30% means the kernels use a fraction"
            " of the chip. Right-size the job or share the GPU.",
        ),
        _alert(
            "GPUAllocatedIdle",
            f'gpufleet:gpu_sm_active:avg5m{{exported_pod!=""}} < {thr}',
            "1h",
            "info",
            "{{ $labels.exported_namespace }}/{{ $labels.exported_pod }} holds an idle GPU on {{ $labels.node }}",
            f"The GPU is allocated but its SM active ratio stayed below {thr} for an hour: release it (finished"
            " notebook, stuck job).",
        ),
        _alert(
            "GPUNodeGroupFragmented",
            "(node_group:gpufleet_gpus_per_node:max > 1)"
            " and on (node_group) (node_group:gpufleet_gpus_free:sum >= node_group:gpufleet_gpus_per_node:max)"
            " and on (node_group) (node_group:gpufleet_largest_free_block:max < node_group:gpufleet_gpus_per_node:max)"
            " and on (node_group) gpufleet:whole_gpu_node_group:info",
            "30m",
            "warning",
            "Node group {{ $labels.node_group }} is fragmented: a full node's worth of physical GPUs is free, but not"
            " on one node",
            "Jobs that need a whole node (all its GPUs) cannot start although enough GPUs are free in total. Compare"
            " node_group:gpufleet_largest_free_block:max with node_group:gpufleet_gpus_free:sum (whole GPUs on this"
            " group); consolidate or drain a node.",
        ),
    ]
    return [
        {"name": "gpufleet-telemetry.constants", "rules": constants},
        {"name": "gpufleet-telemetry.rules", "rules": records},
        {"name": "gpufleet-telemetry.alerts", "rules": alerts},
    ]


# ---------------------------------------------------------------------------------------------------------
# Stage 7: health
# ---------------------------------------------------------------------------------------------------------


def health_groups() -> list[dict[str, Any]]:
    """Straggler detection per rank against the job's fastest quartile, and node health condition alerts.

    Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.health_groups."""
    by_job = "namespace, training_job"
    records = [
        _record("gpufleet:training_step_seconds:avg5m", f"avg_over_time({TRAINING_STEP_METRIC}[5m])"),
        _record(
            "gpufleet:training_step_seconds:fastest_quartile5m",
            f"quantile by ({by_job}) (0.25, gpufleet:training_step_seconds:avg5m)",
        ),
        # The slowest rank against the fastest quartile: 1 for an even job.
        _record(
            "gpufleet:training_step_seconds:slowest_ratio",
            f"max by ({by_job}) (gpufleet:training_step_seconds:avg5m) / on ({by_job})"
            " gpufleet:training_step_seconds:fastest_quartile5m",
        ),
    ]
    ratio = _fmt(STRAGGLER_RATIO)
    alerts = [
        _alert(
            "TrainingStragglerRank",
            f"(gpufleet:training_step_seconds:avg5m / on ({by_job}) group_left ()"
            f" gpufleet:training_step_seconds:fastest_quartile5m > {ratio}) and on ({by_job}) (count by ({by_job})"
            " (gpufleet:training_step_seconds:avg5m) > 1)",
            "10m",
            "warning",
            "Rank {{ $labels.rank }} of {{ $labels.namespace }}/{{ $labels.training_job }} is a straggler",
            f"Its compute time per step is {{{{ $value | humanize }}}}x the job's fastest quartile of ranks (threshold"
            f" {ratio}x) for 10 minutes; every synchronous step waits for it. The metric is the rank's own compute"
            " before the gradient collective, so look at its GPU ({{ $labels.pod }}): clock event reasons (thermal or"
            " power throttling, GPUThermalThrottling / GPUPowerThrottling), XIDs, ECC and row remapping, a shared or"
            " different GPU, and the host's input pipeline. The network does not show in this metric.",
        ),
        _alert(
            "GPUNodeDCGMUnhealthy",
            f'kube_node_status_condition{{condition="{DCGM_CONDITION}",status="true"}} == 1',
            "1m",
            "critical",
            "DCGM health checks fail on node {{ $labels.node }}",
            "Node Problem Detector set the DCGMUnhealthy condition; the remediation controller cordons the node and"
            " drains it per workload class.",
        ),
        _alert(
            "GPUNodeDCGMHealthUnknown",
            f'kube_node_status_condition{{condition="{DCGM_CONDITION}",status="unknown"}} == 1',
            "15m",
            "warning",
            "DCGM health checks give no verdict on node {{ $labels.node }}",
            "The DCGM health result is missing or stale (the dcgm-health sidecar cannot reach the host engine, or"
            " DCGM stalls: a degrading GPU often stalls DCGM itself). A node the remediation controller cordoned as"
            " unhealthy stays cordoned until the check passes; check the node's nvidia-dcgm and node-problem-detector"
            " pods.",
        ),
        _alert(
            "GPUNodeAcceleratedHardwareNotReady",
            'kube_node_status_condition{condition="AcceleratedHardwareReady",status="false"} == 1',
            "5m",
            "critical",
            "EKS node monitoring agent reports AcceleratedHardwareReady=False on {{ $labels.node }}",
            "EKS node auto repair reboots or replaces the node after the group's minRepairWaitTimeMins (see plan.md,"
            " health stage).",
        ),
    ]
    return [{"name": "gpufleet-health.rules", "rules": records}, {"name": "gpufleet-health.alerts", "rules": alerts}]


# ---------------------------------------------------------------------------------------------------------
# Stage 8: cost
# ---------------------------------------------------------------------------------------------------------


def cost_groups(prices: Mapping[str, float], team_namespaces: Mapping[str, str]) -> list[dict[str, Any]]:
    """GPU-hours (allocated and allocated-but-idle, in physical GPUs) and their price per namespace and per team.

    Why: docs/telemetry-health-cost.md, "Design notes", rules_promql.cost_groups."""
    constants = [
        _record("gpufleet:gpu_hour_price_usd", f"vector({_fmt(price)})", {"node_group": group})
        for group, price in sorted(prices.items())
    ]
    constants += [
        _record("gpufleet:team_namespace:info", "vector(1)", {"namespace": ns, "team": team})
        for ns, team in sorted(team_namespaces.items())
    ]
    hours = []
    for kind in ("allocated", "idle"):
        # GPU-hours accrued in the last hour (the telemetry records are in physical GPUs).
        hours += [
            _record(
                f"namespace_node_group:gpufleet_gpu_hours_{kind}:1h",
                gpu_hours(f"namespace_node_group:gpufleet_gpus_{kind}:sum", 3600),
            ),
            _record(
                f"namespace:gpufleet_gpu_hours_{kind}:1h",
                f"sum by (namespace) (namespace_node_group:gpufleet_gpu_hours_{kind}:1h)",
            ),
            _record(
                f"namespace:gpufleet_gpu_cost_{kind}_usd:1h",
                f"sum by (namespace) (namespace_node_group:gpufleet_gpu_hours_{kind}:1h * on (node_group) group_left ()"
                " gpufleet:gpu_hour_price_usd)",
            ),
            _record(
                f"team:gpufleet_gpu_hours_{kind}:1h",
                f"sum by (team) (namespace:gpufleet_gpu_hours_{kind}:1h * on (namespace) group_left (team)"
                " gpufleet:team_namespace:info)",
            ),
            _record(
                f"team:gpufleet_gpu_cost_{kind}_usd:1h",
                f"sum by (team) (namespace:gpufleet_gpu_cost_{kind}_usd:1h * on (namespace) group_left (team)"
                " gpufleet:team_namespace:info)",
            ),
        ]
    alerts = [
        _alert(
            "TeamGPUsMostlyIdle",
            "(team:gpufleet_gpu_hours_idle:1h / team:gpufleet_gpu_hours_allocated:1h > 0.5) and on (team)"
            " (team:gpufleet_gpu_hours_allocated:1h >= 1)",
            "6h",
            "info",
            "Team {{ $labels.team }} left more than half of its allocated GPU-hours idle for 6 hours",
            "See the GPU cost weekly report dashboard: idle GPU-hours and their cost by team.",
        )
    ]
    return [
        {"name": "gpufleet-cost.constants", "rules": constants},
        {"name": "gpufleet-cost.rules", "rules": hours},
        {"name": "gpufleet-cost.alerts", "rules": alerts},
    ]
