"""KWOK nodes shaped as gpufleet says each node group's nodes register.

Each GPU node is built from gpufleet's own node model (gpufleet.simulate.nodes: labels and taints from the rendered
node group or NodePool, allocatable from the rendered launch template, device-plugin and MIG configs), so the box
tests the fleet against what gpufleet claims a node offers; tests/model holds that model to the renderer and to
upstream. The model's allocatable leaves room for the charts' DaemonSets (DAEMONSET_CPU_MILLI and _MEMORY_MIB);
the box registers the kubelet's figure, which gives that room back, because no chart DaemonSet runs here (the
charts are not rendered: their CRDs are applied, their controllers run as processes where the box has them).

Nodes are pre-created up to each group's maxSize and marked `gpufleet.io/box-precreated=true`: the Cluster
Autoscaler's kwok provider is not served by the module proxy (docs/cluster-in-a-box.md), so scale from zero is
replaced by nodes that already exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from e2e.box.cluster import KWOK_ANNOTATION
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate import node_resources
from gpufleet.simulate.nodes import NodeModel, fleet_nodes
from gpufleet.spec.names import LABEL_NODE_GROUP

PRECREATED = "gpufleet.io/box-precreated"
# Quantities the model keeps in MiB; the rest are counts (cpu in millicores).
_MIB = ("memory", "ephemeral-storage")


def _quantity(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value}m"
    if resource in _MIB or resource.startswith("hugepages-"):
        return f"{value}Mi"
    return str(value)


def _status(capacity: dict[str, int], allocatable: dict[str, int], kubelet: str) -> dict[str, Any]:
    return {
        "capacity": {r: _quantity(r, v) for r, v in capacity.items()},
        "allocatable": {r: _quantity(r, v) for r, v in allocatable.items()},
        "nodeInfo": {"kubeletVersion": kubelet, "architecture": "amd64", "operatingSystem": "linux"},
    }


def _node(name: str, labels: dict[str, str], taints: list[dict[str, str]], status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {**labels, "kubernetes.io/hostname": name, PRECREATED: "true"},
            "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"taints": taints},
        "status": status,
    }


def gpu_nodes(model: NodeModel, kubelet: str) -> Iterator[dict[str, Any]]:
    allocatable = dict(model.allocatable)
    allocatable["cpu"] += node_resources.DAEMONSET_CPU_MILLI
    allocatable["memory"] += node_resources.DAEMONSET_MEMORY_MIB
    capacity = dict(allocatable)
    if model.template is not None:
        capacity["cpu"] = model.template["resources"]["cpu"]
        capacity["memory"] = model.template["resources"]["memory"]
    for i in range(model.max_size):
        yield _node(
            f"{model.group}-{i}",
            dict(model.labels),
            [dict(t) for t in model.taints],
            _status(capacity, allocatable, kubelet),
        )


def system_nodes(plan: RolloutPlan, kubelet: str) -> Iterator[dict[str, Any]]:
    """gpufleet's CPU system group (cluster.systemNodes), at its minimum size, shaped from EC2's instance data as
    moto ships it (nodeadm's kube-reserved CPU; memory less the eviction threshold and kube-reserved)."""
    system = plan.fleet.cluster.system_nodes
    if system is None:
        return
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    info = INSTANCE_TYPES[system.instance_type]
    vcpus, mib = info["VCpuInfo"]["DefaultVCpus"], info["MemoryInfo"]["SizeInMiB"]
    capacity = {"cpu": vcpus * 1000, "memory": mib, "pods": 58, "ephemeral-storage": 80 * 1024}
    allocatable = {
        "cpu": vcpus * 1000 - node_resources.kube_reserved_cpu_milli(vcpus),
        "memory": mib - (11 * 58 + 255) - 100,
        "pods": 58,
        "ephemeral-storage": 70 * 1024,
    }
    labels = {
        LABEL_NODE_GROUP: "system",
        "node.kubernetes.io/instance-type": system.instance_type,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
    }
    for i in range(system.min_size):
        yield _node(f"system-{i}", labels, [], _status(capacity, allocatable, kubelet))


def fleet(plan: RolloutPlan, kubelet: str, *, launched: bool = False) -> list[dict[str, Any]]:
    """Every node the box registers for this plan; with `launched`, none for a Karpenter pool (Karpenter runs and
    launches them)."""
    out = list(system_nodes(plan, kubelet))
    for model in fleet_nodes(plan):
        if not (launched and model.node_pool):
            out += gpu_nodes(model, kubelet)
    return out
