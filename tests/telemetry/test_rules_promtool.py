"""The telemetry stage's rule groups, extracted from its rendered PrometheusRule, under the real promtool:
`check rules`, then `test rules` with synthetic series proving each alert fires and stays quiet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.promtool import CASES, ROOT, check_rules, run_rule_tests, series, stage_rule_groups

SPEC = CASES / "observability-install" / "fleet.yaml"  # idleSmActiveBelow: 0.1


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    from tests.promtool import stage_rule_groups

    return stage_rule_groups(SPEC, "prod", "telemetry")


def node(
    name: str, group: str, gpus: int, *, ready: bool = True, label: bool = True, minutes: int = 180
) -> list[dict[str, str]]:
    """kube-state-metrics series of one GPU node."""
    n = f"x{minutes}"
    out = [
        series(
            "kube_node_status_condition",
            {"node": name, "condition": "Ready", "status": "true"},
            f"{1 if ready else 0}{n}",
        ),
        series("kube_node_spec_unschedulable", {"node": name}, f"0{n}"),
        series(
            "kube_node_spec_taint",
            {"node": name, "key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            f"1{n}",
        ),
        series(
            "kube_node_status_allocatable",
            {"node": name, "resource": "nvidia_com_gpu", "unit": "integer"},
            f"{gpus}{n}",
        ),
    ]
    if label:
        out.append(series("kube_node_labels", {"node": name, "label_gpufleet_io_node_group": group}, f"1{n}"))
    return out


def pod(ns: str, name: str, node_name: str, gpus: int, minutes: int = 180) -> list[dict[str, str]]:
    return [
        series(
            "kube_pod_container_resource_requests",
            {
                "namespace": ns,
                "pod": name,
                "container": "main",
                "node": node_name,
                "resource": "nvidia_com_gpu",
                "unit": "integer",
            },
            f"{gpus}x{minutes}",
        ),
        series("kube_pod_status_phase", {"namespace": ns, "pod": name, "phase": "Running"}, f"1x{minutes}"),
    ]


def dcgm(metric: str, node_name: str, gpu: str, values: str, **extra: str) -> dict[str, str]:
    # As scraped by our ServiceMonitor: target namespace gpu-operator, exporter pod labels renamed exported_*.
    return series(metric, {"node": node_name, "gpu": gpu, "namespace": "gpu-operator", **extra}, values)


def test_promtool_check_rules(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    assert "SUCCESS" in check_rules(tmp_path, groups)


def test_idle_allocated_gpu_fires_and_busy_gpu_stays_quiet(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    inputs = node("n1", "a100", 8) + pod("research", "idle", "n1", 1) + pod("research", "busy", "n1", 1)
    inputs += [
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "n1", "0", "0.02x180", exported_namespace="research", exported_pod="idle"),
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "n1", "1", "0.8x180", exported_namespace="research", exported_pod="busy"),
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "n1", "2", "0x180"),  # not allocated: not "allocated idle"
    ]
    idle_labels = {
        "alertname": "GPUAllocatedIdle",
        "severity": "info",
        "node": "n1",
        "gpu": "0",
        "namespace": "gpu-operator",
        "node_group": "a100",
        "exported_namespace": "research",
        "exported_pod": "idle",
    }
    run_rule_tests(
        tmp_path,
        groups,
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "30m", "alertname": "GPUAllocatedIdle", "exp_alerts": []},
                    {
                        "eval_time": "90m",
                        "alertname": "GPUAllocatedIdle",
                        "exp_alerts": [
                            {
                                "exp_labels": idle_labels,
                                "exp_annotations": {
                                    "summary": "research/idle holds an idle GPU on n1",
                                    "description": (
                                        "The GPU is allocated but its SM active ratio stayed below 0.1 for an hour:"
                                        " release it (finished notebook, stuck job)."
                                    ),
                                },
                            }
                        ],
                    },
                ],
                "promql_expr_test": [
                    {
                        "expr": "node_group:gpufleet_gpus_allocated:sum",
                        "eval_time": "10m",
                        "exp_samples": [
                            {"labels": 'node_group:gpufleet_gpus_allocated:sum{node_group="a100"}', "value": 2}
                        ],
                    },
                    {
                        "expr": "node_group:gpufleet_gpus_busy:sum",
                        "eval_time": "10m",
                        "exp_samples": [{"labels": 'node_group:gpufleet_gpus_busy:sum{node_group="a100"}', "value": 1}],
                    },
                    {
                        "expr": "namespace:gpufleet_gpus_idle:sum",
                        "eval_time": "10m",
                        "exp_samples": [
                            {"labels": 'namespace:gpufleet_gpus_idle:sum{namespace="research"}', "value": 1}
                        ],
                    },
                    {
                        "expr": "namespace:gpufleet_gpus_allocated:sum",
                        "eval_time": "10m",
                        "exp_samples": [
                            {"labels": 'namespace:gpufleet_gpus_allocated:sum{namespace="research"}', "value": 2}
                        ],
                    },
                    {
                        "expr": "node_group:gpufleet_largest_free_block:max",
                        "eval_time": "10m",
                        "exp_samples": [
                            {"labels": 'node_group:gpufleet_largest_free_block:max{node_group="a100"}', "value": 6}
                        ],
                    },
                ],
            }
        ],
    )


def _alert_only(labels: dict[str, str]) -> list[dict[str, Any]]:
    return [{"exp_labels": labels}]


def _strip_annotations(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """promtool compares annotations too; the scenario tests below assert labels and timing only."""
    return [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]} for g in groups]


def test_throttled_gpu_fires_per_reason_bit(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    reasons = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
    inputs = node("n1", "a100", 8) + [
        dcgm(reasons, "n1", "0", "64x30"),  # HW thermal
        dcgm(reasons, "n1", "1", "32x30"),  # SW thermal
        dcgm(reasons, "n1", "2", "136x30"),  # HW power brake + HW slowdown
        dcgm(reasons, "n1", "3", "4x30"),  # SW power cap: normal at full load, quiet
        dcgm(reasons, "n1", "4", "1x30"),  # idle, quiet
        dcgm(reasons, "n1", "5", "64 64 0x28"),  # thermal for two minutes only, quiet
    ]
    base = {"node": "n1", "namespace": "gpu-operator", "severity": "warning"}
    run_rule_tests(
        tmp_path,
        _strip_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "3m", "alertname": "GPUThermalThrottling", "exp_alerts": []},
                    {
                        "eval_time": "10m",
                        "alertname": "GPUThermalThrottling",
                        "exp_alerts": [{"exp_labels": {**base, "gpu": "0"}}, {"exp_labels": {**base, "gpu": "1"}}],
                    },
                    {
                        "eval_time": "10m",
                        "alertname": "GPUPowerThrottling",
                        "exp_alerts": [{"exp_labels": {**base, "gpu": "2"}}],
                    },
                ],
            }
        ],
    )


def test_ready_gpu_node_with_zero_allocatable_fires(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    inputs = node("ok", "a100", 8) + node("broken", "a100", 0) + node("booting", "a100", 0, ready=False)
    # A node whose device plugin never registered has no allocatable series at all, only its taint.
    inputs += [
        series("kube_node_status_condition", {"node": "unregistered", "condition": "Ready", "status": "true"}, "1x60"),
        series(
            "kube_node_spec_taint",
            {"node": "unregistered", "key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            "1x60",
        ),
    ]
    alert = {"alertname": "GPUNodeZeroAllocatable", "severity": "critical"}
    run_rule_tests(
        tmp_path,
        _strip_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": "GPUNodeZeroAllocatable", "exp_alerts": []},
                    {
                        "eval_time": "15m",
                        "alertname": "GPUNodeZeroAllocatable",
                        "exp_alerts": [
                            {"exp_labels": {**alert, "node": "broken"}},
                            {"exp_labels": {**alert, "node": "unregistered"}},
                        ],
                    },
                ],
            }
        ],
    )


def test_xid_alerts_fire_on_a_change_and_do_not_stick_or_blame_the_next_pod(
    tmp_path: Path, groups: list[dict[str, Any]]
) -> None:
    # DCGM_FI_DEV_XID_ERRORS holds the last XID until a driver reset (NVIDIA/DCGM#277, dcgm-exporter#500). Before:
    # `== 79` / `> 0` fired for as long as the value stayed, and again on the series of the next pod to hold the GPU.
    xid = "DCGM_FI_DEV_XID_ERRORS"
    inputs = [
        dcgm(xid, "n1", "0", "0 0 79x8 stale", exported_namespace="t", exported_pod="dead"),
        # The next pod on gpu 0: its series starts with the stale 79 and never changes.
        dcgm(xid, "n1", "0", "_x10 79x40", exported_namespace="t", exported_pod="next"),
        dcgm(xid, "n1", "1", "0 0 13x48", exported_namespace="t", exported_pod="buggy"),
        dcgm(xid, "n1", "2", "0x50"),
        # A driver reset clears the value: a change to 0 is no XID.
        dcgm(xid, "n1", "3", "13x2 0x48"),
    ]
    hw = {"node": "n1", "namespace": "gpu-operator", "gpu": "0", "severity": "critical"}
    app = {"node": "n1", "namespace": "gpu-operator", "gpu": "1", "severity": "warning"}
    run_rule_tests(
        tmp_path,
        _strip_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {
                        "eval_time": "3m",
                        "alertname": "GPUXidHardwareError",
                        "exp_alerts": [{"exp_labels": {**hw, "exported_namespace": "t", "exported_pod": "dead"}}],
                    },
                    {
                        "eval_time": "3m",
                        "alertname": "GPUXidError",
                        "exp_alerts": [{"exp_labels": {**app, "exported_namespace": "t", "exported_pod": "buggy"}}],
                    },
                    {"eval_time": "20m", "alertname": "GPUXidHardwareError", "exp_alerts": []},
                    {"eval_time": "20m", "alertname": "GPUXidError", "exp_alerts": []},
                ],
            }
        ],
    )


def test_naive_utilization_above_90_with_low_sm_active_fires(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    inputs = [
        dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "0", "100x30"),
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "n1", "0", "0.1x30"),
        dcgm("DCGM_FI_DEV_GPU_UTIL", "n1", "1", "100x30"),
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "n1", "1", "0.8x30"),
    ]
    run_rule_tests(
        tmp_path,
        _strip_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "10m", "alertname": "GPUUtilizationMisleading", "exp_alerts": []},
                    {
                        "eval_time": "20m",
                        "alertname": "GPUUtilizationMisleading",
                        "exp_alerts": [{"exp_labels": {"node": "n1", "gpu": "0", "severity": "info"}}],
                    },
                ],
            }
        ],
    )


def test_fragmentation_alerts_on_largest_free_block_not_total(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    # Group "a100": two 8-GPU nodes with 4 GPUs used on each: 8 free in total, none on one node.
    # Group "l4": the same 8 GPUs used, all on one node: a whole node is free.
    inputs = node("f1", "a100", 8) + node("f2", "a100", 8) + node("p1", "l4", 8) + node("p2", "l4", 8)
    inputs += pod("t", "f1-job", "f1", 4) + pod("t", "f2-job", "f2", 4) + pod("t", "p1-job", "p1", 8)
    run_rule_tests(
        tmp_path,
        _strip_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "20m", "alertname": "GPUNodeGroupFragmented", "exp_alerts": []},
                    {
                        "eval_time": "40m",
                        "alertname": "GPUNodeGroupFragmented",
                        "exp_alerts": [{"exp_labels": {"node_group": "a100", "severity": "warning"}}],
                    },
                ],
                "promql_expr_test": [
                    {
                        "expr": "node_group:gpufleet_gpus_free:sum",
                        "eval_time": "5m",
                        "exp_samples": [
                            {"labels": 'node_group:gpufleet_gpus_free:sum{node_group="a100"}', "value": 8},
                            {"labels": 'node_group:gpufleet_gpus_free:sum{node_group="l4"}', "value": 8},
                        ],
                    },
                    {
                        "expr": "node_group:gpufleet_largest_free_block:max",
                        "eval_time": "5m",
                        "exp_samples": [
                            {"labels": 'node_group:gpufleet_largest_free_block:max{node_group="a100"}', "value": 4},
                            {"labels": 'node_group:gpufleet_largest_free_block:max{node_group="l4"}', "value": 8},
                        ],
                    },
                ],
            }
        ],
    )


def test_fragmentation_alert_is_scoped_to_groups_where_a_pod_can_take_a_whole_node(tmp_path: Path) -> None:
    """The example fleet: h100 (8 whole GPUs per node) can be fragmented; notebooks (one A10G time-sliced 4 ways:
    no pod takes more than one replica) and a100-mig (56 1g.5gb slices per node) cannot block a whole-node pod.
    Before: the alert compared devices on every group and fired on all three."""
    groups = stage_rule_groups(ROOT / "fleet.yaml", "prod", "telemetry")
    inputs = node("h1", "h100", 8) + node("h2", "h100", 8) + pod("t", "h1-job", "h1", 4) + pod("t", "h2-job", "h2", 4)
    inputs += node("nb1", "notebooks", 4) + node("nb2", "notebooks", 4)
    inputs += pod("t", "nb-a", "nb1", 2) + pod("t", "nb-b", "nb2", 2)
    inputs += node("m1", "a100-mig", 56) + node("m2", "a100-mig", 56)
    inputs += pod("t", "m-a", "m1", 28) + pod("t", "m-b", "m2", 28)
    run_rule_tests(
        tmp_path,
        _strip_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {
                        "eval_time": "40m",
                        "alertname": "GPUNodeGroupFragmented",
                        "exp_alerts": [{"exp_labels": {"node_group": "h100", "severity": "warning"}}],
                    }
                ],
                "promql_expr_test": [
                    {
                        "expr": "gpufleet:whole_gpu_node_group:info",
                        "eval_time": "5m",
                        "exp_samples": [
                            {"labels": 'gpufleet:whole_gpu_node_group:info{node_group="h100"}', "value": 1},
                            {"labels": 'gpufleet:whole_gpu_node_group:info{node_group="l40s"}', "value": 1},
                        ],
                    }
                ],
            }
        ],
    )
