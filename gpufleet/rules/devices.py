"""Rules on `devices` (gpufleet.spec.devices): a device manager only where it can work, each refusal with its reason.
The rules read what a device manager is (its facts), never its name."""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue, Path
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec.devices import DEVICE_PLUGIN, DeviceManaging, bottlerocket_release, device_managing, kubernetes_minor
from gpufleet.spec.fleet import Fleet, NodeGroup, SharingStrategy

# Why a device manager without a sharing strategy cannot share that way (the NVIDIA DRA driver's feature gates,
# kubernetes-sigs/dra-driver-nvidia-gpu pkg/featuregates/featuregates.go @ v0.4.1; gpufleet's MIG is the GPU
# Operator's MIG manager with the device plugin's strategies).
_WHY_NOT_SHARED = {
    SharingStrategy.TIME_SLICING: (
        "the NVIDIA DRA driver has time-slicing only as an alpha feature (TimeSlicingSettings)"
    ),
    SharingStrategy.MPS: "the NVIDIA DRA driver has MPS only as an alpha feature (MPSSupport)",
    SharingStrategy.MIG: (
        "the NVIDIA DRA driver partitions MIG only as an alpha feature (DynamicMIG); gpufleet's MIG is the GPU"
        " Operator's MIG manager with the device plugin"
    ),
}
_FALLBACK = f"devices: {DEVICE_PLUGIN.name}"


def _version(fleet: Fleet, path: Path, group: NodeGroup, managing: DeviceManaging) -> Iterator[Issue]:
    running = kubernetes_minor(fleet.cluster.kubernetes_version)
    if managing.min_kubernetes is None or running is None or running >= managing.min_kubernetes:
        return
    needed = ".".join(map(str, managing.min_kubernetes))
    yield Issue(
        path=path + ("devices",),
        message=(
            f"devices {managing.name} needs Kubernetes {needed} or later (resource.k8s.io/v1 is served from"
            f" {needed}); the cluster runs {fleet.cluster.kubernetes_version}"
        ),
        hint=f"use {_FALLBACK} until the cluster runs Kubernetes {needed}",
    )


def _provisioner(path: Path, group: NodeGroup, managing: DeviceManaging) -> Iterator[Issue]:
    if group.provisioner in managing.provisioners:
        return
    yield Issue(
        path=path + ("devices",),
        message=(
            f"devices {managing.name} on provisioner {group.provisioner}: Karpenter 1.14 does not provision nodes for"
            " ResourceClaims (its DRA support arrives in 1.15, behind feature gates)"
        ),
        hint=f"use provisioner ManagedNodeGroup for this group, or {_FALLBACK}",
    )


def _sharing(path: Path, group: NodeGroup, managing: DeviceManaging) -> Iterator[Issue]:
    strategy = group.sharing.strategy
    if strategy in managing.sharing:
        return
    yield Issue(
        path=path + ("sharing", "strategy"),
        message=f"sharing {strategy} with devices {managing.name}: {_WHY_NOT_SHARED[strategy]}",
        hint=f"remove sharing (Exclusive: whole GPUs by claim), or use {_FALLBACK}",
    )


def _bottlerocket(path: Path, group: NodeGroup, managing: DeviceManaging) -> Iterator[Issue]:
    if managing.bottlerocket_min is None or not group.ami_type.startswith("BOTTLEROCKET"):
        return
    release = bottlerocket_release(group.ami_release_version)
    if release is None or release >= managing.bottlerocket_min:
        return
    needed = ".".join(map(str, managing.bottlerocket_min))
    yield Issue(
        path=path + ("ami", "releaseVersion"),
        message=(
            f"Bottlerocket {'.'.join(map(str, release))} cannot turn its own NVIDIA device plugin off"
            f" (settings.kubelet-device-plugins.nvidia.enabled needs {needed} or later), and beside the DRA driver"
            " it would hand out the same GPUs twice"
        ),
        hint=f"use a Bottlerocket release {needed} or later, an AL2023 NVIDIA AMI, or {_FALLBACK}",
    )


def _topology(fleet: Fleet, path: Path, group: NodeGroup, managing: DeviceManaging) -> Iterator[Issue]:
    placement = group.topology.placement
    if managing.kueue_tas or placement in (None, "None"):
        return
    yield Issue(
        path=path + ("topology", "placement"),
        message=(
            f"placement {placement} with devices {managing.name}: Kueue's Topology Aware Scheduling does not count DRA"
            " devices (Kueue 0.19 supports DRA and TAS only apart), so its topology assignments would be wrong"
        ),
        hint=f"remove topology.placement (a DRA group is placed without TAS), or use {_FALLBACK}",
    )


@rule("devices")
def _devices(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        managing = device_managing(group)
        yield from _version(fleet, path, group, managing)
        yield from _provisioner(path, group, managing)
        yield from _sharing(path, group, managing)
        yield from _bottlerocket(path, group, managing)
        yield from _topology(fleet, path, group, managing)
