"""The Grafana dashboards: every panel queries only series that a rule records or an exporter emits, and the
GPU-hour panels count time (promtool evaluates the panel expressions)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.manifests import dashboards, telemetry
from tests.promtool import ROOT, run_rule_tests, series, stage_rule_groups

# What kube-state-metrics emits that the rules read (kubernetes/kube-state-metrics docs/metrics/).
KSM_METRICS = {
    "kube_node_labels", "kube_node_status_allocatable", "kube_node_status_condition", "kube_node_spec_unschedulable",
    "kube_node_spec_taint", "kube_pod_container_resource_requests", "kube_pod_status_phase",
}  # fmt: skip
# PromQL words that look like names in an expression.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}


def metric_names(expr: str) -> set[str]:
    """Series names an expression selects: identifiers that are not functions, keywords, label names (inside
    `{...}`, `by (...)`, `on (...)`, `group_left (...)`) or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group() in KEYWORDS:
            continue
        names.add(match.group())
    return names


def _targets(dashboard_json: str) -> list[tuple[str, str]]:
    model = json.loads(dashboard_json)
    return [(p["title"], t["expr"]) for p in model["panels"] for t in p["targets"]]


def test_metric_names_parser() -> None:
    assert metric_names(
        'sum by (node_group) (max by (node, gpu) (X{a="b"}) * on (node) group_left (node_group) y:z) / vector(1)'
    ) == {"X", "y:z"}
    assert metric_names("sum_over_time(a:b[23h59m59s:1m]) / 60") == {"a:b"}


@pytest.fixture(scope="module")
def recorded() -> set[str]:
    groups = stage_rule_groups(ROOT / "fleet.yaml", "prod", "telemetry") + stage_rule_groups(
        ROOT / "fleet.yaml", "prod", "cost"
    )
    return {r["record"] for g in groups for r in g["rules"] if "record" in r}


@pytest.mark.parametrize(
    "dashboard", [dashboards.telemetry_dashboard, dashboards.cost_dashboard], ids=["gpu-truth", "gpu-cost"]
)
def test_every_panel_queries_recorded_or_exported_series(dashboard: Any, recorded: set[str]) -> None:
    emitted = {field for field, kind, _ in telemetry.DCGM_FIELDS if kind != "label"} | KSM_METRICS
    for title, expr in _targets(dashboard()):
        unknown = metric_names(expr) - recorded - emitted
        assert not unknown, f"panel {title!r} queries {sorted(unknown)}, which no rule records and no exporter emits"


def _panel_expr(dashboard_json: str, title_start: str) -> str:
    """The first query of the panel whose title starts with `title_start`."""
    return next(expr for title, expr in _targets(dashboard_json) if title.startswith(title_start))


def test_weekly_report_counts_a_team_active_one_day_in_seven_once(tmp_path: Path) -> None:
    # vision held 8 GPUs for 24 hours (its hourly record is 8 for 24 hours), then nothing for six days.
    # Averaging the hours that exist and multiplying by 168 made that 1344 GPU-hours, seven times the 192.
    allocated = _panel_expr(dashboards.cost_dashboard(), "Last 7 days")
    inputs = [
        series("team:gpufleet_gpu_hours_allocated:1h", {"team": "vision"}, "_ 8x23 stale"),
        series("team:gpufleet_gpu_hours_allocated:1h", {"team": "speech"}, "_ 2x167"),
    ]
    run_rule_tests(
        tmp_path,
        [],
        [
            {
                "interval": "1h",
                "input_series": inputs,
                "promql_expr_test": [
                    {
                        "expr": "avg_over_time(team:gpufleet_gpu_hours_allocated:1h[7d]) * 168",
                        "eval_time": "168h",
                        "exp_samples": [
                            {"labels": '{team="speech"}', "value": 336},
                            {"labels": '{team="vision"}', "value": 1344},
                        ],
                    },
                    {
                        "expr": allocated,
                        "eval_time": "168h",
                        "exp_samples": [
                            {"labels": '{team="speech"}', "value": 336},
                            {"labels": '{team="vision"}', "value": 192},
                        ],
                    },
                ],
            }
        ],
    )


def test_daily_idle_panel_counts_minutes_not_samples(tmp_path: Path) -> None:
    # 4 idle GPUs for 30 minutes of the day: 2 GPU-hours (the 24 h average of the samples present x 24 said 96).
    idle = _panel_expr(dashboards.telemetry_dashboard(), "Idle GPU-hours")
    inputs = [series("namespace:gpufleet_gpus_idle:sum", {"namespace": "vision"}, "_x600 4x29 stale")]
    run_rule_tests(
        tmp_path,
        [],
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": [
                    {"expr": idle, "eval_time": "24h", "exp_samples": [{"labels": '{namespace="vision"}', "value": 2}]}
                ],
            }
        ],
    )
