"""Every version-dependent fact gpufleet knows, in one place: the supported releases of each component and what
each release brings (images, chart defaults gpufleet keeps), the Cluster Autoscaler image per Kubernetes minor and
the NVIDIA reasons the EKS node monitoring agent reports. Each fact names its upstream source.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/facts/versions.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    """One supported release of a component."""

    notes: str  # what differs from the previous supported release


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuOperatorRelease(Release):
    # The DCGM image the operator runs as its standalone hostengine: dcgm.repository/image:version in
    # deployments/gpu-operator/values.yaml. The health stage's dcgmi must match the hostengine's version.
    dcgm_image: str
    # GDRCopy (chart values `gdrcopy.enabled`, ClusterPolicy spec.gdrcopy): whether the operator loads gdrdrv only when
    # it manages the driver (not with driver.enabled false, gpufleet's Preinstalled).
    gdrcopy_needs_operator_driver: bool
    # The device plugin's entrypoint turns GDRCopy on by itself where the host has gdrdrv loaded and GDRCOPY_ENABLED
    # is unset (assets/state-device-plugin/0400_configmap.yaml: `lsmod | grep -q "^gdrdrv "` -> GDRCOPY_ENABLED=true),
    # so containers get NVIDIA_GDRCOPY=enabled and the toolkit mounts /dev/gdrdrv (NVIDIA/k8s-device-plugin
    # internal/plugin/server.go getAllocateResponse).
    device_plugin_detects_gdrdrv: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class KueueRelease(Release):
    # The chart's own controller Configuration (charts/kueue/values.yaml managerConfig.controllerManagerConfigYaml,
    # without apiVersion, kind and the integrations gpufleet chooses). gpufleet's Configuration replaces the whole
    # document, so it keeps all of this.
    chart_configuration: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkOperatorRelease(Release):
    # Operand images released with the operator, component -> (repository, image, tag)
    # (Mellanox/network-operator example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-full.yaml at the same tag).
    operand_images: Mapping[str, tuple[str, str, str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Component:
    """One upstream component: where it comes from and the releases gpufleet renders for."""

    title: str
    chart: str  # chart name or image
    repository: str  # Helm repository URL or OCI reference
    releases: Mapping[str, Release]  # oldest first; the last is the current line
    pin_field: str = "chart"  # the spec field that pins it: versions.<key>.<pin_field>
    # The chart that installs the component's CRDs, released at the same version beside the component's own (whose
    # crds/ Helm installs once and never upgrades), or None where the component's chart keeps its CRDs current.
    crd_chart: str | None = None

    @property
    def supported(self) -> tuple[str, ...]:
        return tuple(self.releases)


# https://github.com/NVIDIA/gpu-operator/blob/v26.7.0/deployments/gpu-operator/values.yaml (and v26.3.3)
GPU_OPERATOR: Mapping[str, GpuOperatorRelease] = MappingProxyType(
    {
        "v26.3.3": GpuOperatorRelease(
            notes="dcgmExporter.serviceMonitor.enabled defaults to false; CDI on by default",
            dcgm_image="nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04",
            gdrcopy_needs_operator_driver=True,
            device_plugin_detects_gdrdrv=True,
        ),
        "v26.7.0": GpuOperatorRelease(
            notes=(
                "dcgmExporter.serviceMonitor.enabled defaults to true (the ServiceMonitor CRD must exist first); "
                "driver 595.91.07 by default; GPUCluster CRD (DRA path) added, off by default"
            ),
            dcgm_image="nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
            gdrcopy_needs_operator_driver=True,
            device_plugin_detects_gdrdrv=True,
        ),
    }
)

# https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/charts/kueue/values.yaml (and v0.18.1)
KUEUE: Mapping[str, KueueRelease] = MappingProxyType(
    {
        "0.18.1": KueueRelease(
            notes="serves kueue.x-k8s.io/v1beta2 (storage) and deprecated v1beta1",
            chart_configuration=MappingProxyType(
                {
                    "health": {"healthProbeBindAddress": ":8081"},
                    "metrics": {"bindAddress": ":8443"},
                    "webhook": {"port": 9443},
                    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
                    "controller": {
                        "groupKindConcurrency": {
                            "Job.batch": 5,
                            "Pod": 5,
                            "Workload.kueue.x-k8s.io": 5,
                            "LocalQueue.kueue.x-k8s.io": 1,
                            "ClusterQueue.kueue.x-k8s.io": 1,
                            "ResourceFlavor.kueue.x-k8s.io": 1,
                        }
                    },
                    "clientConnection": {"qps": 50, "burst": 100},
                }
            ),
        ),
        "0.19.2": KueueRelease(
            notes=(
                "same APIs as 0.18; v1beta1 still served but deprecated; the chart raises controller concurrency and"
                " client QPS"
            ),
            chart_configuration=MappingProxyType(
                {
                    "health": {"healthProbeBindAddress": ":8081"},
                    "metrics": {"bindAddress": ":8443"},
                    "webhook": {"port": 9443},
                    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
                    "controller": {
                        "groupKindConcurrency": {
                            "Job.batch": 5,
                            "Pod": 5,
                            "Workload.kueue.x-k8s.io": 10,
                            "LocalQueue.kueue.x-k8s.io": 5,
                            "ClusterQueue.kueue.x-k8s.io": 5,
                            "ResourceFlavor.kueue.x-k8s.io": 1,
                        }
                    },
                    "clientConnection": {"qps": 300, "burst": 500},
                }
            ),
        ),
    }
)

# https://github.com/Mellanox/network-operator/tree/v26.4.1/deployment/network-operator
NETWORK_OPERATOR: Mapping[str, NetworkOperatorRelease] = MappingProxyType(
    {
        "26.4.1": NetworkOperatorRelease(
            notes="nvIpam is top level; secondaryNetwork.ipamPlugin was removed in 25.10.0",
            operand_images=MappingProxyType(
                {
                    "rdmaSharedDevicePlugin": (
                        "nvcr.io/nvidia/mellanox",
                        "k8s-rdma-shared-dev-plugin",
                        "network-operator-v26.4.1",
                    ),
                    "cniPlugins": ("nvcr.io/nvidia/mellanox", "plugins", "network-operator-v26.4.1"),
                    "ipoib": ("nvcr.io/nvidia/mellanox", "ipoib-cni", "network-operator-v26.4.1"),
                    "nvIpam": ("nvcr.io/nvidia/mellanox", "nvidia-k8s-ipam", "network-operator-v26.4.1"),
                }
            ),
        )
    }
)


def _notes(**notes: str) -> Mapping[str, Release]:
    """Releases of a component that carry no facts beyond their notes (versions with dots are passed as a dict)."""
    return MappingProxyType({version: Release(notes=text) for version, text in notes.items()})


COMPONENTS: Mapping[str, Component] = MappingProxyType(
    {
        "gpuOperator": Component(
            title="NVIDIA GPU Operator",
            chart="gpu-operator",
            repository="https://helm.ngc.nvidia.com/nvidia",
            releases=GPU_OPERATOR,
        ),
        "kueue": Component(
            title="Kueue", chart="kueue", repository="oci://registry.k8s.io/kueue/charts", releases=KUEUE
        ),
        # https://github.com/aws/eks-charts/tree/master/stable/aws-efa-k8s-device-plugin
        "efaDevicePlugin": Component(
            title="AWS EFA Kubernetes device plugin",
            chart="aws-efa-k8s-device-plugin",
            repository="https://aws.github.io/eks-charts",
            releases=_notes(**{"v0.5.30": "app v0.5.20; tolerations default to [] (gpufleet always sets them)"}),
        ),
        # https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/tree/v0.4.1/deployments/helm/dra-driver-nvidia-gpu
        # (docs/install.md: oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu, --version 0.4.x).
        # Why: docs/stage-1.md, "Design notes", versions.nvidiaDraDriver.
        "nvidiaDraDriver": Component(
            title="NVIDIA DRA driver for GPUs",
            chart="dra-driver-nvidia-gpu",
            repository="oci://registry.k8s.io/dra-driver-nvidia/charts",
            releases=_notes(
                **{
                    "0.4.1": (
                        "DeviceClasses gpu.nvidia.com (extendedResourceName nvidia.com/gpu), mig.nvidia.com and the"
                        " compute domains'; refuses resources.gpus.enabled without gpuResourcesEnabledOverride"
                    )
                }
            ),
        ),
        # https://github.com/aws/eks-charts/tree/master/stable/aws-dranet (the EFA DRA driver: kubernetes-sigs/dranet
        # as EKS packages it, image v1.2.0-eksbuild.2; EKS user guide device-management-efa). Installed in the network
        # stage when an EFA group has devices DRA.
        "efaDraDriver": Component(
            title="AWS EFA DRA driver (dranet)",
            chart="aws-dranet",
            repository="https://aws.github.io/eks-charts",
            releases=_notes(**{"1.0.0": "app v1.2.0-eksbuild.2; creates DeviceClass efa.networking.k8s.aws"}),
        ),
        "networkOperator": Component(
            title="NVIDIA Network Operator",
            chart="network-operator",
            repository="https://helm.ngc.nvidia.com/nvidia",
            releases=NETWORK_OPERATOR,
        ),
        "multus": Component(
            title="Multus CNI (thick plugin)",
            chart="multus-cni",
            repository="ghcr.io/k8snetworkplumbingwg/multus-cni",
            pin_field="tag",  # an image release, not a chart
            releases=_notes(
                **{
                    "v4.2.3": "the oldest supported release",
                    "v4.3.0": "upstream manifest references a snapshot tag; gpufleet pins the release tag",
                }
            ),
        ),
        # https://github.com/prometheus-community/helm-charts/tree/main/charts/kube-prometheus-stack
        "kubePrometheusStack": Component(
            title="kube-prometheus-stack",
            chart="kube-prometheus-stack",
            repository="https://prometheus-community.github.io/helm-charts",
            releases=_notes(**{"88.5.3": "prometheus-operator v0.93.1"}),
        ),
        # https://github.com/deliveryhero/helm-charts/tree/master/stable/node-problem-detector
        "nodeProblemDetector": Component(
            title="Node Problem Detector",
            chart="node-problem-detector",
            repository="oci://ghcr.io/deliveryhero/helm-charts",
            releases=_notes(**{"2.4.1": "image tag v1.35.1 by default"}),
        ),
        # https://github.com/kubernetes/autoscaler/blob/cluster-autoscaler-chart-9.59.0/cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml
        # (the chart moved from charts/cluster-autoscaler to cluster-autoscaler/charts/cluster-autoscaler in 9.52.0).
        "clusterAutoscaler": Component(
            title="Kubernetes Cluster Autoscaler",
            chart="cluster-autoscaler",
            repository="https://kubernetes.github.io/autoscaler",
            releases=_notes(
                **{
                    "9.58.0": "appVersion 1.35.0; values.yaml identical to 9.59.0",
                    "9.59.0": (
                        "appVersion 1.35.0; ClusterRole adds deployments and capacitybuffers/capacityquotas"
                        " (autoscaling.x-k8s.io) for CA 1.36 features"
                    ),
                }
            ),
        ),
        # https://github.com/aws/karpenter-provider-aws/tree/v1.14.1/charts/karpenter; the release publishes the chart
        # (whose git Chart.yaml still says 1.13.0) as oci://public.ecr.aws/karpenter/karpenter 1.14.1.
        # Why: docs/stage-1.md, "Design notes", versions.karpenter.
        "karpenter": Component(
            title="Karpenter",
            chart="karpenter",
            crd_chart="karpenter-crd",
            repository="oci://public.ecr.aws/karpenter",
            releases=_notes(**{"1.14.1": "serves karpenter.sh/v1 NodePool and karpenter.k8s.aws/v1 EC2NodeClass"}),
        ),
        # The workload layer (admission stage, gpufleet.plan.manifests.workloads): the job APIs teams submit.
        # Why: docs/stage-1.md, "Design notes", versions.jobSet.
        "jobSet": Component(
            title="JobSet",
            chart="jobset",
            repository="oci://registry.k8s.io/jobset/charts",
            releases=_notes(**{"0.12.0": "serves jobset.x-k8s.io/v1alpha2; the Trainer 2.3.0 chart's own dependency"}),
        ),
        # https://github.com/kubeflow/trainer/tree/v2.3.0/charts/kubeflow-trainer (published as
        # oci://ghcr.io/kubeflow/charts/kubeflow-trainer, charts/kubeflow-trainer/README.md).
        "trainer": Component(
            title="Kubeflow Trainer",
            chart="kubeflow-trainer",
            repository="oci://ghcr.io/kubeflow/charts",
            releases=_notes(
                **{
                    "2.3.0": (
                        "serves trainer.kubeflow.org/v1alpha1 TrainJob, TrainingRuntime, ClusterTrainingRuntime;"
                        " installs JobSet 0.12.0 itself unless jobset.install is false"
                    )
                }
            ),
        ),
        # https://github.com/kubernetes-sigs/lws/tree/v0.10.0/charts/lws: git's Chart.yaml says 0.1.0; the release
        # pushes it to oci://registry.k8s.io/lws/charts as 0.10.0 (Makefile CHART_VERSION, hack/push-chart.sh).
        "leaderWorkerSet": Component(
            title="LeaderWorkerSet",
            chart="lws",
            repository="oci://registry.k8s.io/lws/charts",
            releases=_notes(**{"0.10.0": "serves leaderworkerset.x-k8s.io/v1; DisaggregatedSet off by default"}),
        ),
        # https://github.com/kedacore/charts/tree/v2.20.2/keda (telemetry stage, where the fleet has an Inference
        # group: serving scales on the queue signals of the Prometheus it reads; docs/inference.md).
        "keda": Component(
            title="KEDA",
            chart="keda",
            repository="https://kedacore.github.io/charts",
            releases=_notes(**{"2.20.2": "appVersion 2.20.2; installs its CRDs (crds.install true)"}),
        ),
        # https://github.com/awslabs/mountpoint-s3-csi-driver/tree/v2.7.0/charts/aws-mountpoint-s3-csi-driver, published
        # at the chart's Helm repository (its Chart.yaml description).
        "mountpointS3Csi": Component(
            title="Mountpoint for Amazon S3 CSI driver",
            chart="aws-mountpoint-s3-csi-driver",
            repository="https://awslabs.github.io/mountpoint-s3-csi-driver",
            releases=_notes(
                **{
                    "2.7.0": (
                        "image v2.7.0 with Mountpoint 1.22.3 (Dockerfile MOUNTPOINT_VERSION); Mountpoint Pods in"
                        " namespace mount-s3"
                    )
                }
            ),
        ),
        # https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/helm-chart-aws-fsx-csi-driver-1.17.0/charts/aws-fsx-csi-driver
        # (docs/install.md: the Helm repository https://kubernetes-sigs.github.io/aws-fsx-csi-driver, kube-system).
        "fsxCsiDriver": Component(
            title="FSx for Lustre CSI driver",
            chart="aws-fsx-csi-driver",
            repository="https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
            releases=_notes(
                **{"1.17.0": "appVersion 1.9.0; the node DaemonSet tolerates every taint (node.tolerateAllTaints)"}
            ),
        ),
    }
)


def default_release(key: str) -> str:
    """The release of component `key` this gpufleet is tested with: the last supported one (the current line)."""
    return COMPONENTS[key].supported[-1]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerPlacement:
    """Where a chart's controller pod may run when gpufleet's values leave it alone: the chart's default
    nodeSelector and tolerations at their values keys (a subchart's keys under its dependency name, as Helm merges
    them).

    Why: docs/stage-1.md, "Design notes", versions.ControllerPlacement."""

    name: str  # the workload as the chart names it
    kind: str  # Deployment | StatefulSet
    node_selector_key: str
    node_selector: Mapping[str, str]
    tolerations_key: str
    tolerations: tuple[Mapping[str, Any], ...]
    enabled_key: str | None = None  # a values key that switches the controller off (default on)


_CONTROL_PLANE = MappingProxyType(
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"}
)
_MASTER = MappingProxyType(
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}
)
_EMPTY: Mapping[str, str] = MappingProxyType({})


def _nfd(enabled_key: str) -> tuple[ControllerPlacement, ...]:
    # node-feature-discovery subchart values.yaml: master.nodeSelector {}, master.tolerations [control-plane],
    # gc.nodeSelector {}, gc.tolerations [] (the same in every pinned operator's vendored NFD).
    return (
        ControllerPlacement(
            name="nfd-master",
            kind="Deployment",
            node_selector_key="node-feature-discovery.master.nodeSelector",
            node_selector=_EMPTY,
            tolerations_key="node-feature-discovery.master.tolerations",
            tolerations=(_CONTROL_PLANE,),
            enabled_key=enabled_key,
        ),
        ControllerPlacement(
            name="nfd-gc",
            kind="Deployment",
            node_selector_key="node-feature-discovery.gc.nodeSelector",
            node_selector=_EMPTY,
            tolerations_key="node-feature-discovery.gc.tolerations",
            tolerations=(),
            enabled_key=enabled_key,
        ),
    )


_KUEUE_CONTROLLERS = (
    ControllerPlacement(
        name="kueue-controller-manager",
        kind="Deployment",
        node_selector_key="controllerManager.nodeSelector",
        node_selector=_EMPTY,
        tolerations_key="controllerManager.tolerations",
        tolerations=(),
    ),
)
_AUTOSCALER_CONTROLLERS = (
    ControllerPlacement(
        name="cluster-autoscaler",
        kind="Deployment",
        node_selector_key="nodeSelector",
        node_selector=_EMPTY,
        tolerations_key="tolerations",
        tolerations=(),
    ),
)

# The controllers (Deployments and the Prometheus StatefulSet) of each pinned chart, chart -> version -> placement, from
# each chart's values.yaml at its pinned version and its vendored subcharts (tools/upstream_files.json;
# tests/unit/test_versions.py checks each against them).
CHART_CONTROLLERS: Mapping[str, Mapping[str, tuple[ControllerPlacement, ...]]] = MappingProxyType(
    {
        "kueue": MappingProxyType({"0.18.1": _KUEUE_CONTROLLERS, "0.19.2": _KUEUE_CONTROLLERS}),
        "gpu-operator": MappingProxyType(
            {
                # v26.3.3 sets no operator.nodeSelector; v26.7.0 adds kubernetes.io/os: linux.
                "v26.3.3": (
                    ControllerPlacement(
                        name="gpu-operator",
                        kind="Deployment",
                        node_selector_key="operator.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="operator.tolerations",
                        tolerations=(_CONTROL_PLANE,),
                    ),
                    *_nfd("nfd.enabled"),
                ),
                "v26.7.0": (
                    ControllerPlacement(
                        name="gpu-operator",
                        kind="Deployment",
                        node_selector_key="operator.nodeSelector",
                        node_selector=MappingProxyType({"kubernetes.io/os": "linux"}),
                        tolerations_key="operator.tolerations",
                        tolerations=(_CONTROL_PLANE,),
                    ),
                    *_nfd("nfd.enabled"),
                ),
            }
        ),
        "network-operator": MappingProxyType(
            {
                "26.4.1": (
                    ControllerPlacement(
                        name="network-operator",
                        kind="Deployment",
                        node_selector_key="operator.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="operator.tolerations",
                        tolerations=(_MASTER, _CONTROL_PLANE),
                    ),
                    *_nfd("nfd.enabled"),
                )
            }
        ),
        "kube-prometheus-stack": MappingProxyType(
            {
                "88.5.3": (
                    ControllerPlacement(
                        name="prometheus-operator",
                        kind="Deployment",
                        node_selector_key="prometheusOperator.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="prometheusOperator.tolerations",
                        tolerations=(),
                    ),
                    ControllerPlacement(
                        name="prometheus",
                        kind="StatefulSet",
                        node_selector_key="prometheus.prometheusSpec.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="prometheus.prometheusSpec.tolerations",
                        tolerations=(),
                    ),
                    ControllerPlacement(
                        name="kube-state-metrics",
                        kind="Deployment",
                        node_selector_key="kube-state-metrics.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="kube-state-metrics.tolerations",
                        tolerations=(),
                    ),
                )
            }
        ),
        "cluster-autoscaler": MappingProxyType({"9.58.0": _AUTOSCALER_CONTROLLERS, "9.59.0": _AUTOSCALER_CONTROLLERS}),
        # jobset values.yaml controller.nodeSelector/tolerations, kubeflow-trainer manager.*, lws top level.
        "jobset": MappingProxyType(
            {
                "0.12.0": (
                    ControllerPlacement(
                        name="jobset-controller-manager",
                        kind="Deployment",
                        node_selector_key="controller.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="controller.tolerations",
                        tolerations=(),
                    ),
                )
            }
        ),
        "kubeflow-trainer": MappingProxyType(
            {
                "2.3.0": (
                    ControllerPlacement(
                        name="kubeflow-trainer-controller-manager",
                        kind="Deployment",
                        node_selector_key="manager.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="manager.tolerations",
                        tolerations=(),
                    ),
                )
            }
        ),
        "lws": MappingProxyType(
            {
                "0.10.0": (
                    ControllerPlacement(
                        name="lws-controller-manager",
                        kind="Deployment",
                        node_selector_key="nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="tolerations",
                        tolerations=(),
                    ),
                )
            }
        ),
        # kubernetes-sigs/aws-fsx-csi-driver charts/aws-fsx-csi-driver/values.yaml (chart 1.17.0, appVersion 1.9.0):
        # controller.nodeSelector {} (the template adds kubernetes.io/os: linux), controller.tolerations
        # CriticalAddonsOnly and any NoExecute for 300 s: no GPU taint, so the controller runs on untainted nodes.
        "aws-fsx-csi-driver": MappingProxyType(
            {
                "1.17.0": (
                    ControllerPlacement(
                        name="fsx-csi-controller",
                        kind="Deployment",
                        node_selector_key="controller.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="controller.tolerations",
                        tolerations=(
                            MappingProxyType({"key": "CriticalAddonsOnly", "operator": "Exists"}),
                            MappingProxyType({"effect": "NoExecute", "operator": "Exists", "tolerationSeconds": 300}),
                        ),
                    ),
                )
            }
        ),
        # kedacore/charts keda/values.yaml @v2.20.2: the three Deployments share the top-level nodeSelector and
        # tolerations (operator.name keda-operator, metricsServer keda-operator-metrics-apiserver, webhooks.name
        # keda-admission-webhooks; webhooks.enabled true).
        "keda": MappingProxyType(
            {
                "2.20.2": tuple(
                    ControllerPlacement(
                        name=name,
                        kind="Deployment",
                        node_selector_key="nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="tolerations",
                        tolerations=(),
                        enabled_key=enabled,
                    )
                    for name, enabled in (
                        ("keda-operator", None),
                        ("keda-operator-metrics-apiserver", "metricsServer.enabled"),
                        ("keda-admission-webhooks", "webhooks.enabled"),
                    )
                )
            }
        ),
        # awslabs/mountpoint-s3-csi-driver charts/aws-mountpoint-s3-csi-driver @v2.7.0: templates/controller.yaml
        # renders controller.nodeSelector (beside kubernetes.io/os: linux) and controller.tolerations, neither set in
        # values.yaml. Its node DaemonSet is an operand (gpufleet.simulate.operands).
        "aws-mountpoint-s3-csi-driver": MappingProxyType(
            {
                "2.7.0": (
                    ControllerPlacement(
                        name="s3-csi-controller",
                        kind="Deployment",
                        node_selector_key="controller.nodeSelector",
                        node_selector=_EMPTY,
                        tolerations_key="controller.tolerations",
                        tolerations=(),
                    ),
                )
            }
        ),
    }
)

# Kubernetes minor versions EKS offers in standard support that gpufleet renders for.
KUBERNETES_VERSIONS = ("1.32", "1.33", "1.34", "1.35")

# Cluster Autoscaler image per Kubernetes minor.
# Why: docs/stage-1.md, "Design notes", versions.CLUSTER_AUTOSCALER_IMAGES.
CLUSTER_AUTOSCALER_IMAGES: Mapping[str, str] = MappingProxyType(
    {"1.32": "v1.32.7", "1.33": "v1.33.6", "1.34": "v1.34.5", "1.35": "v1.35.2"}
)

# An exact release: three numeric parts (an optional leading v), then optional pre-release/build parts.
_EXACT = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+([-+.][0-9A-Za-z]+)*$")
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


def image_has_digest(image: str) -> bool:
    """True when an image reference carries a sha256 digest (`name[:tag]@sha256:<64 hex>`)."""
    return "@" in image and bool(_DIGEST.search(image))


def image_is_pinned(image: str) -> bool:
    """True when an image reference carries a sha256 digest or an explicit tag other than `latest`."""
    if "@" in image:
        return bool(_DIGEST.search(image))
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.rsplit(":", 1)[1]
    return bool(tag) and tag.lower() != "latest"


# --- EKS node monitoring agent ------------------------------------------------------------------------------
# EKS node monitoring agent: the XIDs each agent version treats as fatal ("well-known"): only these become an
# `NvidiaXID<code>Error` reason on AcceleratedHardwareReady, which node auto repair acts on; any other XID is only an
# event (aws/eks-node-monitoring-agent monitors/nvidia/dcgm/dcgm_policies.go WellKnownXidCodes at each tag; the list
# changed in v1.6.4, from 13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, 121, 140).
NODE_MONITORING_AGENT_XIDS: Mapping[str, tuple[int, ...]] = MappingProxyType(
    {
        "v1.6.4": (46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 140),
        "v1.7.0": (46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158),
    }
)


# DCGM health-watch incident codes (dcgmError_t, dcgmlib/dcgm_errors.h) that DCGM's health module can report, per DCGM
# release: every DCGM_FR_* named in modules/health/*.cpp|h at NVIDIA/DCGM's tag, numbered from that tag's dcgm_errors.h.
# Why: docs/stage-1.md, "Design notes", versions.DCGM_HEALTH_CODES.
DCGM_HEALTH_CODES: Mapping[str, tuple[int, ...]] = MappingProxyType(
    {
        "4.5.2": (3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 33, 36, 40, 52, 70, 71, 80, 81, 101, 119, 120, 121, 123)
        + (125, 126, 127, 128),
        # 40 (DCGM_FR_THERMAL_VIOLATIONS) gone; 131 (CONTAINED_ERROR), 132 (UNCORRECTABLE_ROW_REMAP_LIMIT) added.
        "4.6.0": (3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 33, 36, 52, 70, 71, 80, 81, 101, 119, 120, 121, 123)
        + (125, 126, 127, 128, 131, 132),
    }
)


def dcgm_release(gpu_operator: str) -> str | None:
    """The DCGM release of a GPU Operator release's host engine (nvcr.io/.../dcgm:4.6.0-1-ubuntu24.04 -> 4.6.0);
    None for a release gpufleet does not know (a rule warns about those)."""
    release = GPU_OPERATOR.get(gpu_operator)
    return None if release is None else release.dcgm_image.rsplit(":", 1)[1].split("-", 1)[0]


def node_monitoring_agent_release(addon_version: str) -> str:
    """The agent release of an EKS add-on version: v1.7.0-eksbuild.1 -> v1.7.0."""
    return addon_version.split("-", 1)[0]
