"""Telemetry on DRA groups (issue 43 item 6): what the GPU Operator's dcgm-exporter is told, the RBAC gpufleet grants
it, the node label kube-state-metrics exports, and what plan.md says of the figures. The rules themselves run under
promtool in tests/dra/test_telemetry_promtool.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text
from tests.promtool import CASES

SPEC = CASES / "dra-mixed" / "fleet.yaml"
RBAC = "gpufleet-dcgm-exporter-resourceslices"


def _plan(patch: Any = None) -> RolloutPlan:
    data = yaml.safe_load(SPEC.read_text())
    if patch:
        patch(data)
    fleet = load_fleet_text(yaml.safe_dump(data), env="prod").environments["prod"]
    return build_plan(fleet, "prod")


def _time_sliced(data: dict[str, Any]) -> None:
    l4 = next(g for g in data["nodeGroups"] if g["name"] == "l4")
    l4["sharing"] = {"strategy": "TimeSlicing", "replicas": 4}


def _no_dra(data: dict[str, Any]) -> None:
    dra = next(g for g in data["nodeGroups"] if g["name"] == "h100-dra")
    del dra["devices"]


def _objects(plan: RolloutPlan, stage: str) -> dict[str, Any]:
    content = next(s for s in plan.stages if s.name == stage).content
    return {r.id: r.args for r in content.resources}


def _exporter_env(plan: RolloutPlan) -> list[dict[str, str]]:
    env: list[dict[str, str]] = _objects(plan, "foundation")["helm-gpu-operator"]["values"]["dcgmExporter"]["env"]
    return env


def _stage_notes(plan: RolloutPlan, stage: str) -> str:
    return "\n".join(next(s for s in plan.stages if s.name == stage).content.notes)


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    return _plan()


def test_the_exporter_maps_claimed_gpus_to_pods_where_no_group_shares_gpus(plan: RolloutPlan) -> None:
    # KUBERNETES_VIRTUAL_GPUS would return before the DRA mapping; no group time-slices here, so it is left out.
    assert _exporter_env(plan) == [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}]
    foundation = _objects(plan, "foundation")
    role = foundation[f"clusterrole-cluster-{RBAC}"]["object"]
    assert role["rules"] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]}
    ]
    binding = foundation[f"clusterrolebinding-cluster-{RBAC}"]["object"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RBAC}
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}
    ]
    # The exporter waits for its ResourceSlice informer to sync before it serves: the grant exists first.
    operator = next(r for s in plan.stages for r in s.content.resources if r.id == "helm-gpu-operator")
    assert {f"clusterrole-cluster-{RBAC}", f"clusterrolebinding-cluster-{RBAC}"} <= set(operator.depends_on)


def test_kube_state_metrics_exports_the_device_manager_label_of_a_fleet_with_dra_groups(plan: RolloutPlan) -> None:
    values = _objects(plan, "telemetry")["helm-kube-prometheus-stack"]["values"]
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[gpufleet.io/node-group,gpufleet.io/workload-class,gpufleet.io/device-manager]"
    ]
    assert "idle GPUs from dcgm-exporter, which maps each claimed GPU to its pod" in _stage_notes(plan, "telemetry")
    assert (
        "| h100-dra | 1 `gpu.nvidia.com` | 1 GPU | the GPU's SMs stayed below the threshold while the pod held it"
        " (dcgm-exporter maps a claimed GPU to its pod: KUBERNETES_ENABLE_DRA) |"
    ) in _stage_notes(plan, "cost")


def test_beside_a_time_sliced_group_the_dra_groups_idle_gpus_are_not_counted() -> None:
    plan = _plan(_time_sliced)
    assert _exporter_env(plan) == [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]
    assert not any(RBAC in rid for rid in _objects(plan, "foundation"))
    assert (
        "no idle GPUs: dcgm-exporter maps no claimed GPU to its pod while `KUBERNETES_VIRTUAL_GPUS` is on for the"
        " time-sliced and MPS groups"
    ) in _stage_notes(plan, "telemetry")
    assert (
        "| h100-dra | 1 `gpu.nvidia.com` | 1 GPU | not counted: dcgm-exporter maps no claimed GPU to its pod while"
        " KUBERNETES_VIRTUAL_GPUS is on for the time-sliced and MPS groups (docs/dra.md); allocated GPU-hours are"
        " counted |"
    ) in _stage_notes(plan, "cost")


def test_a_fleet_without_dra_groups_keeps_its_exporter_settings() -> None:
    plan = _plan(_no_dra)
    assert _exporter_env(plan) == [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]
    values = _objects(plan, "telemetry")["helm-kube-prometheus-stack"]["values"]
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[gpufleet.io/node-group,gpufleet.io/workload-class]"
    ]
    rules = _objects(plan, "telemetry")["prometheusrule-monitoring-gpufleet-telemetry"]["object"]
    assert "resourceclaim" not in yaml.safe_dump(rules)
    assert "DRA groups" not in _stage_notes(plan, "telemetry")
