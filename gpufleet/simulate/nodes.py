"""The node model: what one node of each node group offers a pod, read from the rendered plan.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/nodes.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, assert_never

from gpufleet.facts import catalog, pricing, stages
from gpufleet.plan.manifests.autoscaler import RELEASE as AUTOSCALER_RELEASE
from gpufleet.plan.manifests.karpenter import INSTANCE_TYPE_KEY
from gpufleet.plan.manifests.karpenter import RELEASE as KARPENTER_RELEASE
from gpufleet.plan.manifests.sharing import (
    MIG_MIXED,
    MIG_PREFIX,
    MIG_SINGLE,
)
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate import node_resources
from gpufleet.spec.fleet import NodeGroup, SharingStrategy, falls_back
from gpufleet.spec.names import LABEL_NODE_GROUP, node_group_id
from gpufleet.spec.provisioning import provisioning

_K8S_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
# Resources whose devices the kubelet aligns on NUMA nodes (device plugins that report topology).
NUMA_ALIGNED_PREFIXES = ("nvidia.com/", "vpc.amazonaws.com/efa", "rdma/")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeModel:
    """One node of a group, idle."""

    group: str
    instance_type: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    # What pods may request: cpu in millicores, memory in MiB, extended resources in units.
    allocatable: Mapping[str, int]
    numa_nodes: tuple[int, ...]
    # resource -> NUMA node -> units (devices, or millicores for "cpu")
    per_numa: Mapping[str, Mapping[int, int]]
    topology_policy: str
    topology_scope: str
    cpu_manager_policy: str
    sharing: SharingStrategy
    fail_requests_greater_than_one: bool
    mig_strategy: str | None
    min_size: int
    max_size: int
    # The instances of the capacity reservation the group targets by id (a launch into it beyond them fails:
    # EC2 User Guide, capacity-reservations-launch.html); None when nothing caps the group below maxSize.
    reserved: int | None
    # The Cluster Autoscaler's scale-from-zero template, or the Karpenter NodePool's (None when neither is deployed).
    template: Mapping[str, Any] | None
    # A Karpenter group: the NodePool that launches its nodes and the capacity types it may launch them as
    # (its karpenter.sh/capacity-type requirement); None for a managed node group.
    node_pool: str | None = None
    capacity_types: tuple[str, ...] = ()
    # A Karpenter pool of several instance types (nodeGroups[].instanceTypes): one node of each, cheapest first
    # (instance_options); () for a pool of one type and for a managed node group. See instance_options.
    instance_options: tuple[NodeModel, ...] = ()


def _node_group_args(plan: RolloutPlan, group: NodeGroup) -> Mapping[str, Any]:
    for stage in plan.stages:
        for res in stage.content.resources:
            if res.id == node_group_id(group):
                return res.args
    raise AssertionError(f"no node group resource for {group.name}")


def autoscaler_deployed(plan: RolloutPlan) -> bool:
    return any(r.id == f"helm-{AUTOSCALER_RELEASE}" for s in plan.included() for r in s.content.resources)


def _quantity(value: str) -> int:
    """Extended-resource tag values: plain counts, or Mi for hugepages."""
    return int(value[:-2]) if value.endswith("Mi") else int(value)


def _split(total: int, nodes: tuple[int, ...]) -> dict[int, int]:
    """`total` units spread evenly over the NUMA nodes, the first ones taking the remainder."""
    return {n: total // len(nodes) + (1 if i < total % len(nodes) else 0) for i, n in enumerate(nodes)}


def _mig_per_numa(gpus: int, slices: list[tuple[int, str, int]], nodes: tuple[int, ...]) -> dict[str, dict[int, int]]:
    """A mixed MIG layout's slices by NUMA node: GPU i sits on NUMA node i // (GPUs per NUMA node)."""
    per_node = max(1, gpus // len(nodes))
    out: dict[str, dict[int, int]] = {}
    for gpu, resource, n in slices:
        numa = nodes[min(gpu // per_node, len(nodes) - 1)]
        out.setdefault(resource, dict.fromkeys(nodes, 0))[numa] += n
    return out


def _karpenter_object(plan: RolloutPlan, kind: str, group: NodeGroup) -> Mapping[str, Any]:
    for stage in plan.stages:
        for res in stage.content.resources:
            obj = res.args.get("object")
            if isinstance(obj, Mapping) and obj.get("kind") == kind and obj["metadata"]["name"] == group.name:
                return obj
    raise AssertionError(f"no {kind} for {group.name}")


def karpenter_variants(requirements: list[Mapping[str, Any]], pool: str) -> list[dict[str, str]]:
    """The well-known labels a node of the pool may get, one map per combination of its requirements' values: each
    NodeClaim narrows every `In` requirement to the one value it launched with (an instance type, a capacity type,
    the architecture, the zone) and carries its NodePool (kubernetes-sigs/karpenter pkg/apis/v1/labels.go
    NodePoolLabelKey, CapacityTypeLabelKey).

    Why: docs/explain-model.md, "Design notes", nodes.karpenter_variants."""
    variants: list[dict[str, str]] = [{"karpenter.sh/nodepool": pool, "kubernetes.io/os": "linux"}]
    for req in requirements:
        if req.get("operator") != "In":
            continue
        variants = [{**v, str(req["key"]): str(value)} for v in variants for value in req["values"]]
    return variants


def karpenter_deployed(plan: RolloutPlan) -> bool:
    return any(r.id == f"helm-{KARPENTER_RELEASE}" for s in plan.included() for r in s.content.resources)


def instance_options(plan: RolloutPlan, group: NodeGroup) -> tuple[NodeModel, ...]:
    """A node of each instance type a Karpenter pool may launch, cheapest On-Demand rate first (the vCPUs, then the
    name, where the rate is not in gpufleet's price table).

    Why: docs/explain-model.md, "Design notes", nodes.instance_options."""
    if provisioning(group).auto_scaling_group or len(group.instance_types) < 2:
        return ()

    def order(name: str) -> tuple[float, int, str]:
        info = catalog.lookup(name)
        price = pricing.instance_hour_usd(name)
        return (price if price is not None else float("inf"), info.vcpus if info is not None else 0, name)

    return tuple(
        node_model(plan, replace(group, instance_type=t, instance_types=(t,)), options=False)
        for t in sorted(group.instance_types, key=order)
    )


def node_model(plan: RolloutPlan, group: NodeGroup, *, options: bool = True) -> NodeModel:
    """One node of the group, of its reference instance type (`instanceType`); with `options`, a Karpenter pool's
    other instance types beside it (instance_options)."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    # The model reads each provisioner's own objects from the plan: a new one needs its case here (mypy lists it).
    match group.provisioner:
        case "Karpenter":
            karpenter = True
        case "ManagedNodeGroup":
            karpenter = False
        case unknown:
            assert_never(unknown)
    if karpenter:
        # A Karpenter group: its NodePool's template labels and taints (Kubernetes spelling), no minimum, and the
        # EC2NodeClass's settings; Karpenter also labels each node with its pool and capacity type
        # (kubernetes-sigs/karpenter pkg/apis/v1/labels.go NodePoolLabelKey, CapacityTypeLabelKey).
        node_pool = _karpenter_object(plan, "NodePool", group)
        pool = node_pool["spec"]["template"]
        capacity = next(r for r in pool["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type")
        pool_name: str | None = node_pool["metadata"]["name"]
        capacity_values: tuple[str, ...] = tuple(capacity["values"])
        args: Mapping[str, Any] = {
            "labels": pool["metadata"]["labels"],
            "scalingConfig": {"minSize": 0, "maxSize": group.max_size},
        }
        extra = {"karpenter.sh/nodepool": group.name, "karpenter.sh/capacity-type": capacity["values"][0]}
        taints = tuple(dict(t) for t in pool["spec"]["taints"])
    else:
        args = _node_group_args(plan, group)
        extra = {"eks.amazonaws.com/capacityType": args["capacityType"]}
        pool_name, capacity_values = None, ()
        taints = tuple(
            {"key": t["key"], "value": t["value"], "effect": _K8S_EFFECT[t["effect"]]} for t in args["taints"]
        )
    labels = {
        **args["labels"],
        "node.kubernetes.io/instance-type": group.instance_type,
        "kubernetes.io/arch": "amd64" if info.architecture == "x86_64" else "arm64",
        "kubernetes.io/os": "linux",
        **extra,
    }
    # the device plugin and MIG manager configs come with the sharing stage (plan/stages/foundation.py), the EFA and
    # RDMA device plugins with the network stage
    with_sharing = stages.included("sharing", plan.through)
    # Computed by the model from what the plan applies (gpufleet.simulate.node_resources), not by the renderer's
    # helpers; tests/model/test_node_resources.py holds it against the renderer's figures.
    setup = (
        node_resources.karpenter_setup(_karpenter_object(plan, "EC2NodeClass", group)["spec"])
        if karpenter
        else node_resources.node_setup(plan, args)
    )
    allocatable = node_resources.allocatable(plan, group, args["labels"], setup)
    extended = {r: v for r, v in allocatable.items() if r not in ("cpu", "memory", "pods")}
    numa = node_resources.numa_nodes(group)
    nodes = tuple(range(numa))
    per_numa = {r: _split(v, nodes) for r, v in extended.items() if r.startswith(NUMA_ALIGNED_PREFIXES)}
    slices = node_resources.mig_slices(plan, args["labels"], info.gpu_count) if with_sharing else []
    if any(r.startswith(MIG_PREFIX) for _, r, _ in slices):
        per_numa.update(_mig_per_numa(info.gpu_count, slices, nodes))
    # The static CPU manager hands out whole CPUs outside the kubelet's reservation; DaemonSet pods share the rest
    # (cpumanager/policy_static.go), so exclusive CPUs per NUMA node count the DaemonSet budget back in.
    per_numa["cpu"] = {
        n: cores * 1000
        for n, cores in _split((allocatable["cpu"] + node_resources.DAEMONSET_CPU_MILLI) // 1000, nodes).items()
    }
    policy, scope, cpu_policy = setup.topology_policy, setup.topology_scope, setup.cpu_manager_policy
    strategy = group.sharing.strategy
    scaling = args["scalingConfig"]
    template = None
    # Karpenter provisions for a pending pod a node of a pool whose template labels, taints and instance type fit it,
    # as the Cluster Autoscaler does from its scale-from-zero template (kubernetes-sigs/karpenter
    # pkg/controllers/provisioning/scheduling): the same check, with the pool's template.
    if karpenter_deployed(plan) if karpenter else autoscaler_deployed(plan):
        template = {
            "labels": dict(args["labels"]),
            "taints": taints,
            "resources": {"cpu": info.vcpus * 1000, "memory": info.memory_mib, **extended},
        }
        if karpenter:
            variants = karpenter_variants(pool["spec"]["requirements"], group.name)
            if options is False:
                # one instance type of the pool (instance_options): the combinations of its requirements with it
                variants = [v for v in variants if v.get(INSTANCE_TYPE_KEY, group.instance_type) == group.instance_type]
            template["variants"] = variants
            # What Karpenter believes an instance of the pool offers, not what the node will advertise
            # (node_resources.karpenter_capacity).
            template["resources"] = node_resources.karpenter_capacity(
                plan,
                group,
                _karpenter_object(plan, "EC2NodeClass", group)["spec"],
                {**variants[0], **args["labels"]},
                allocatable,
            )
    return NodeModel(
        group=group.name,
        instance_type=group.instance_type,
        labels=dict(sorted(labels.items())),
        taints=taints,
        allocatable=allocatable,
        numa_nodes=nodes,
        per_numa=per_numa,
        topology_policy=policy,
        topology_scope=scope,
        cpu_manager_policy=cpu_policy,
        sharing=strategy,
        # time-slicing: gpufleet's config sets it (manifests/sharing.py); MPS: the plugin forces it on
        # (NVIDIA/k8s-device-plugin api/config/v1/config.go, "preserve the historical MPS behavior").
        fail_requests_greater_than_one=with_sharing and strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS),
        # what the node advertises: MIG slices only once the sharing stage partitions it (before, whole GPUs)
        mig_strategy=(MIG_MIXED if any(r.startswith(MIG_PREFIX) for _, r, _ in slices) else MIG_SINGLE)
        if with_sharing and strategy is SharingStrategy.MIG
        else None,
        min_size=scaling["minSize"],
        max_size=scaling["maxSize"],
        reserved=group.reservation.instance_count
        if group.reservation is not None
        and (group.reservation.id is not None or group.reservation.tags is not None)
        and not falls_back(group)
        else None,
        template=template,
        node_pool=pool_name,
        capacity_types=capacity_values,
        instance_options=instance_options(plan, group) if options else (),
    )


def fleet_nodes(plan: RolloutPlan) -> tuple[NodeModel, ...]:
    return tuple(node_model(plan, g) for g in plan.fleet.node_groups)


def group_of(labels: Mapping[str, str]) -> str | None:
    return labels.get(LABEL_NODE_GROUP)
