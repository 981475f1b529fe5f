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
    # A 2-node job of 16 ranks, the second node 30% slower. Before: the median (1.15 s) sat between the nodes and
    # 1.3 / 1.15 = 1.13 stayed under 1.2x, so the slow node was never named.
    inputs += [step("two-node", str(r), "1x40") for r in range(8)]
    inputs += [step("two-node", str(r), "1.3x40") for r in range(8, 16)]
    slow = [
        {"exp_labels": {"namespace": "research", "training_job": job, "rank": str(r), "severity": "warning"}}
        for job, ranks in (("llm", [3]), ("two-node", range(8, 16)))
        for r in ranks
    ]
    ratio = "gpufleet:training_step_seconds:slowest_ratio"
    run_rule_tests(
        tmp_path,
        _no_annotations(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": "TrainingStragglerRank", "exp_alerts": []},
                    {"eval_time": "20m", "alertname": "TrainingStragglerRank", "exp_alerts": slow},
                ],
                "promql_expr_test": [
                    {
                        "expr": ratio,
                        "eval_time": "20m",
                        "exp_samples": [
                            {"labels": f'{ratio}{{namespace="research",training_job="{job}"}}', "value": value}
                            for job, value in (("llm", 1.5), ("even", 1), ("two-node", 1.3))
                        ],
                    }
                ],
            }
        ],
    )


def test_straggler_text_points_at_the_rank_gpu_not_the_network(groups: list[dict[str, Any]]) -> None:
    rule = next(r for g in groups for r in g["rules"] if r.get("alert") == "TrainingStragglerRank")
    text = rule["annotations"]["description"]
    assert "compute" in text and "fastest quartile" in text
    assert "NIC" not in text  # the metric is compute time before the collective (issue 30 item 7)


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
