"""Every default that depends on the rest of the spec, resolved in one place, each with its reason.

A default that is the same whatever else the spec says is static: it lives in schemas/fleet.schema.json and is
filled before the model is built (gpufleet.schema.with_defaults). A default computed from other fields (the
workload class, the fabric, the instance type, the teams' quotas) is resolved here and nowhere
else; `COMPUTED` lists them for the spec reference (tools/spec_reference.py) and `applied(fleet)` says which of
them a fleet took, for plan.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet import catalog
from gpufleet.spec import Fabric, Fleet, NodeGroup, Placement, TopologyPolicy, TopologyScope, WorkloadClass
from gpufleet.stages import StageName


@dataclass(frozen=True, slots=True, kw_only=True)
class Computed:
    """One computed default: the spec field it fills, what it resolves to, and why."""

    path: str  # as in docs/spec-reference.md, e.g. nodeGroups[].topology.policy
    rule: str
    reason: str


TOPOLOGY_POLICY = Computed(
    path="nodeGroups[].topology.policy",
    rule="restricted for Training and Inference, none otherwise",
    reason="restricted admits a pod only on the narrowest NUMA set that holds its GPUs, NICs and pinned CPUs, and still "
    "admits a full-node 8-GPU pod on a dual-socket type, which single-numa-node rejects outright (kubernetes "
    "pkg/kubelet/cm/topologymanager policy_restricted.go, policy_single_numa_node.go)",
)
TOPOLOGY_SCOPE = Computed(
    path="nodeGroups[].topology.scope",
    rule="pod when the policy is not none, else container",
    reason="a pod's GPUs, NICs and CPUs are aligned together only at pod scope",
)
PLACEMENT = Computed(
    path="nodeGroups[].topology.placement",
    rule="Preferred on a fixed-size (minSize = maxSize) EFA/RDMA group of an instance type EC2 reports topology for, "
    "when every team with quota on it has quota only on such groups; else None",
    reason="Kueue TAS counts only Ready nodes and creates no pod for the autoscaler, so it only helps a fixed-size "
    "group; a ClusterQueue mixing TAS and non-TAS flavors refuses pod sets without a topology request (kueue v0.19.2 "
    "pkg/scheduler/flavorassigner/tas_flavorassigner.go)",
)
DESIRED_SIZE = Computed(
    path="nodeGroups[].scaling.desiredSize",
    rule="minSize",
    reason="the group starts at its floor and the autoscaler grows it on demand",
)
MAX_UNAVAILABLE = Computed(
    path="nodeGroups[].update.maxUnavailable",
    rule="1 (when maxUnavailablePercentage is not set either)",
    reason="EKS's own default: one node of the group is replaced at a time during an update",
)
GDRCOPY = Computed(
    path="versions.driver.gdrCopy",
    rule="Enabled with driver source Operator when a Training group has fabric EFA, else Disabled",
    reason="NCCL, NVSHMEM and libfabric's EFA provider use GDRCopy for small GPU-memory copies (ai-on-eks enables it "
    "for EFA training); the GPU Operator loads gdrdrv only beside the driver it installs (gpufleet.versions "
    "GpuOperatorRelease.gdrcopy_needs_operator_driver)",
)
COMPUTED: tuple[Computed, ...] = (TOPOLOGY_POLICY, TOPOLOGY_SCOPE, PLACEMENT, DESIRED_SIZE, MAX_UNAVAILABLE, GDRCOPY)


def topology_policy(group: NodeGroup) -> TopologyPolicy:
    if group.topology.policy is not None:
        return group.topology.policy
    return "restricted" if group.workload_class in (WorkloadClass.TRAINING, WorkloadClass.INFERENCE) else "none"


def topology_scope(group: NodeGroup) -> TopologyScope:
    if group.topology.scope is not None:
        return group.topology.scope
    return "pod" if topology_policy(group) != "none" else "container"


def _tas_capable(group: NodeGroup) -> bool:
    """A group whose capacity Kueue TAS can count: an EFA/RDMA group of a type EC2 reports topology for, with its
    size fixed (minSize = maxSize). TAS counts only Ready nodes, and a workload it does not admit creates no pod for
    the autoscaler to act on (kueue v0.19.2 site/content/en/docs/concepts/topology_aware_scheduling.md, "Capacity
    calculation"; scaling up needs a ProvisioningRequest AdmissionCheck, which gpufleet does not render), so on a
    group that scales TAS would admit only what already runs."""
    if group.topology.placement is not None:
        return group.topology.placement != "None"
    return group.fabric in (Fabric.EFA, Fabric.RDMA) and group.instance_type in catalog.TOPOLOGY_INSTANCE_TYPES and group.min_size == group.max_size


def placement(fleet: Fleet, group: NodeGroup) -> Placement:
    """topology.placement, resolved: the spec's value, else Preferred where TAS can count the group's capacity and
    every team with quota on it has quota only on such groups, else None. A ClusterQueue mixing TAS and non-TAS
    flavors refuses a pod set without a topology request on the TAS flavor (pkg/scheduler/flavorassigner/
    tas_flavorassigner.go, "supports only TopologyAwareScheduling"); a TAS-only queue implies the request."""
    if group.topology.placement is not None:
        return group.topology.placement
    if not _tas_capable(group):
        return "None"
    for team in fleet.teams:
        groups = [fleet.node_group(q.node_group) for q in team.quotas]
        if group in groups and not all(_tas_capable(g) for g in groups):
            return "None"
    return "Preferred"


def gdrcopy(fleet: Fleet) -> bool:
    """versions.driver.gdrCopy, resolved."""
    if fleet.versions.gdrcopy is not None:
        return fleet.versions.gdrcopy == "Enabled"
    efa_training = any(g.fabric is Fabric.EFA and g.workload_class is WorkloadClass.TRAINING for g in fleet.node_groups)
    return fleet.versions.driver_source == "Operator" and efa_training


def desired_size(group: NodeGroup) -> int:
    return group.desired_size if group.desired_size is not None else group.min_size


def max_unavailable(group: NodeGroup) -> int:
    return group.update.max_unavailable or 1


def applied(fleet: Fleet, included: tuple[StageName, ...]) -> list[tuple[str, str, Computed]]:
    """(field, resolved value, default) for every computed default this fleet took, in spec order (placement only
    where the admission stage is in `included` and there are teams: nothing reads it otherwise)."""
    out: list[tuple[str, str, Computed]] = []
    if fleet.versions.gdrcopy is None:
        out.append(("versions.driver.gdrCopy", "Enabled" if gdrcopy(fleet) else "Disabled", GDRCOPY))
    for group in fleet.node_groups:
        at = f"nodeGroups[{group.name}]"
        if group.topology.policy is None:
            out.append((f"{at}.topology.policy", topology_policy(group), TOPOLOGY_POLICY))
        if group.topology.scope is None:
            out.append((f"{at}.topology.scope", topology_scope(group), TOPOLOGY_SCOPE))
        if group.topology.placement is None and "admission" in included and fleet.teams:
            out.append((f"{at}.topology.placement", placement(fleet, group), PLACEMENT))
        if group.desired_size is None:
            out.append((f"{at}.scaling.desiredSize", str(desired_size(group)), DESIRED_SIZE))
        if group.update.max_unavailable is None and group.update.max_unavailable_percentage is None:
            out.append((f"{at}.update.maxUnavailable", str(max_unavailable(group)), MAX_UNAVAILABLE))
    return out
