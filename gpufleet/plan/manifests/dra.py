"""Dynamic Resource Allocation (devices DRA): the drivers' Helm values, as plain dicts.

Why, with sources: docs/dra.md, "Design notes", gpufleet/plan/manifests/dra.py.
"""

from __future__ import annotations

import copy
from typing import Any

from gpufleet.facts import catalog, pcie
from gpufleet.plan.manifests.network import INSTANCE_TYPE_LABEL, group_tolerations
from gpufleet.spec.devices import DRA, EFA_DEVICE_CLASS, GPU_DEVICE_CLASS, LABEL_DEVICE_MANAGER, quota_resource
from gpufleet.spec.efa import efa_interfaces
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup, Quota, Team
from gpufleet.spec.names import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    LABEL_FABRIC,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    LABEL_TEAM,
    SYSTEM_GROUP,
)

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


# --- What teams claim -----------------------------------------------------------------------------------------
# In each team namespace with quota on a DRA group: a ResourceClaimTemplate per whole-GPU count (gpu.nvidia.com,
# ExactCount: the only allocation mode Kueue counts, pkg/dra/claims.go countDevicesPerClass @ v0.19.2), and on EFA
# groups one PCIe root's GPUs with its EFA interfaces, all on that root (constraints[].matchAttribute
# resource.kubernetes.io/pcieRoot, kubernetes-sigs/dranet examples/aws_eks_examples/gpu-efa/resource-claim-template
# .yaml @ v1.4.0, whose 1 GPU + 1 EFA is p4d's half root); a pod asks for N roots with N claims from it.

GPU_REQUEST = "gpu"
EFA_REQUEST = "efa"
DEVICE_QUOTA = "gpufleet-dra-devices"


def gpu_counts(group: NodeGroup) -> tuple[int, ...]:
    """The whole-GPU counts a team gets a template for: powers of two up to the node's GPUs, and the node's GPUs."""
    info = catalog.lookup(group.instance_type)
    per_node = info.gpu_count if info else 1
    return tuple(sorted({1 << k for k in range(per_node.bit_length()) if 1 << k <= per_node} | {per_node}))


def gpu_template_name(group: NodeGroup, count: int) -> str:
    return f"{group.name}-gpu-{count}"


def aligned_template_name(group: NodeGroup) -> str:
    return f"{group.name}-gpu-efa"


def _request(name: str, device_class: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count},
    }


def _template(team: Team, group: NodeGroup, name: str, devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": name,
            "namespace": team.namespace,
            "labels": {**LABEL_MANAGED_BY, LABEL_TEAM: team.name, LABEL_NODE_GROUP: group.name},
        },
        "spec": {"spec": {"devices": devices}},
    }


def root_share(group: NodeGroup) -> tuple[int, int]:
    """(GPUs, EFA interfaces) the aligned claim asks for: one PCIe root's of the group's instance type
    (gpufleet.facts.pcie), else 1 GPU with the node's interfaces per GPU.

    Why: docs/dra.md, "Design notes", dra.root_share."""
    layout = pcie.roots(group.instance_type)
    if layout:
        return layout[0].gpus, layout[0].efa
    info = catalog.lookup(group.instance_type)
    gpus = info.gpu_count if info else 1
    return 1, max(1, efa_interfaces(group) // max(gpus, 1))


def aligned_claims_per_node(group: NodeGroup) -> int:
    """How many aligned claims take a whole node: its GPUs over the GPUs of one claim."""
    info = catalog.lookup(group.instance_type)
    return (info.gpu_count if info else 1) // root_share(group)[0]


def _aligned_devices(group: NodeGroup) -> dict[str, Any]:
    gpus, efa = root_share(group)
    return {
        "requests": [_request(GPU_REQUEST, GPU_DEVICE_CLASS, gpus), _request(EFA_REQUEST, EFA_DEVICE_CLASS, efa)],
        "constraints": [{"requests": [GPU_REQUEST, EFA_REQUEST], "matchAttribute": PCIE_ROOT}],
    }


def claiming_gate(group: NodeGroup, job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The NCCL bandwidth gate of a DRA EFA group: its ResourceClaimTemplate (the team's aligned claim, in the gate's
    namespace, under the gate's name) and its Job with the device plugins' resources replaced by one claim per PCIe
    root of the GPUs each pod takes, which hands it those GPUs and every EFA interface on their roots."""
    job = copy.deepcopy(job)
    meta = job["metadata"]
    template = {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"])},
        "spec": {"spec": {"devices": _aligned_devices(group)}},
    }
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    resources = container["resources"]
    gpus = int(resources["limits"].pop(GPU_RESOURCE))
    resources["limits"].pop(EFA_RESOURCE, None)
    resources["requests"] = {k: v for k, v in resources["requests"].items() if k not in (GPU_RESOURCE, EFA_RESOURCE)}
    claims = [
        {"name": f"gpu-efa-{i}", "resourceClaimTemplateName": meta["name"]} for i in range(gpus // root_share(group)[0])
    ]
    pod["resourceClaims"] = claims
    resources["claims"] = [{"name": c["name"]} for c in claims]
    return template, job


def template_gpus(template: dict[str, Any]) -> int:
    """The GPUs a claim from `template` holds: the counts of its requests of DeviceClass gpu.nvidia.com (every request
    gpufleet renders is ExactCount)."""
    requests = template["spec"]["spec"]["devices"]["requests"]
    return sum(r["exactly"]["count"] for r in requests if r["exactly"]["deviceClassName"] == GPU_DEVICE_CLASS)


def claim_templates(team: Team, group: NodeGroup) -> list[dict[str, Any]]:
    """The team's templates for one DRA group: whole GPUs by count, and on EFA groups one PCIe root's GPUs with its
    EFA interfaces (root_share)."""
    out = [
        _template(team, group, gpu_template_name(group, n), {"requests": [_request(GPU_REQUEST, GPU_DEVICE_CLASS, n)]})
        for n in gpu_counts(group)
    ]
    if group.fabric is Fabric.EFA:
        out.append(_template(team, group, aligned_template_name(group), _aligned_devices(group)))
    return out


def gpu_ceiling(fleet: Fleet, team: Team, quota: Quota) -> int:
    """The most GPUs of the quota's group the team's workloads can hold at once: its nominal quota, plus what it may
    borrow in its cohort (its borrowing limit, or without one the whole group), never more than the group has."""
    group = fleet.node_group(quota.node_group)
    info = catalog.lookup(group.instance_type)
    most = group.max_size * (info.gpu_count if info else 0)
    if team.cohort is None:
        return min(quota.gpus, most)
    if quota.borrowing_limit is not None:
        return min(quota.gpus + quota.borrowing_limit, most)
    return most


def efa_ceiling(fleet: Fleet, team: Team, quota: Quota) -> int:
    """The EFA interfaces that come with gpu_ceiling GPUs of an EFA group: the node's interfaces per GPU, rounded up."""
    group = fleet.node_group(quota.node_group)
    info = catalog.lookup(group.instance_type)
    if info is None or info.gpu_count == 0:
        return 0
    return -(-gpu_ceiling(fleet, team, quota) * efa_interfaces(group) // info.gpu_count)


def device_quota(fleet: Fleet, team: Team, groups: list[NodeGroup]) -> dict[str, Any]:
    """The team namespace's ResourceQuota on the devices its claims may hold on the DRA groups `groups`."""
    names = {g.name for g in groups}
    quotas = [q for q in team.quotas if q.node_group in names]
    hard = {quota_resource(GPU_DEVICE_CLASS): str(sum(gpu_ceiling(fleet, team, q) for q in quotas))}
    efa = [q for q in quotas if fleet.node_group(q.node_group).fabric is Fabric.EFA]
    if efa:
        hard[quota_resource(EFA_DEVICE_CLASS)] = str(sum(efa_ceiling(fleet, team, q) for q in efa))
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": DEVICE_QUOTA,
            "namespace": team.namespace,
            "labels": {**LABEL_MANAGED_BY, LABEL_TEAM: team.name},
        },
        "spec": {"hard": hard},
    }
