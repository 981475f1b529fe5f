"""What hands a node group's GPUs (and EFA interfaces) to pods, the plan's side (gpufleet.spec.devices is the
spec's): one DeviceManager per `devices` value, in MANAGERS. Stage 1 takes each group's node labels (beside the
group's own) and Bottlerocket settings from it. A new device manager is a class here (or its own module) and a line
in MANAGERS (and its gpufleet.spec.devices entry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from gpufleet.plan.parts import AtFoundation
from gpufleet.spec.devices import DEVICE_PLUGIN, DRA, LABEL_DEVICE_MANAGER, DeviceManaging
from gpufleet.spec.fleet import NodeGroup

# The GPU Operator deploys its device plugin on a node whose label nvidia.com/gpu.deploy.device-plugin is "true"
# (assets/state-device-plugin/0500_daemonset.yaml nodeSelector) and sets the label only where it is absent or empty,
# so a node created with "false" keeps it (controllers/state_manager.go addGPUStateLabels, NVIDIA/gpu-operator @
# v26.7.0).
LABEL_DEPLOY_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"


class DeviceManager(Protocol):
    @property
    def managing(self) -> DeviceManaging: ...

    def node_labels(self, group: NodeGroup) -> dict[str, str]:
        """The labels of the group's nodes that select this device manager's DaemonSets and keep the others off."""
        ...

    def bottlerocket_settings(self, group: NodeGroup) -> dict[str, Any]:
        """Keys of Bottlerocket's `[settings.kubelet-device-plugins.nvidia]` table for the group's nodes."""
        ...


class DevicePlugin:
    """devices DevicePlugin: the GPU Operator's NVIDIA device plugin (Bottlerocket's own on Bottlerocket) and the EFA
    device plugin; pods ask for nvidia.com/gpu and vpc.amazonaws.com/efa in their limits."""

    managing = DEVICE_PLUGIN

    def node_labels(self, group: NodeGroup) -> dict[str, str]:
        return {LABEL_DEVICE_MANAGER: self.managing.name}

    def bottlerocket_settings(self, group: NodeGroup) -> dict[str, Any]:
        return {}


class DynamicResourceAllocation:
    """devices DRA: the NVIDIA DRA driver for GPUs and, on EFA groups, the EFA DRA driver; pods reference
    ResourceClaimTemplates. The GPU Operator keeps its other operands (driver or not, toolkit, DCGM, the validator's
    driver and toolkit checks) on these nodes, but not its device plugin."""

    managing = DRA

    def node_labels(self, group: NodeGroup) -> dict[str, str]:
        return {LABEL_DEVICE_MANAGER: self.managing.name, LABEL_DEPLOY_DEVICE_PLUGIN: "false"}

    def bottlerocket_settings(self, group: NodeGroup) -> dict[str, Any]:
        # Bottlerocket's NVIDIA variants run their own device plugin unless this is false (1.63.0 or later, which
        # gpufleet.rules.devices asks for; EKS user guide, device-management-nvidia-time-slicing).
        return {"enabled": False}


MANAGERS: Mapping[str, DeviceManager] = {m.managing.name: m for m in (DevicePlugin(), DynamicResourceAllocation())}


def of(group: NodeGroup) -> DeviceManager:
    return MANAGERS[group.devices]


def at_foundation() -> AtFoundation:
    """Each group's device manager's Bottlerocket settings, in every rollout (its node labels are the group's own,
    gpufleet.plan.builders.node_groups.node_labels)."""
    return AtFoundation(bottlerocket_settings=lambda group: of(group).bottlerocket_settings(group) or None)
