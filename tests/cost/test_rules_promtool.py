"""The cost stage's rule groups (with the telemetry groups they build on) under the real promtool: allocated
and idle GPU-hours and their price per namespace and team."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.promtool import CASES, check_rules, run_rule_tests, series, stage_rule_groups

SPEC = CASES / "observability-install" / "fleet.yaml"  # a100: 2.75 USD/GPU-hour from the spec; team research


def _groups() -> list[dict[str, Any]]:
    return stage_rule_groups(SPEC, "prod", "telemetry") + stage_rule_groups(SPEC, "prod", "cost")


def test_promtool_check_rules(tmp_path: Path) -> None:
    assert "SUCCESS" in check_rules(tmp_path, stage_rule_groups(SPEC, "prod", "cost"))


def test_allocated_and_idle_gpu_hours_and_cost_by_team(tmp_path: Path) -> None:
    m = "x200"
    inputs = [
        series("kube_node_labels", {"node": "n1", "label_gpufleet_io_node_group": "a100"}, f"1{m}"),
        series(
            "kube_node_status_allocatable", {"node": "n1", "resource": "nvidia_com_gpu", "unit": "integer"}, f"8{m}"
        ),
        series("kube_node_status_condition", {"node": "n1", "condition": "Ready", "status": "true"}, f"1{m}"),
        series("kube_node_spec_unschedulable", {"node": "n1"}, f"0{m}"),
        # research holds 2 GPUs for the whole window; one of them idles.
        series(
            "kube_pod_container_resource_requests",
            {
                "namespace": "research",
                "pod": "train",
                "container": "main",
                "node": "n1",
                "resource": "nvidia_com_gpu",
                "unit": "integer",
            },
            f"2{m}",
        ),
        series("kube_pod_status_phase", {"namespace": "research", "pod": "train", "phase": "Running"}, f"1{m}"),
        series(
            "DCGM_FI_PROF_SM_ACTIVE",
            {
                "node": "n1",
                "gpu": "0",
                "namespace": "gpu-operator",
                "exported_namespace": "research",
                "exported_pod": "train",
            },
            f"0.7{m}",
        ),
        series(
            "DCGM_FI_PROF_SM_ACTIVE",
            {
                "node": "n1",
                "gpu": "1",
                "namespace": "gpu-operator",
                "exported_namespace": "research",
                "exported_pod": "train",
            },
            f"0{m}",
        ),
    ]

    def sample(expr: str, labels: str, value: float) -> dict[str, Any]:
        return {"expr": expr, "eval_time": "150m", "exp_samples": [{"labels": f"{expr}{{{labels}}}", "value": value}]}

    run_rule_tests(
        tmp_path,
        _groups(),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": [
                    {
                        "expr": "gpufleet:gpu_hour_price_usd",
                        "eval_time": "150m",
                        # a100 from the spec; l4 (g6.12xlarge) from the price table: 4.6016 USD / 4 GPUs
                        "exp_samples": [
                            {"labels": 'gpufleet:gpu_hour_price_usd{node_group="a100"}', "value": 2.75},
                            {"labels": 'gpufleet:gpu_hour_price_usd{node_group="l4"}', "value": 1.1504},
                        ],
                    },
                    sample("namespace:gpufleet_gpu_hours_allocated:1h", 'namespace="research"', 2),
                    sample("namespace:gpufleet_gpu_hours_idle:1h", 'namespace="research"', 1),
                    sample("team:gpufleet_gpu_hours_allocated:1h", 'team="research"', 2),
                    sample("team:gpufleet_gpu_hours_idle:1h", 'team="research"', 1),
                    sample("team:gpufleet_gpu_cost_allocated_usd:1h", 'team="research"', 5.5),
                    sample("team:gpufleet_gpu_cost_idle_usd:1h", 'team="research"', 2.75),
                ],
            }
        ],
    )
