"""The workloads synth puts through the model: every workload object gpufleet renders, and one canonical workload
per node group: a full-node pod for Training groups (every GPU and fabric device, Guaranteed, whole CPUs; one NUMA
node's share with topology.podShape OneNumaNode), one whole
GPU for Inference, one shared unit (time-slicing / MPS replica, MIG slice) for shared groups, each in the namespace of
the first team with quota on the group and through its queue.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/canonical.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.facts import stages
from gpufleet.plan.manifests import dra, kueue, node_bootstrap
from gpufleet.plan.manifests.sharing import devices_per_gpu
from gpufleet.simulate.controllers import controllers
from gpufleet.simulate.nodes import NUMA_ALIGNED_PREFIXES
from gpufleet.simulate.operands import operands
from gpufleet.simulate.verdict import FleetModel
from gpufleet.simulate.workload import KINDS, QUEUE_LABEL, Workload, workload
from gpufleet.spec import defaults
from gpufleet.spec.devices import EFA_DEVICE_CLASS, counted, device_managing, quota_resource
from gpufleet.spec.fleet import Fabric, NodeGroup, SharingStrategy, Team, WorkloadClass
from gpufleet.spec.names import GPU_RESOURCE, LABEL_NODE_GROUP, group_taints, tolerations_for


def rendered(model: FleetModel) -> list[Workload]:
    """Every workload object of the included stages (gate Jobs, prepuller and health DaemonSets, Deployments), the
    node DaemonSets of the pinned charts (gpufleet.simulate.operands) and their controllers
    (gpufleet.simulate.controllers).
    """
    out = operands(model.plan) + controllers(model.plan)
    for stage in model.plan.included():
        for res in stage.content.resources:
            obj = res.args.get("object")
            if isinstance(obj, dict) and obj.get("kind") in KINDS:
                out.append(workload(obj))
    return out


def shape(group: NodeGroup) -> str:
    if group.sharing.strategy is not SharingStrategy.EXCLUSIVE:
        return "one shared unit"
    if group.workload_class is not WorkloadClass.TRAINING:
        return "one GPU"
    # topology.podShape OneNumaNode: the work runs one NUMA node's GPUs, NICs and CPUs per pod (gpufleet.spec.defaults).
    one_numa = defaults.pod_shape(group) == "OneNumaNode" and node_bootstrap.numa_nodes(group) > 1
    return "one NUMA node" if one_numa else "full node"


def claims_team(model: FleetModel, group: NodeGroup) -> Team | None:
    """The team whose namespace holds the group's ResourceClaimTemplates for the canonical workload of a DRA group:
    the first with quota on it (gpufleet renders a team's templates only for the groups it has quota on)."""
    return next((t for t in model.plan.fleet.teams if any(q.node_group == group.name for q in t.quotas)), None)


def _claims(model: FleetModel, group: NodeGroup, gpus: int) -> list[dict[str, str]]:
    """The pod's claims on a DRA group (devices DRA), from the group's templates in the team's namespace: one PCIe
    root's GPUs with its EFA interfaces per claim where the node publishes its interfaces (the aligned template, as
    the group's EFA runtime claims them), else one claim of the GPUs."""
    node = model.nodes[group.name]
    if group.fabric is Fabric.EFA and quota_resource(EFA_DEVICE_CLASS) in node.allocatable:
        per_root = dra.root_share(group)[0]
        return [
            {"name": f"gpu-efa-{i}", "resourceClaimTemplateName": dra.aligned_template_name(group)}
            for i in range(max(1, gpus // per_root))
        ]
    return [{"name": "gpus", "resourceClaimTemplateName": dra.gpu_template_name(group, gpus)}]


def canonical(model: FleetModel, group: NodeGroup) -> Workload:
    node = model.nodes[group.name]
    claiming = device_managing(group).claims
    # A DRA node publishes its GPUs as devices, counted under the DeviceClass's quota name (gpufleet.simulate.claims).
    units = node.allocatable.get(counted(group, GPU_RESOURCE), 0)
    # one device is one GPU until the sharing stage configures replicas or MIG slices
    with_sharing = stages.included("sharing", model.plan.through)
    per = kueue.per_gpu(group, with_sharing=with_sharing)
    if shape(group) in ("full node", "one NUMA node"):
        # A NUMA node's share of every NUMA-aligned device, huge pages, CPU and memory, or all of them.
        share = len(node.numa_nodes) if shape(group) == "one NUMA node" else 1
        limits: dict[str, Any] = {
            r: v // share for r, v in node.allocatable.items() if r.startswith(NUMA_ALIGNED_PREFIXES)
        }
        claims = _claims(model, group, units // share) if claiming else []
        if "hugepages-2Mi" in node.allocatable:
            limits["hugepages-2Mi"] = f"{node.allocatable['hugepages-2Mi'] // share}Mi"
        cpu_milli = per.cpu_milli * units // per.devices // share
        memory = per.memory_mib * units // per.devices // share
    else:
        # one unit of the group's most numerous device as the node advertises it: nvidia.com/gpu, or the smallest
        # slice of a mixed MIG layout once the sharing stage partitions the node
        per_gpu = {
            r: n for r, n in devices_per_gpu(group, with_sharing=with_sharing).items() if r in node.allocatable
        } or {GPU_RESOURCE: 1}
        limits = {} if claiming else {max(per_gpu.items(), key=lambda item: item[1])[0]: 1}
        claims = _claims(model, group, 1) if claiming else []
        cpu_milli, memory = per.cpu_milli // per.devices, per.memory_mib // per.devices
    # Guaranteed with whole CPUs: the shape the static CPU manager pins, the hardest for the Topology Manager.
    limits.update({"cpu": str(max(1, cpu_milli // 1000)), "memory": f"{memory}Mi"})
    team = claims_team(model, group)
    labels = {QUEUE_LABEL: team.name} if team and model.kueue else {}
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"canonical-{group.name}",
            "namespace": team.namespace if team else "default",
            "labels": labels,
        },
        "spec": {
            "parallelism": 1,
            # It tolerates the group's taints as a workload meant for the group does (Kueue adds at most 8 of them).
            "template": {
                "spec": {
                    "nodeSelector": {LABEL_NODE_GROUP: group.name},
                    "tolerations": tolerations_for(group_taints(group)),
                    # Hardened as `restricted` Pod Security asks (a team may enforce it): the shape is the question.
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [
                        {
                            "name": "main",
                            "resources": {
                                "limits": limits,
                                **({"claims": [{"name": c["name"]} for c in claims]} if claims else {}),
                            },
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                        }
                    ],
                    **({"resourceClaims": claims} if claims else {}),
                }
            },
        },
    }
    return workload(obj)
