"""Grafana dashboards (JSON models for the sidecar ConfigMaps) of the telemetry and cost stages.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/manifests/dashboards.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gpufleet.plan.manifests.rules_promql import DEVICE, gpu_hours, per_device, window

DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
GROUP = "on (node) group_left (node_group) gpufleet:node_group:info"
DAY, WEEK = 86400, 7 * 86400


def _by_group(metric: str, agg: str = "avg") -> str:
    """`agg` of a DCGM series per node group, each device counted once (pods sharing it have a copy each)."""
    return f"{agg} by (node_group) ({per_device(metric)} * {GROUP})"


def _panel(
    pid: int,
    title: str,
    targets: Sequence[tuple[str, str]],
    x: int,
    y: int,
    *,
    unit: str = "none",
    kind: str = "timeseries",
    w: int = 12,
    h: int = 8,
    instant: bool = False,
) -> dict[str, Any]:
    return {
        "id": pid,
        "type": kind,
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": DATASOURCE,
                "expr": expr,
                "legendFormat": legend,
                **({"instant": True, "format": "table"} if instant else {}),
            }
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def _dashboard(uid: str, title: str, panels: list[dict[str, Any]], time_from: str) -> str:
    model = {
        "uid": uid,
        "title": title,
        "tags": ["gpufleet", "gpu"],
        "editable": False,
        "schemaVersion": 39,
        "time": {"from": time_from, "to": "now"},
        "refresh": "1m",
        "panels": panels,
    }
    return json.dumps(model, indent=2, sort_keys=True) + "\n"


def telemetry_dashboard() -> str:
    """Utilization that tells the truth: naive utilization beside SM active and tensor pipe, framebuffer,
    allocation versus work, fragmentation per node group, and idle GPU-hours by team namespace."""
    panels = [
        _panel(
            1,
            "Naive GPU utilization (DCGM_FI_DEV_GPU_UTIL, %)",
            [(_by_group("DCGM_FI_DEV_GPU_UTIL"), "{{node_group}}")],
            0,
            0,
            unit="percent",
            w=8,
        ),
        _panel(
            2,
            "SM active (ratio)",
            [(f"avg by (node_group) (max by (node_group, {DEVICE}) (gpufleet:gpu_sm_active:avg5m))", "{{node_group}}")],
            8,
            0,
            unit="percentunit",
            w=8,
        ),
        _panel(
            3,
            "Tensor pipe active (ratio)",
            [(_by_group("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), "{{node_group}}")],
            16,
            0,
            unit="percentunit",
            w=8,
        ),
        _panel(
            4,
            "Framebuffer used (ratio)",
            [
                (
                    (
                        f"{_by_group('DCGM_FI_DEV_FB_USED', 'sum')} / ({_by_group('DCGM_FI_DEV_FB_USED', 'sum')} +"
                        f" {_by_group('DCGM_FI_DEV_FB_FREE', 'sum')})"
                    ),
                    "{{node_group}}",
                )
            ],
            0,
            8,
            unit="percentunit",
        ),
        _panel(
            5,
            # One unit per panel: both in physical GPUs (node_group:gpufleet_gpus_allocated:sum counts devices, 4 per
            # time-sliced GPU, 7 per 1g.5gb-partitioned A100).
            "Allocated versus working GPUs per node group (physical GPUs)",
            [
                ("node_group:gpufleet_gpus_held:sum", "{{node_group}} allocated GPUs"),
                ("node_group:gpufleet_gpus_busy:sum", "{{node_group}} GPUs with SM active above threshold"),
            ],
            12,
            8,
        ),
        _panel(
            6,
            "Fragmentation: largest free block versus free devices per node group (devices the scheduler sees)",
            [
                ("node_group:gpufleet_largest_free_block:max", "{{node_group}} largest free block (devices)"),
                ("node_group:gpufleet_gpus_free:sum", "{{node_group}} free devices in total"),
                ("node_group:gpufleet_gpus_per_node:max", "{{node_group}} devices per node"),
            ],
            0,
            16,
        ),
        _panel(
            7,
            "Idle GPU-hours by team namespace (last 24 h, physical GPUs)",
            [(f"sort_desc({gpu_hours('namespace:gpufleet_gpus_idle:sum', DAY)})", "{{namespace}}")],
            12,
            16,
            kind="bargauge",
            instant=True,
        ),
    ]
    return _dashboard("gpufleet-gpu-truth", "GPU fleet: utilization that tells the truth", panels, "now-6h")


def week_total(record: str) -> str:
    """An hourly record summed at every hour of the last week: an hour without GPUs adds nothing (averaging the
    hours that exist and multiplying by 168 would count a team active one day in seven seven times)."""
    return f"sum_over_time({record}{window(WEEK, '1h')})"


def cost_dashboard() -> str:
    """The weekly report for budget owners: GPU-hours and their cost by team over the last 7 days."""
    panels = [
        _panel(
            1,
            "Last 7 days by team: allocated and idle GPU-hours (physical GPUs), cost (USD)",
            [
                (week_total("team:gpufleet_gpu_hours_allocated:1h"), "allocated GPU-hours"),
                (week_total("team:gpufleet_gpu_hours_idle:1h"), "idle GPU-hours"),
                (week_total("team:gpufleet_gpu_cost_allocated_usd:1h"), "cost USD"),
                (week_total("team:gpufleet_gpu_cost_idle_usd:1h"), "idle cost USD"),
            ],
            0,
            0,
            kind="table",
            w=24,
            instant=True,
        ),
        _panel(
            2,
            "Idle share of allocated GPU-hours by team",
            [("team:gpufleet_gpu_hours_idle:1h / team:gpufleet_gpu_hours_allocated:1h", "{{team}}")],
            0,
            8,
            unit="percentunit",
        ),
        _panel(
            3,
            "GPU spend rate by namespace (USD per hour)",
            [("namespace:gpufleet_gpu_cost_allocated_usd:1h", "{{namespace}}")],
            12,
            8,
            unit="currencyUSD",
        ),
    ]
    return _dashboard("gpufleet-gpu-cost", "GPU fleet: cost by team (weekly report)", panels, "now-7d")
