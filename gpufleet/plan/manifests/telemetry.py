"""Telemetry (stage 2): the DCGM metrics ConfigMap, the exporter's ServiceMonitor, kube-prometheus-stack values,
and what the foundation stage wires into the GPU Operator.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/manifests/telemetry.py.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gpufleet.plan.manifests.gpu_operator import operand_tolerations
from gpufleet.plan.manifests.rules_promql import API_VERSION, MONITORING_LABEL
from gpufleet.spec.devices import LABEL_DEVICE_MANAGER, device_managing
from gpufleet.spec.fleet import Fleet, SharingStrategy
from gpufleet.spec.names import LABEL_MANAGED_BY, NS_GPU_OPERATOR, NS_MONITORING

DCGM_METRICS_CONFIGMAP = "gpufleet-dcgm-metrics"
# The operator mounts this key at /etc/dcgm-exporter/dcgm-metrics.csv and points DCGM_EXPORTER_COLLECTORS at it
# (NVIDIA/gpu-operator controllers/object_controls.go MetricsConfigFileName, both v26.3.3 and v26.7.0).
DCGM_METRICS_KEY = "dcgm-metrics.csv"
# The exporter Service the operator creates (assets/state-dcgm-exporter/0400_service.yaml @v26.7.0).
DCGM_EXPORTER_APP = "nvidia-dcgm-exporter"
DCGM_EXPORTER_PORT = "gpu-metrics"
# Exporter setting: one series per pod sharing a GPU (pkg/cmd/app.go CLIKubernetesVirtualGPUs, default false).
VIRTUAL_GPUS_ENV = "KUBERNETES_VIRTUAL_GPUS"
# Grafana's dashboard sidecar label in kube-prometheus-stack 88.5.3 (grafana.sidecar.dashboards.label/labelValue).
DASHBOARD_LABEL = "grafana_dashboard"
DASHBOARD_LABEL_VALUE = "1"
# Node labels kube-state-metrics must export as kube_node_labels{label_...} (the rules join on node group).
KSM_NODE_LABELS = ("gpufleet.io/node-group", "gpufleet.io/workload-class")


def ksm_node_labels(fleet: Fleet) -> tuple[str, ...]:
    """The node labels kube-state-metrics must export for the fleet's rules: with DRA groups also the device manager's
    (LABEL_DEVICE_MANAGER), which keeps a DRA node, advertising no GPU resource, out of GPUNodeZeroAllocatable."""
    dra = any(device_managing(g).claims for g in fleet.node_groups)
    return KSM_NODE_LABELS + ((LABEL_DEVICE_MANAGER,) if dra else ())


# Field, Prometheus type, help: the exporter's CSV format (NVIDIA/dcgm-exporter etc/default-counters.csv).
# Why: docs/telemetry-health-cost.md, "Design notes", telemetry.DCGM_FIELDS.
DCGM_FIELDS: tuple[tuple[str, str, str], ...] = (
    (
        "DCGM_FI_DEV_GPU_UTIL",
        "gauge",
        "GPU utilization (in %): a kernel was running; not how much of the chip it used.",
    ),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event (throttle) reasons bitmask."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in ns)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in ns)."),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
)


def dcgm_metrics_csv() -> str:
    lines = ["# gpufleet DCGM exporter counters. Format: DCGM FIELD, Prometheus metric type, help message"]
    lines += [f"{field}, {kind}, {help_}" for field, kind, help_ in DCGM_FIELDS]
    return "\n".join(lines) + "\n"


def monitoring_namespace(fleet: Fleet) -> str:
    """Where the PrometheusRules and dashboards live: the installed stack's namespace or the existing one."""
    if fleet.telemetry.prometheus == "Install":
        return NS_MONITORING
    return fleet.telemetry.existing_namespace or NS_MONITORING


def operator_telemetry_values(fleet: Fleet) -> dict[str, Any]:
    """GPU Operator values for telemetry (merged by the foundation stage into its release values).

    Why: docs/telemetry-health-cost.md, "Design notes", telemetry.operator_telemetry_values."""
    digest = hashlib.sha256(dcgm_metrics_csv().encode()).hexdigest()[:16]
    env = [{"name": VIRTUAL_GPUS_ENV, "value": "true"}] if virtual_gpus(fleet) else []
    if exporter_maps_dra(fleet):
        env.append({"name": ENABLE_DRA_ENV, "value": "true"})
    return {
        "dcgmExporter": {
            "config": {"name": DCGM_METRICS_CONFIGMAP},
            "annotations": {"gpufleet.io/dcgm-metrics-sha256": digest},
            "env": env,
        },
    }


# Exporter setting: map a GPU allocated through DRA to its pod (pkg/cmd/app.go CLIKubernetesEnableDRA
# "kubernetes-enable-dra", env KUBERNETES_ENABLE_DRA, default false; NVIDIA/dcgm-exporter since 4.3.1-4.4.0).
ENABLE_DRA_ENV = "KUBERNETES_ENABLE_DRA"
# The ServiceAccount the GPU Operator runs its exporter as (assets/state-dcgm-exporter/0100_service_account.yaml
# @ v26.7.0).
DCGM_EXPORTER_SERVICE_ACCOUNT = "nvidia-dcgm-exporter"
DCGM_EXPORTER_RESOURCESLICES = "gpufleet-dcgm-exporter-resourceslices"


def dra_groups(fleet: Fleet) -> list[str]:
    return [g.name for g in fleet.node_groups if device_managing(g).claims]


def virtual_gpus(fleet: Fleet) -> bool:
    """KUBERNETES_VIRTUAL_GPUS on the exporter: always, except in a fleet with DRA groups and no time-sliced or MPS
    group, where it would only keep the DRA mapping from running (exporter_maps_dra)."""
    shared = any(g.sharing.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) for g in fleet.node_groups)
    return shared or not dra_groups(fleet)


def exporter_maps_dra(fleet: Fleet) -> bool:
    """Whether dcgm-exporter labels a DRA GPU's series with the pod holding it, which the idle figures of DRA groups
    need (gpufleet.plan.manifests.rules_promql).

    Why: docs/telemetry-health-cost.md, "Design notes", telemetry.exporter_maps_dra."""
    return bool(dra_groups(fleet)) and not virtual_gpus(fleet)


def dcgm_exporter_resourceslices() -> list[dict[str, Any]]:
    """The ClusterRole and its binding that let the operator's exporter watch ResourceSlices (exporter_maps_dra)."""
    meta = {"name": DCGM_EXPORTER_RESOURCESLICES, "labels": dict(LABEL_MANAGED_BY)}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": dict(meta),
            "rules": [
                {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": dict(meta),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": DCGM_EXPORTER_RESOURCESLICES,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": DCGM_EXPORTER_SERVICE_ACCOUNT, "namespace": NS_GPU_OPERATOR}
            ],
        },
    ]


def dcgm_metrics_configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DCGM_METRICS_CONFIGMAP, "namespace": NS_GPU_OPERATOR, "labels": dict(LABEL_MANAGED_BY)},
        "data": {DCGM_METRICS_KEY: dcgm_metrics_csv()},
    }


def dcgm_service_monitor() -> dict[str, Any]:
    """Scrapes the exporter every 15 s.

    Why: docs/telemetry-health-cost.md, "Design notes", telemetry.dcgm_service_monitor."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {
            "name": "gpufleet-dcgm-exporter",
            "namespace": NS_GPU_OPERATOR,
            "labels": {**LABEL_MANAGED_BY, **MONITORING_LABEL},
        },
        "spec": {
            "selector": {"matchLabels": {"app": DCGM_EXPORTER_APP}},
            "namespaceSelector": {"matchNames": [NS_GPU_OPERATOR]},
            "endpoints": [
                {
                    "port": DCGM_EXPORTER_PORT,
                    "path": "/metrics",
                    "interval": "15s",
                    "honorLabels": False,
                    "relabelings": [
                        {
                            "action": "replace",
                            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                            "targetLabel": "node",
                        }
                    ],
                }
            ],
        },
    }


def node_exporter_tolerations(fleet: Fleet) -> list[dict[str, str]]:
    """The node exporter subchart's default (Exists NoSchedule, charts/prometheus-node-exporter/values.yaml at 88.5.3),
    plus every NoExecute taint of a GPU group: without them a group with a NoExecute taint has no node metrics
    (gpufleet.simulate.operands checks it)."""
    no_execute = [t for t in operand_tolerations(fleet) if t["effect"] != "NoSchedule"]
    return [{"operator": "Exists", "effect": "NoSchedule"}, *no_execute]


# What a training job does to have its straggler metric scraped (docs/telemetry-health-cost.md, Stragglers): label
# its pods gpufleet.io/training-metrics=true and expose gpufleet_training_step_seconds on a container port named
# `metrics` at /metrics.
TRAINING_METRICS_LABEL = "gpufleet.io/training-metrics"
TRAINING_METRICS_PORT = "metrics"


def training_step_pod_monitor(fleet: Fleet) -> dict[str, Any]:
    """The PodMonitor that scrapes the straggler metric from training pods, in the monitoring namespace: the team
    namespaces where teams are declared, every namespace otherwise.

    Why: docs/telemetry-health-cost.md, "Design notes", telemetry.training_step_pod_monitor."""
    namespaces = sorted({team.namespace for team in fleet.teams})
    selector: dict[str, Any] = {"matchNames": namespaces} if namespaces else {"any": True}
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitor",
        "metadata": {
            "name": "gpufleet-training-step",
            "namespace": monitoring_namespace(fleet),
            "labels": {**LABEL_MANAGED_BY, **MONITORING_LABEL},
        },
        "spec": {
            "selector": {"matchLabels": {TRAINING_METRICS_LABEL: "true"}},
            "namespaceSelector": selector,
            "podMetricsEndpoints": [
                {"port": TRAINING_METRICS_PORT, "path": "/metrics", "interval": "30s", "honorLabels": False}
            ],
        },
    }


def kube_prometheus_stack_values(fleet: Fleet) -> dict[str, Any]:
    """Values for kube-prometheus-stack 88.5.3 (keys checked against its values.yaml in tests).

    Why: docs/telemetry-health-cost.md, "Design notes", telemetry.kube_prometheus_stack_values."""
    allowlist = "nodes=[" + ",".join(ksm_node_labels(fleet)) + "]"
    return {
        "prometheus": {
            "prometheusSpec": {
                "ruleSelectorNilUsesHelmValues": False,
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
            }
        },
        # kube-state-metrics 8.4.0 (the subchart of 88.5.3): metricLabelsAllowlist renders
        # --metric-labels-allowlist (prometheus-community/helm-charts charts/kube-state-metrics/values.yaml).
        "kube-state-metrics": {"metricLabelsAllowlist": [allowlist]},
        "prometheus-node-exporter": {"tolerations": node_exporter_tolerations(fleet)},
        # Grafana's sidecar reads dashboards from the monitoring namespace only, with a namespaced Role: no team can
        # inject a dashboard, and no ClusterRole reads every Secret.
        "grafana": {
            "rbac": {"namespaced": True},
            "sidecar": {
                "dashboards": {
                    "enabled": True,
                    "label": DASHBOARD_LABEL,
                    "labelValue": DASHBOARD_LABEL_VALUE,
                    "searchNamespace": monitoring_namespace(fleet),
                }
            },
        },
    }


def dashboard_configmap(name: str, namespace: str, filename: str, dashboard_json: str) -> dict[str, Any]:
    """A ConfigMap the Grafana sidecar loads (label grafana_dashboard=1)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**LABEL_MANAGED_BY, DASHBOARD_LABEL: DASHBOARD_LABEL_VALUE},
        },
        "data": {filename: dashboard_json},
    }
