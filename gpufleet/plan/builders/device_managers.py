"""What hands a node group's GPUs (and EFA interfaces) to pods, the plan's side (gpufleet.spec.devices is the
spec's): one DeviceManager per `devices` value, in MANAGERS.

Why, with sources: docs/dra.md, "Design notes", gpufleet/plan/builders/device_managers.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from gpufleet.plan.builders.common import helm, k8s, namespace
from gpufleet.plan.manifests import dra
from gpufleet.plan.manifests.network import efa_device_plugin_values
from gpufleet.plan.parts import AtFoundation, BuildContext, Resource
from gpufleet.spec.devices import (
    DEVICE_PLUGIN,
    DRA,
    EFA_DEVICE_CLASS,
    GPU_DEVICE_CLASS,
    LABEL_DEVICE_MANAGER,
    DeviceManaging,
    quota_resource,
)
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup, Team
from gpufleet.spec.names import NS_NETWORK

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

    def foundation_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], gpu_operator: Resource
    ) -> list[Resource]:
        """Stage 1's resources once for the groups it manages (what hands out their GPUs beside the GPU Operator)."""
        ...

    def network_resources(self, ctx: BuildContext, groups: Sequence[NodeGroup], network_ns: str) -> list[Resource]:
        """The network stage's resources once for the EFA groups it manages: what hands out their EFA interfaces
        (the first resource is the one the group's NCCL gate waits for)."""
        ...

    def team_objects(self, fleet: Fleet, team: Team, groups: Sequence[NodeGroup]) -> list[dict[str, Any]]:
        """The admission stage's objects in the team's namespace for the groups it manages that the team has quota
        on: what the team's pods ask for the devices with, and the quota on it."""
        ...

    def admission_notes(self, fleet: Fleet, groups: Sequence[NodeGroup]) -> list[str]:
        """What plan.md's admission section says of how teams ask for the devices of its groups and how their quota
        holds ([] where nothing beyond the quota table)."""
        ...


class DevicePlugin:
    """devices DevicePlugin: the GPU Operator's NVIDIA device plugin (Bottlerocket's own on Bottlerocket) and the EFA
    device plugin; pods ask for nvidia.com/gpu and vpc.amazonaws.com/efa in their limits."""

    managing = DEVICE_PLUGIN

    def node_labels(self, group: NodeGroup) -> dict[str, str]:
        return {LABEL_DEVICE_MANAGER: self.managing.name}

    def bottlerocket_settings(self, group: NodeGroup) -> dict[str, Any]:
        return {}

    def foundation_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], gpu_operator: Resource
    ) -> list[Resource]:
        return []  # the GPU Operator's device plugin, or Bottlerocket's own

    def network_resources(self, ctx: BuildContext, groups: Sequence[NodeGroup], network_ns: str) -> list[Resource]:
        fleet = ctx.fleet
        return [
            helm(
                "efaDevicePlugin",
                fleet.versions.efa_device_plugin,
                fleet=fleet,
                release="aws-efa-k8s-device-plugin",
                namespace=NS_NETWORK,
                values=efa_device_plugin_values(list(groups)),
                depends_on=(network_ns,),
            )
        ]

    def team_objects(self, fleet: Fleet, team: Team, groups: Sequence[NodeGroup]) -> list[dict[str, Any]]:
        return []  # pods put nvidia.com/gpu and vpc.amazonaws.com/efa in their limits; Kueue's quota counts them

    def admission_notes(self, fleet: Fleet, groups: Sequence[NodeGroup]) -> list[str]:
        return []


class DynamicResourceAllocation:
    """devices DRA: the NVIDIA DRA driver for GPUs and, on EFA groups, the EFA DRA driver; pods reference
    ResourceClaimTemplates.

    Why: docs/dra.md, "Design notes", device_managers.DynamicResourceAllocation."""

    managing = DRA

    def node_labels(self, group: NodeGroup) -> dict[str, str]:
        return {LABEL_DEVICE_MANAGER: self.managing.name, LABEL_DEPLOY_DEVICE_PLUGIN: "false"}

    def bottlerocket_settings(self, group: NodeGroup) -> dict[str, Any]:
        # Bottlerocket's NVIDIA variants run their own device plugin unless this is false (1.63.0 or later, which
        # gpufleet.rules.devices asks for; EKS user guide, device-management-nvidia-time-slicing).
        return {"enabled": False}

    def foundation_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], gpu_operator: Resource
    ) -> list[Resource]:
        # After the GPU Operator: its Node Feature Discovery labels the GPU nodes the kubelet plugin's node affinity
        # selects (feature.node.kubernetes.io/pci-10de.present, nvidia.com/gpu.present), and its toolkit or the AMI
        # provide the driver root.
        fleet = ctx.fleet
        ns = k8s(namespace(dra.NS_DRA_DRIVER, {"pod-security.kubernetes.io/enforce": "privileged"}))
        release = helm(
            "nvidiaDraDriver",
            fleet.versions.nvidia_dra_driver,
            fleet=fleet,
            release=dra.DRA_DRIVER_RELEASE,
            namespace=dra.NS_DRA_DRIVER,
            values=dra.nvidia_dra_driver_values(fleet, list(groups)),
            depends_on=(ns.id, gpu_operator.id),
        )
        return [ns, release]

    def network_resources(self, ctx: BuildContext, groups: Sequence[NodeGroup], network_ns: str) -> list[Resource]:
        fleet = ctx.fleet
        return [
            helm(
                "efaDraDriver",
                fleet.versions.efa_dra_driver,
                fleet=fleet,
                release=dra.EFA_DRA_RELEASE,
                namespace=NS_NETWORK,
                values=dra.efa_dra_driver_values(list(groups)),
                depends_on=(network_ns,),
            )
        ]

    def team_objects(self, fleet: Fleet, team: Team, groups: Sequence[NodeGroup]) -> list[dict[str, Any]]:
        return [obj for g in groups for obj in dra.claim_templates(team, g)] + [
            dra.device_quota(fleet, team, list(groups))
        ]

    def admission_notes(self, fleet: Fleet, groups: Sequence[NodeGroup]) -> list[str]:
        names = ", ".join(f"`{g.name}`" for g in groups)
        efa = [g for g in groups if g.fabric is Fabric.EFA]
        lines = [
            "",
            (
                f"Node group{'s' if len(groups) > 1 else ''} {names} hand{'' if len(groups) > 1 else 's'} out GPUs"
                " through Dynamic Resource Allocation"
                " (devices DRA, docs/dra.md): pods ask for them with the ResourceClaimTemplates in their team's"
                f" namespace (`<group>-gpu-<n>`{', `<group>-gpu-efa`' if efa else ''}), not with `nvidia.com/gpu`"
                " limits. Kueue counts each claim's devices by DeviceClass (resources.deviceClassMappings): GPUs as"
                f" `{quota_resource(GPU_DEVICE_CLASS)}`"
                + (f", EFA interfaces as `{quota_resource(EFA_DEVICE_CLASS)}`" if efa else "")
                + ", which the ClusterQueues cover (0 on the other flavors). Each team namespace's ResourceQuota"
                f" `{dra.DEVICE_QUOTA}` holds its claims to the same devices at its quota plus what it may borrow."
                " `gpufleet explain` judges workloads on these groups (their claims as Kueue counts them, the"
                " node's devices, the aligned claim on the PCIe layout; docs/explain-model.md), and so does"
                " synth's self-check, whose canonical pod on each claims from the first team's templates (Will it"
                " run?). The Cluster Autoscaler never scales a DRA group up from zero nodes for pods that"
                " claim devices (its template node, built from the Auto Scaling group, publishes no devices):"
                " keep `scaling.minSize` at 1 or more."
            ),
        ]
        if efa:
            lines += [
                "",
                (
                    "The aligned claim (`<group>-gpu-efa`: one PCIe root's GPUs with its EFA interfaces) has a"
                    " constraint, which Kueue 0.19 does not support (its docs' Limitations: no device constraints):"
                    " Kueue still charges the claim's GPUs and interfaces by DeviceClass and ignores the constraint"
                    " (pkg/dra/claims.go countDevicesPerClass reads only each request's class and count), so its"
                    " quota holds, and the scheduler puts them on one PCIe root of the node."
                    " The namespace's ResourceQuota is the ceiling that does not depend on Kueue: a claim beyond it"
                    " is refused when it is created. Kueue's Topology Aware Scheduling is off on DRA flavors."
                ),
            ]
        return lines


MANAGERS: Mapping[str, DeviceManager] = {m.managing.name: m for m in (DevicePlugin(), DynamicResourceAllocation())}


def of(group: NodeGroup) -> DeviceManager:
    return MANAGERS[group.devices]


def managed(
    fleet: Fleet, fabric: Fabric | None = None, team: Team | None = None
) -> list[tuple[DeviceManager, list[NodeGroup]]]:
    """Each device manager the fleet's groups (of one fabric; the team has quota on) use, with its groups, in the
    order of their first group."""
    quota = {q.node_group for q in team.quotas} if team else None
    groups = [
        g for g in fleet.node_groups if (fabric is None or g.fabric is fabric) and (quota is None or g.name in quota)
    ]
    return [
        (MANAGERS[name], [g for g in groups if g.devices == name]) for name in dict.fromkeys(g.devices for g in groups)
    ]


def at_foundation() -> AtFoundation:
    """Each group's device manager's Bottlerocket settings, in every rollout (its node labels are the group's own,
    gpufleet.plan.builders.node_groups.node_labels)."""
    return AtFoundation(bottlerocket_settings=lambda group: of(group).bottlerocket_settings(group) or None)
