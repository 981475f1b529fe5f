"""Telemetry manifests: the DCGM CSV, the operator values, the ServiceMonitor, kube-prometheus-stack values,
and that the rule expressions name the right metrics and labels."""

from __future__ import annotations

import json

from gpufleet.plan.manifests import dashboards, rules_promql, telemetry
from gpufleet.rules.pipeline import load_fleet
from tests.promtool import CASES

INSTALL = load_fleet(str(CASES / "observability-install" / "fleet.yaml"), "prod").environments["prod"]
EXISTING = load_fleet(str(CASES / "observability-existing" / "fleet.yaml"), "prod").environments["prod"]


def test_csv_enables_the_profiling_and_fault_counters() -> None:
    csv = telemetry.dcgm_metrics_csv()
    fields = [line.split(",")[0] for line in csv.splitlines() if line and not line.startswith("#")]
    for field in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                  "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"):  # fmt: skip
        assert field in fields
    # The exporter reads the file as CSV: exactly three fields, so no comma in a help text.
    assert all(len(line.split(",")) == 3 for line in csv.splitlines()[1:])
    assert telemetry.dcgm_metrics_configmap()["data"].keys() == {"dcgm-metrics.csv"}


def test_operator_values_point_at_the_configmap() -> None:
    values = telemetry.operator_telemetry_values(INSTALL)
    assert values["dcgmExporter"]["config"] == {"name": "gpufleet-dcgm-metrics"}
    assert "dcgm" not in values  # stage 1 runs the host engine (gpu_operator.values), telemetry or not
    assert len(values["dcgmExporter"]["annotations"]["gpufleet.io/dcgm-metrics-sha256"]) == 16
    # one series per pod sharing a GPU, so idle GPU-hours of a shared GPU are split between its pods
    assert values["dcgmExporter"]["env"] == [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]


def test_service_monitor_keeps_pod_labels_as_exported_and_adds_node() -> None:
    sm = telemetry.dcgm_service_monitor()
    endpoint = sm["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["honorLabels"]) == ("gpu-metrics", False)
    assert endpoint["relabelings"] == [
        {"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}
    ]
    assert sm["spec"]["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}


def test_kps_values_select_everything_and_export_node_group_label() -> None:
    v = telemetry.kube_prometheus_stack_values(INSTALL)
    spec = v["prometheus"]["prometheusSpec"]
    assert spec["ruleSelectorNilUsesHelmValues"] is False and spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert v["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[gpufleet.io/node-group,gpufleet.io/workload-class]"
    ]
    assert v["grafana"]["sidecar"]["dashboards"]["label"] == "grafana_dashboard"


def test_grafana_reads_only_the_monitoring_namespace() -> None:
    """Issue 31 item 7: searchNamespace ALL let any team inject a dashboard ConfigMap, and the chart's ClusterRole
    (rbac.namespaced false) read every Secret of the cluster."""
    grafana = telemetry.kube_prometheus_stack_values(INSTALL)["grafana"]
    assert grafana["sidecar"]["dashboards"]["searchNamespace"] == "monitoring"
    assert grafana["rbac"] == {"namespaced": True}


def test_monitoring_namespace() -> None:
    assert telemetry.monitoring_namespace(INSTALL) == "monitoring"
    assert telemetry.monitoring_namespace(EXISTING) == "observability"


def _exprs(groups: list[dict]) -> dict[str, str]:
    return {r.get("record") or r["alert"]: r["expr"] for g in groups for r in g["rules"]}


def test_rules_name_the_upstream_metrics_and_labels() -> None:
    e = _exprs(
        rules_promql.telemetry_groups(
            0.05, [({"node_group": "a100", "resource": "nvidia_com_gpu", "GPU_I_PROFILE": "1g.5gb"}, 7)]
        )
    )
    # requests divide by their resource's figure, exporter series by their MIG profile's
    assert (
        "on (node_group, resource) group_left () gpufleet:devices_per_gpu"
        in e["namespace_node_group:gpufleet_gpus_allocated:sum"]
    )
    assert (
        "on (node_group, GPU_I_PROFILE) group_left () gpufleet:devices_per_gpu"
        in e["namespace_node_group:gpufleet_gpus_idle:sum"]
    )
    assert rules_promql.ksm_resource("nvidia.com/mig-1g.5gb") == "nvidia_com_mig_1g_5gb"
    assert 'kube_node_status_allocatable{resource=~"nvidia_com_gpu|' in e["gpufleet:node_gpus_allocatable:sum"]
    assert (
        "kube_pod_container_resource_requests{" in e["gpufleet:pod_gpus_requested:sum"]
        and 'node!=""' in e["gpufleet:pod_gpus_requested:sum"]
    )
    assert "label_gpufleet_io_node_group" in e["gpufleet:node_group:info"]
    assert "DCGM_FI_PROF_SM_ACTIVE" in e["gpufleet:gpu_sm_active:avg5m"]
    assert (
        '"exported_namespace"' in e["namespace_node_group:gpufleet_gpus_idle:sum"]
        and ">= bool 0.05" in e["node_group:gpufleet_gpus_busy:sum"]
    )
    assert 'kube_node_spec_taint{key="nvidia.com/gpu"}' in e["GPUNodeZeroAllocatable"]
    assert (
        "floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 32) % 2 == 1" in e["GPUThermalThrottling"]
        and "/ 64)" in e["GPUThermalThrottling"]
    )
    assert (
        "/ 8)" in e["GPUPowerThrottling"]
        and "/ 128)" in e["GPUPowerThrottling"]
        and "/ 4)" not in e["GPUPowerThrottling"]
    )
    assert (
        "(DCGM_FI_DEV_GPU_UTIL) > 90" in e["GPUUtilizationMisleading"]
        and "(DCGM_FI_PROF_SM_ACTIVE) < 0.3" in e["GPUUtilizationMisleading"]
    )
    h = _exprs(rules_promql.health_groups())
    assert "gpufleet_training_step_seconds[5m]" in h["gpufleet:training_step_seconds:avg5m"]
    assert 'condition="DCGMUnhealthy"' in h["GPUNodeDCGMUnhealthy"]


def test_dashboards_have_the_required_panels() -> None:
    truth = json.loads(dashboards.telemetry_dashboard())
    titles = [p["title"] for p in truth["panels"]]
    assert (
        any("Naive" in t for t in titles)
        and any("SM active" in t for t in titles)
        and any("Tensor" in t for t in titles)
    )
    assert (
        any("Framebuffer" in t for t in titles)
        and any("Fragmentation" in t for t in titles)
        and any("Idle GPU-hours by team" in t for t in titles)
    )
    cost = json.loads(dashboards.cost_dashboard())
    assert "sum_over_time(team:gpufleet_gpu_hours_idle:1h[167h59m59s:1h])" in json.dumps(cost)
    cm = telemetry.dashboard_configmap("x", "monitoring", "x.json", "{}")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
