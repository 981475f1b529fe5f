"""The health stage's rule groups under the real promtool: a straggler rank fires (spread, not mean), an even
job stays quiet; the DCGMUnhealthy node condition alerts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.promtool import CASES, check_rules, run_rule_tests, series, stage_rule_groups


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    return stage_rule_groups(CASES / "observability-install" / "fleet.yaml", "prod", "health")


def _no_annotations(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]} for g in groups]


def step(job: str, rank: str, values: str) -> dict[str, str]:
    # As scraped from a training pod by a PodMonitor: the pod's namespace is the target namespace.
    return series(
        "gpufleet_training_step_seconds", {"namespace": "research", "training_job": job, "rank": rank}, values
    )


def test_promtool_check_rules(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    assert "SUCCESS" in check_rules(tmp_path, groups)


def test_straggler_rank_fires_and_even_job_stays_quiet(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    inputs = [step("llm", str(r), "1x40") for r in range(3)] + [step("llm", "3", "1.5x40")]
    # Every rank slower but even: the mean moves, the spread does not: quiet.
    inputs += [step("even", str(r), "3x40") for r in range(4)]
    run_rule_tests(
        tmp_path,
        _no_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": "TrainingStragglerRank", "exp_alerts": []},
                    {
                        "eval_time": "20m",
                        "alertname": "TrainingStragglerRank",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "namespace": "research",
                                    "training_job": "llm",
                                    "rank": "3",
                                    "severity": "warning",
                                }
                            }
                        ],
                    },
                ],
                "promql_expr_test": [
                    {
                        "expr": "gpufleet:training_step_seconds:spread_ratio",
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": (
                                    'gpufleet:training_step_seconds:spread_ratio{namespace="research",training_job="llm"}'
                                ),
                                "value": 0.5,
                            },
                            {
                                "labels": (
                                    'gpufleet:training_step_seconds:spread_ratio{namespace="research",training_job="even"}'
                                ),
                                "value": 0,
                            },
                        ],
                    }
                ],
            }
        ],
    )


def test_dcgm_unhealthy_condition_alerts(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    cond = "kube_node_status_condition"
    inputs = [
        series(cond, {"node": "bad", "condition": "DCGMUnhealthy", "status": "true"}, "1x10"),
        series(cond, {"node": "good", "condition": "DCGMUnhealthy", "status": "true"}, "0x10"),
        series(cond, {"node": "good", "condition": "DCGMUnhealthy", "status": "false"}, "1x10"),
    ]
    # kube-state-metrics emits one series per status (true, false, unknown), 1 on the current one.
    for status, values in (("true", "1x3 0x26"), ("false", "0x30"), ("unknown", "0x3 1x26")):
        inputs.append(series(cond, {"node": "stalled", "condition": "DCGMUnhealthy", "status": status}, values))
    for status, values in (("true", "0x30"), ("false", "1x25 0x5"), ("unknown", "0x25 1x5")):
        inputs.append(series(cond, {"node": "blip", "condition": "DCGMUnhealthy", "status": status}, values))
    run_rule_tests(
        tmp_path,
        _no_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {
                        "eval_time": "5m",
                        "alertname": "GPUNodeDCGMUnhealthy",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "node": "bad",
                                    "condition": "DCGMUnhealthy",
                                    "status": "true",
                                    "severity": "critical",
                                }
                            }
                        ],
                    },
                    {
                        "eval_time": "25m",
                        "alertname": "GPUNodeDCGMHealthUnknown",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "node": "stalled",
                                    "condition": "DCGMUnhealthy",
                                    "status": "unknown",
                                    "severity": "warning",
                                }
                            }
                        ],
                    },
                    {"eval_time": "10m", "alertname": "GPUNodeDCGMHealthUnknown", "exp_alerts": []},
                ],
            }
        ],
    )
