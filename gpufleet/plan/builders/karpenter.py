"""The node half of stage 1 for a Karpenter group (`provisioner: Karpenter`): its EC2NodeClass and NodePool
(gpufleet.plan.manifests.karpenter) in place of the launch template and managed node group, with what later stages
put into the nodes through their `at_foundation` (labels, Bottlerocket settings) taken the same way."""

from __future__ import annotations

from typing import Any

from gpufleet.plan.builders.cluster import NODE_ROLE, tags
from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER, k8s
from gpufleet.plan.builders.node_groups import EFA_SECURITY_GROUP, _images, node_labels
from gpufleet.plan.manifests import karpenter, node_bootstrap
from gpufleet.plan.parts import BuildContext, Ref, Resource
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup
from gpufleet.spec.names import LABEL_NODE_GROUP, group_taints, placement_group_id

# Until the disruption settings of issue 32 item 3: Karpenter removes a node only once no pod but DaemonSets runs
# on it (WhenEmpty), never to pack pods tighter, so consolidation evicts no GPU work.
# (kubernetes-sigs/karpenter docs concepts/disruption.md: consolidationPolicy WhenEmpty, consolidateAfter.)
DISRUPTION = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"}


def resources(
    ctx: BuildContext, group: NodeGroup, labels: dict[str, str], toml: dict[str, Any] | None
) -> list[Resource]:
    fleet = ctx.fleet
    out: list[Resource] = []
    image_list = (
        (node_bootstrap.image_list_parameter(fleet.name, group), fleet.cluster.region)
        if _images(fleet, group)
        else None
    )
    security_groups: list[Any] = [Ref(CLUSTER, "vpcConfig.clusterSecurityGroupId")]
    placement: Any | None = None
    if group.fabric is Fabric.EFA:
        security_groups.append(Ref(EFA_SECURITY_GROUP, "id"))
        if group.placement_group == "None" or group.capacity_type is CapacityType.CAPACITY_BLOCK:
            pass  # Capacity Blocks are co-located in UltraClusters already; None: the spec asks for no group.
        elif group.placement_group is not None:
            placement = group.placement_group
        else:
            pg = placement_group_id(group)
            out.append(
                Resource(
                    id=pg,
                    type="aws:ec2/placementGroup:PlacementGroup",
                    provider=AWS_PROVIDER,
                    args={"name": f"{fleet.name}-{group.name}", "strategy": "cluster", "tags": tags(fleet)},
                )
            )
            placement = Ref(pg, "name")
    reserved = node_bootstrap.system_reserved(group)
    node_class = karpenter.ec2_node_class(
        group,
        kubernetes_version=fleet.cluster.kubernetes_version,
        role=Ref(NODE_ROLE, "name"),
        subnet_ids=list(group.subnet_ids or fleet.cluster.subnet_ids),
        security_groups=security_groups,
        user_data=node_bootstrap.user_data(group, image_list, toml, karpenter=True),
        kubelet={"systemReserved": reserved} if reserved else {},
        efa_interfaces=node_bootstrap.efa_interfaces(group),
        placement_group=placement,
        tags={**tags(fleet), "Name": f"{fleet.name}-{group.name}", LABEL_NODE_GROUP: group.name},
    )
    pool = karpenter.node_pool(
        group, labels=node_labels(group, labels), taints=group_taints(group), disruption=DISRUPTION
    )
    node_class_resource = k8s(node_class, depends_on=(NODE_ROLE,))
    out += [node_class_resource, k8s(pool, depends_on=(node_class_resource.id,))]
    return out


def warnings(fleet: Fleet) -> list[str]:
    """What a Karpenter group needs that this stage does not create yet (issue 32 item 2): the controller release
    with its CRDs, its IAM role, the interruption queue, and the node role's EKS access entry (EC2_LINUX), which EKS
    creates by itself only for managed node groups."""
    names = [g.name for g in fleet.node_groups if g.provisioner == "Karpenter"]
    if not names:
        return []
    return [
        f"node groups {', '.join(names)} are provisioned by Karpenter: their NodePools and EC2NodeClasses need the"
        " Karpenter 1.14.1 controller and CRDs, and an EC2_LINUX access entry for the node role, which gpufleet does"
        " not create yet; until it does, stage 1 fails on them unless you run Karpenter yourself"
    ]
