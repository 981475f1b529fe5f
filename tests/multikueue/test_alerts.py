"""The MultiKueue manager's alerts (issue 44 item 4) under the real promtool: a worker's MultiKueueCluster inactive
for 10 minutes, one never reported, and the credentials CronJob overdue; kube-state-metrics exports the conditions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.promtool import CASES, check_rules, run_rule_tests, series, stage_rule_groups

SPEC = CASES / "multikueue" / "fleet.yaml"
MANAGER = "prod.research-manager"
TREES = Path(__file__).resolve().parents[1] / "golden" / "trees" / "multikueue" / MANAGER


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    return stage_rule_groups(SPEC, MANAGER, "telemetry")


def _bare(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]} for g in groups]


def _active(cluster: str, values: str) -> dict[str, str]:
    return series("gpufleet_multikueue_cluster_condition", {"cluster": cluster, "type": "Active"}, values)


def test_promtool_check_rules(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    assert "SUCCESS" in check_rules(tmp_path, groups)


def test_an_inactive_worker_alerts_after_ten_minutes_and_an_active_one_never(
    tmp_path: Path, groups: list[dict[str, Any]]
) -> None:
    inputs = [_active("research-use1", "1x30"), _active("research-usw2", "1x4 0x26")]
    run_rule_tests(
        tmp_path,
        _bare(groups),
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {"eval_time": "12m", "alertname": "MultiKueueClusterInactive", "exp_alerts": []},
                    {
                        "eval_time": "16m",
                        "alertname": "MultiKueueClusterInactive",
                        "exp_alerts": [{"exp_labels": {"cluster": "research-usw2", "severity": "critical"}}],
                    },
                    {"eval_time": "16m", "alertname": "MultiKueueClusterUnreported", "exp_alerts": []},
                ],
            }
        ],
    )


def test_a_worker_never_reported_alerts_after_thirty_minutes(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    run_rule_tests(
        tmp_path,
        _bare(groups),
        [
            {
                "interval": "1m",
                "input_series": [_active("research-use1", "1x40")],
                "alert_rule_test": [
                    {
                        "eval_time": "35m",
                        "alertname": "MultiKueueClusterUnreported",
                        "exp_alerts": [
                            {"exp_labels": {"cluster": "research-usw2", "type": "Active", "severity": "warning"}}
                        ],
                    }
                ],
            }
        ],
    )


def test_a_cronjob_without_a_success_for_thirteen_hours_alerts(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    # last success at t=0 (0 s since the epoch): overdue once time() passes 13 h
    last = series(
        "kube_cronjob_status_last_successful_time",
        {"namespace": "kueue-system", "cronjob": "gpufleet-multikueue-credentials"},
        "0+0x900",
    )
    labels = {"namespace": "kueue-system", "cronjob": "gpufleet-multikueue-credentials", "severity": "warning"}
    run_rule_tests(
        tmp_path,
        _bare(groups),
        [
            {
                "interval": "1m",
                "input_series": [last],
                "alert_rule_test": [
                    {"eval_time": "12h", "alertname": "MultiKueueCredentialsOverdue", "exp_alerts": []},
                    {
                        "eval_time": "14h",
                        "alertname": "MultiKueueCredentialsOverdue",
                        "exp_alerts": [{"exp_labels": labels}],
                    },
                ],
            }
        ],
    )


def test_kube_state_metrics_exports_the_conditions_the_rules_read() -> None:
    release = yaml.safe_load((TREES / "02-telemetry" / "helm" / "kube-prometheus-stack.yaml").read_text())
    ksm = release["values"]["kube-state-metrics"]
    (resource,) = ksm["customResourceState"]["config"]["spec"]["resources"]
    assert resource["groupVersionKind"] == {
        "group": "kueue.x-k8s.io",
        "version": "v1beta2",
        "kind": "MultiKueueCluster",
    }
    assert f"{resource['metricNamePrefix']}_{resource['metrics'][0]['name']}" == "gpufleet_multikueue_cluster_condition"
    assert ksm["rbac"]["extraRules"] == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["multikueueclusters"], "verbs": ["list", "watch"]}
    ]
    assert ksm["metricLabelsAllowlist"]  # the fleet's own kube-state-metrics values stay
