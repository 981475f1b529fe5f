"""Every upstream version gpufleet knows, in one place: the supported range per component and what differs.

A spec must pin each component it uses to one of these exact versions. Helm values are rendered for (and
tested against) the keys of these chart versions, so a version outside the list is an error, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True, slots=True, kw_only=True)
class Component:
    """One upstream component: where it comes from and the versions gpufleet renders for."""

    title: str
    chart: str  # chart name or image
    repository: str  # Helm repository URL or OCI reference
    supported: tuple[str, ...]  # oldest first; the last is the current line
    notes: Mapping[str, str]  # version -> what differs from the previous supported one


COMPONENTS: Mapping[str, Component] = MappingProxyType(
    {
        # https://github.com/NVIDIA/gpu-operator/blob/v26.7.0/deployments/gpu-operator/values.yaml
        "gpuOperator": Component(
            title="NVIDIA GPU Operator",
            chart="gpu-operator",
            repository="https://helm.ngc.nvidia.com/nvidia",
            supported=("v26.3.3", "v26.7.0"),
            notes={
                "v26.3.3": "dcgmExporter.serviceMonitor.enabled defaults to false; CDI on by default",
                "v26.7.0": "dcgmExporter.serviceMonitor.enabled defaults to true (the ServiceMonitor CRD must exist first); "
                "driver 595.91.07 by default; GPUCluster CRD (DRA path) added, off by default",
            },
        ),
        # https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/charts/kueue/values.yaml
        "kueue": Component(
            title="Kueue",
            chart="kueue",
            repository="oci://registry.k8s.io/kueue/charts",
            supported=("0.18.1", "0.19.2"),
            notes={
                "0.18.1": "serves kueue.x-k8s.io/v1beta2 (storage) and deprecated v1beta1",
                "0.19.2": "same APIs as 0.18; v1beta1 still served but deprecated",
            },
        ),
        # https://github.com/aws/eks-charts/tree/master/stable/aws-efa-k8s-device-plugin
        "efaDevicePlugin": Component(
            title="AWS EFA Kubernetes device plugin",
            chart="aws-efa-k8s-device-plugin",
            repository="https://aws.github.io/eks-charts",
            supported=("v0.5.30",),
            notes={"v0.5.30": "app v0.5.20; tolerations default to [] (gpufleet always sets them)"},
        ),
        # https://github.com/Mellanox/network-operator/tree/v26.4.1/deployment/network-operator
        "networkOperator": Component(
            title="NVIDIA Network Operator",
            chart="network-operator",
            repository="https://helm.ngc.nvidia.com/nvidia",
            supported=("26.4.1",),
            notes={"26.4.1": "nvIpam is top level; secondaryNetwork.ipamPlugin was removed in 25.10.0"},
        ),
        "multus": Component(
            title="Multus CNI (thick plugin)",
            chart="multus-cni",
            repository="ghcr.io/k8snetworkplumbingwg/multus-cni",
            supported=("v4.2.3", "v4.3.0"),
            notes={"v4.3.0": "upstream manifest references a snapshot tag; gpufleet pins the release tag"},
        ),
        # https://github.com/prometheus-community/helm-charts/tree/main/charts/kube-prometheus-stack
        "kubePrometheusStack": Component(
            title="kube-prometheus-stack",
            chart="kube-prometheus-stack",
            repository="https://prometheus-community.github.io/helm-charts",
            supported=("88.5.3",),
            notes={"88.5.3": "prometheus-operator v0.93.1"},
        ),
        # https://github.com/deliveryhero/helm-charts/tree/master/stable/node-problem-detector
        "nodeProblemDetector": Component(
            title="Node Problem Detector",
            chart="node-problem-detector",
            repository="oci://ghcr.io/deliveryhero/helm-charts",
            supported=("2.4.1",),
            notes={"2.4.1": "image tag v1.35.1 by default"},
        ),
        # https://github.com/kubernetes/autoscaler/blob/cluster-autoscaler-chart-9.59.0/cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml
        # (the chart moved from charts/cluster-autoscaler to cluster-autoscaler/charts/cluster-autoscaler in 9.52.0).
        # Both pinned charts have appVersion 1.35.0 (the newest Kubernetes minor below); gpufleet sets image.tag from
        # CLUSTER_AUTOSCALER_IMAGES, so the chart version only decides the templates.
        "clusterAutoscaler": Component(
            title="Kubernetes Cluster Autoscaler",
            chart="cluster-autoscaler",
            repository="https://kubernetes.github.io/autoscaler",
            supported=("9.58.0", "9.59.0"),
            notes={
                "9.58.0": "appVersion 1.35.0; values.yaml identical to 9.59.0",
                "9.59.0": "appVersion 1.35.0; ClusterRole adds deployments and capacitybuffers/capacityquotas (autoscaling.x-k8s.io) for CA 1.36 features",
            },
        ),
    }
)

# Kubernetes minor versions EKS offers in standard support that gpufleet renders for.
KUBERNETES_VERSIONS = ("1.32", "1.33", "1.34", "1.35")

# Cluster Autoscaler image per Kubernetes minor. Upstream tests each CA minor only with the matching control
# plane ("We recommend using Cluster Autoscaler with the Kubernetes control plane version for which it was meant",
# kubernetes/autoscaler cluster-autoscaler/README.md), so the image follows cluster.kubernetesVersion, not the
# chart's appVersion. Each is the newest patch tag cluster-autoscaler-<version> of kubernetes/autoscaler for its minor.
CLUSTER_AUTOSCALER_IMAGES: Mapping[str, str] = MappingProxyType(
    {
        "1.32": "v1.32.7",
        "1.33": "v1.33.6",
        "1.34": "v1.34.5",
        "1.35": "v1.35.2",
    }
)

# An exact release: three numeric parts (an optional leading v), then optional pre-release/build parts.
_EXACT = re.compile(r"^v?\d+\.\d+\.\d+([-+.][0-9A-Za-z]+)*$")
# Words that name a moving target when they are a whole part of the version (v4.3.0-snapshot), not a substring
# (v1.0.0-mainline is a fixed release).
_FLOATING = frozenset({"latest", "stable", "main", "master", "head", "snapshot", "nightly", "edge", "x"})
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def is_pinned(version: str) -> bool:
    """True for an exact release (e.g. v26.7.0, 0.19.2, 595.91.07); false for ranges, wildcards, branches,
    `latest`, and versions that name only a major or minor line (0.19, v1)."""
    if not _EXACT.match(version):
        return False
    return not any(part in _FLOATING for part in re.split(r"[-+.]", version.lower()))


def image_is_pinned(image: str) -> bool:
    """True when an image reference carries a sha256 digest or an explicit tag other than `latest`."""
    if "@" in image:
        return bool(_DIGEST.search(image))
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.rsplit(":", 1)[1]
    return bool(tag) and tag.lower() != "latest"
