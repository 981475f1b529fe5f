"""Dynamic Resource Allocation (devices DRA): the drivers' Helm values, as plain dicts.

Keys as in the pinned charts' values.yaml (gpufleet/data/chart-keys; tests check every key):
kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu/values.yaml @ v0.4.1 (chart 0.4.1) and
aws/eks-charts stable/aws-dranet/values.yaml @ 5239609 (chart 1.0.0). Decisions, and why:

- The NVIDIA DRA driver's kubelet plugin runs only on nodes labelled for DRA (`kubeletPlugin.nodeSelector`, beside
  the chart's own GPU-presence node affinity), so it never shares a node with a device plugin; that is what the chart
  asks before it allows `resources.gpus.enabled` (`gpuResourcesEnabledOverride`, templates/validation.yaml).
- GPU allocation is on and compute domains stay at the chart's default (on): DeviceClass `gpu.nvidia.com` is what
  the claim templates request.
- `nvidiaDriverRoot` follows versions.driver: `/` where the EKS NVIDIA AMI ships the driver, `/run/nvidia/driver`
  where the GPU Operator's driver container installs it (the GPU Operator's DRA install guide).
- `resourceApiVersion` is resource.k8s.io/v1 (Kubernetes 1.34 or later, gpufleet.rules.devices), not looked up from
  the cluster at install time, so the rendered release is the same on every run.
- The controller (compute domains) runs on the system nodes.
- The EFA DRA driver runs on the EFA groups with devices DRA only (`nodeSelector`, and `supportedInstanceLabels`
  narrowed to their instance types, as the EFA device plugin is), tolerating their taints.
"""

from __future__ import annotations

from typing import Any

from gpufleet.plan.manifests.network import INSTANCE_TYPE_LABEL, group_tolerations
from gpufleet.spec.devices import DRA, LABEL_DEVICE_MANAGER
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup
from gpufleet.spec.names import LABEL_FABRIC, LABEL_NODE_GROUP, SYSTEM_GROUP

# DeviceClasses the drivers' charts create (templates/deviceclass-gpu.yaml @ v0.4.1; aws-dranet
# templates/deviceclass.yaml, deviceClass.name).
GPU_DEVICE_CLASS = "gpu.nvidia.com"
EFA_DEVICE_CLASS = "efa.networking.k8s.aws"
# Both drivers publish this attribute for their devices, so one claim can put a GPU and a NIC on one PCIe root
# (kubernetes-sigs/dranet site/content/docs/user/aws-eks-efa.md @ v1.4.0).
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NS_DRA_DRIVER = "dra-driver-nvidia-gpu"  # the namespace docs/install.md installs the chart into
DRA_DRIVER_RELEASE = "dra-driver-nvidia-gpu"
EFA_DRA_RELEASE = "aws-dranet"
RESOURCE_API = "resource.k8s.io/v1"
DRIVER_ROOT = {"Preinstalled": "/", "Operator": "/run/nvidia/driver"}
# The chart's own kubelet plugin toleration, kept when we add ours (Helm replaces lists).
_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def dra_selector(fabric: Fabric | None = None) -> dict[str, str]:
    """The node labels a DRA driver DaemonSet selects: DRA nodes (of one fabric)."""
    return {LABEL_DEVICE_MANAGER: DRA.name, **({LABEL_FABRIC: fabric.value} if fabric else {})}


def nvidia_dra_driver_values(fleet: Fleet, groups: list[NodeGroup]) -> dict[str, Any]:
    tolerations = [_GPU_TOLERATION, *(t for t in group_tolerations(groups) if t != _GPU_TOLERATION)]
    return {
        "gpuResourcesEnabledOverride": True,
        "resourceApiVersion": RESOURCE_API,
        "nvidiaDriverRoot": DRIVER_ROOT[fleet.versions.driver_source],
        "resources": {"gpus": {"enabled": True}},
        "controller": {"nodeSelector": {LABEL_NODE_GROUP: SYSTEM_GROUP}},
        "kubeletPlugin": {"nodeSelector": dra_selector(), "tolerations": tolerations},
    }


def efa_dra_driver_values(groups: list[NodeGroup]) -> dict[str, Any]:
    return {
        "nodeSelector": dra_selector(Fabric.EFA),
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": sorted({g.instance_type for g in groups})},
        "tolerations": group_tolerations(groups),
    }
