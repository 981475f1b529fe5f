"""What hands a node group's GPUs (and EFA interfaces) to pods: what each `devices` value is, as the rules and the plan
both read it. The plan's side of a device manager (node labels, drivers, claim templates, Kueue's mappings) is
gpufleet.plan.builders.device_managers; a new device manager is an entry here, one there, and its value in the
schema's enum.

Why, with sources: docs/dra.md, "Design notes", gpufleet/spec/devices.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpufleet.spec.fleet import Devices, NodeGroup, Provisioner, SharingStrategy
from gpufleet.spec.names import EFA_RESOURCE, GPU_RESOURCE

# The node label that says which device manager runs on a node; its value is the `devices` name.
LABEL_DEVICE_MANAGER = "gpufleet.io/device-manager"
# The DeviceClasses the DRA drivers' charts create (kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/
# dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml @ v0.4.1; aws/eks-charts stable/aws-dranet
# templates/deviceclass.yaml, deviceClass.name).
GPU_DEVICE_CLASS = "gpu.nvidia.com"
EFA_DEVICE_CLASS = "efa.networking.k8s.aws"


def quota_resource(device_class: str) -> str:
    """The name the devices of one DeviceClass are counted under: a ResourceQuota's (`<class>.deviceclass.resource
    .k8s.io/devices`, Kubernetes "Resource Quotas", Dynamic Resource Allocation), and the same name for Kueue's
    deviceClassMappings and the ClusterQueues' covered resources, so one name means one thing everywhere."""
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


@dataclass(frozen=True, slots=True)
class DeviceManaging:
    name: Devices
    # Pods ask for the devices through ResourceClaims (resource.k8s.io), not extended resources in their limits.
    claims: bool
    # The oldest Kubernetes minor it works on (None: every version gpufleet supports).
    min_kubernetes: tuple[int, int] | None
    # The provisioners whose nodes it can run on (their autoscaling must model its devices).
    provisioners: frozenset[Provisioner]
    # The sharing strategies it offers as a supported (not alpha) feature.
    sharing: frozenset[SharingStrategy]
    # The oldest Bottlerocket release it runs on (major, minor, patch); None: any.
    bottlerocket_min: tuple[int, int, int] | None
    # Kueue's Topology Aware Scheduling counts its devices.
    kueue_tas: bool
    # The component (gpufleet.facts.versions.COMPONENTS key) that hands out the GPUs, where the GPU Operator does not.
    gpu_component: str | None
    # The component that hands out the EFA interfaces of an EFA group.
    efa_component: str
    # The DeviceClass whose claims stand in for each device plugin resource ({} where pods ask for those).
    claimed: Mapping[str, str]


DEVICE_PLUGIN = DeviceManaging(
    name="DevicePlugin",
    claims=False,
    min_kubernetes=None,
    provisioners=frozenset({"ManagedNodeGroup", "Karpenter"}),
    sharing=frozenset(SharingStrategy),
    bottlerocket_min=None,
    kueue_tas=True,
    gpu_component=None,  # the GPU Operator's device plugin (Bottlerocket's own on Bottlerocket)
    efa_component="efaDevicePlugin",
    claimed={},
)
DRA = DeviceManaging(
    name="DRA",
    claims=True,
    # resource.k8s.io/v1 is GA (served by default) from Kubernetes 1.34 (KEP-4381); the driver's prerequisites ask
    # for v1.34.2 or later (kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/prerequisites.md @ v0.4.1).
    min_kubernetes=(1, 34),
    # Karpenter 1.14 (the pinned release) does not provision for ResourceClaims: its DRA support arrives in 1.15,
    # behind feature gates; EKS documents the NVIDIA DRA driver with managed node groups, self-managed nodes and
    # Karpenter static capacity only (EKS user guide, device-management-nvidia-dra-device-plugin).
    provisioners=frozenset({"ManagedNodeGroup"}),
    # Time-slicing and MPS are the driver's alpha gates TimeSlicingSettings and MPSSupport, dynamic MIG its alpha
    # gate DynamicMIG (pkg/featuregates/featuregates.go @ v0.4.1); gpufleet's MIG is the GPU Operator's MIG manager
    # with the device plugin's strategies, which a DRA node does not run.
    sharing=frozenset({SharingStrategy.EXCLUSIVE}),
    # Bottlerocket's NVIDIA variants run their own device plugin; `settings.kubelet-device-plugins.nvidia.enabled`
    # turns it off from 1.63.0 (EKS user guide, device-management-nvidia-time-slicing, "NVIDIA DRA driver").
    bottlerocket_min=(1, 63, 0),
    # "No DRA + Topology Aware Scheduling (TAS): DRA resources are not accounted for in TAS capacity calculations"
    # (kubernetes-sigs/kueue site/content/en/docs/concepts/dynamic_resource_allocation.md @ v0.19.2, Limitations).
    kueue_tas=False,
    gpu_component="nvidiaDraDriver",
    efa_component="efaDraDriver",
    claimed={GPU_RESOURCE: GPU_DEVICE_CLASS, EFA_RESOURCE: EFA_DEVICE_CLASS},
)
DEVICE_MANAGING: Mapping[Devices, DeviceManaging] = {d.name: d for d in (DEVICE_PLUGIN, DRA)}

_RELEASE = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)")


def device_managing(group: NodeGroup) -> DeviceManaging:
    return DEVICE_MANAGING[group.devices]


def counted(group: NodeGroup, resource: str) -> str:
    """The name a group's `resource` (as the device plugin would advertise it) is counted under in quotas."""
    device_class = device_managing(group).claimed.get(resource)
    return quota_resource(device_class) if device_class else resource


def bottlerocket_release(release_version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a Bottlerocket AMI release version such as `1.54.0-5043decc`; None when not one."""
    match = _RELEASE.match(release_version)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def kubernetes_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"^([0-9]+)\.([0-9]+)$", version)
    return (int(match.group(1)), int(match.group(2))) if match else None
