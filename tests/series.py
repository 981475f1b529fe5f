"""Input series for promtool tests, labelled the way the pinned exporters emit them and Prometheus stores them.

- kube-state-metrics (the kube-prometheus-stack 88.5.3 subchart, scraped with honorLabels: its `namespace` and
  `pod` are the object's): `kube_pod_container_resource_requests{namespace,pod,uid,container,node,resource,unit}`
  with `nvidia.com/gpu` sanitised to `nvidia_com_gpu` (kubernetes/kube-state-metrics internal/store/pod.go).
- dcgm-exporter (NVIDIA/dcgm-exporter internal/pkg/rendermetrics/render_metrics.go): `gpu`, `UUID`,
  `pci_bus_id`, `device`, `modelName`, `Hostname`, on a MIG instance `GPU_I_PROFILE` and `GPU_I_ID`; with
  pod mapping `pod`, `namespace`, `container` and, for a shared replica under KUBERNETES_VIRTUAL_GPUS, `vgpu`
  (internal/pkg/transformation/const.go). Scraped by our ServiceMonitor (honorLabels false), so those three
  become `exported_*` beside the target's own `namespace`, `pod`, `container`, `service`, `endpoint`, `job`,
  `instance`, and the relabelled `node`.
"""

from __future__ import annotations

from tests.promtool import series

KSM = {
    "job": "kube-state-metrics",
    "instance": "10.0.1.5:8080",
    "service": "kube-prometheus-stack-kube-state-metrics",
    "endpoint": "http",
}


def ksm_node(name: str, group: str, devices: int, values: str) -> list[dict[str, str]]:
    """One GPU node: labelled with its group, Ready, schedulable, advertising `devices` nvidia.com/gpu."""
    return [
        series("kube_node_labels", {**KSM, "node": name, "label_gpufleet_io_node_group": group}, f"1{values}"),
        series(
            "kube_node_status_condition", {**KSM, "node": name, "condition": "Ready", "status": "true"}, f"1{values}"
        ),
        series("kube_node_spec_unschedulable", {**KSM, "node": name}, f"0{values}"),
        series(
            "kube_node_status_allocatable",
            {**KSM, "node": name, "resource": "nvidia_com_gpu", "unit": "integer"},
            f"{devices}{values}",
        ),
    ]


def ksm_pod(
    namespace: str, pod: str, node: str, devices: int, values: str, resource: str = "nvidia_com_gpu"
) -> list[dict[str, str]]:
    """A Running pod requesting `devices` of `resource` (nvidia.com/gpu; nvidia_com_mig_1g_5gb for a MIG slice under
    strategy mixed); `values` gives its lifetime (end it with `stale`)."""
    ids = {**KSM, "namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
    return [
        series(
            "kube_pod_container_resource_requests",
            {**ids, "container": "main", "node": node, "resource": resource, "unit": "integer"},
            values.replace("N", str(devices)),
        ),
        series("kube_pod_status_phase", {**ids, "phase": "Running"}, values.replace("N", "1")),
    ]


def dcgm(
    metric: str,
    node: str,
    gpu: int,
    values: str,
    *,
    pod: tuple[str, str] | None = None,
    vgpu: str | None = None,
    mig: tuple[str, int] | None = None,
) -> dict[str, str]:
    """One series of the exporter on `node`: `pod` = (namespace, pod) it is mapped to, `vgpu` the shared replica,
    `mig` = (profile, GPU instance id)."""
    labels = {
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}",
        "pci_bus_id": f"00000000:{16 + gpu:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA GPU",
        "Hostname": node,
    }
    if mig:
        labels |= {"GPU_I_PROFILE": mig[0], "GPU_I_ID": str(mig[1])}
    if pod:
        labels |= {"exported_namespace": pod[0], "exported_pod": pod[1], "exported_container": "main"}
    if vgpu is not None:
        labels["vgpu"] = vgpu
    target = {
        "namespace": "gpu-operator",
        "pod": f"nvidia-dcgm-exporter-{node}",
        "container": "nvidia-dcgm-exporter",
        "service": "nvidia-dcgm-exporter",
        "endpoint": "gpu-metrics",
        "job": "nvidia-dcgm-exporter",
        "instance": f"{node}:9400",
        "node": node,
    }
    return series(metric, {**labels, **target}, values)
