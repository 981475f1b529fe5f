"""The node half of stage 1 for a Karpenter group (`provisioner: Karpenter`): its EC2NodeClass and NodePool
(gpufleet.plan.manifests.karpenter) in place of the launch template and managed node group, with what later stages
put into the nodes through their `at_foundation` (labels, Bottlerocket settings) taken the same way."""

from __future__ import annotations

from typing import Any

from gpufleet.plan.builders.cluster import node_role_attachments, node_role_resources, pod_identity_resources, tags
from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER, helm, k8s
from gpufleet.plan.builders.node_groups import EFA_SECURITY_GROUP, node_labels, prepulled_images
from gpufleet.plan.manifests import karpenter, node_bootstrap
from gpufleet.plan.parts import BuildContext, Ref, Resource, json_document
from gpufleet.spec.efa import efa_interfaces
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup
from gpufleet.spec.names import (
    GPU_RESOURCE,
    LABEL_NODE_GROUP,
    SYSTEM_NODE_GROUP,
    TAG_RESERVED_INSTANCES,
    group_taints,
    placement_group_id,
)

CONTROLLER_ROLE = "karpenter-controller-role"
CONTROLLER_POLICY = "karpenter-controller-policy"
CONTROLLER_POD_IDENTITY = "karpenter-pod-identity"
QUEUE = "karpenter-interruption-queue"
QUEUE_POLICY = "karpenter-interruption-queue-policy"
NODE_ACCESS_ENTRY = "karpenter-node-access-entry"
# Karpenter's nodes get a role of their own. EKS creates the EC2_LINUX access entry of a managed node group's role
# itself, and a principal may be in one access entry only (EKS user guide, creating access entries): an entry for
# the managed groups' role fails with ResourceInUseException, or, made first, is the one the managed nodes join
# through and goes with the last Karpenter group. Karpenter's getting-started (KarpenterNodeRole) and
# terraform-aws-eks modules/karpenter (its own node IAM role and access entry; create_access_entry = false only
# when a managed group's role is re-used) do the same.
NODE_ROLE = "karpenter-node-role"
# The Helm release's resource id (gpufleet.plan.builders.common.helm): its chart installs the CRDs (charts/karpenter/
# crds/), so every NodePool and EC2NodeClass waits for it.
RELEASE = f"helm-{karpenter.RELEASE}"


def resources(
    ctx: BuildContext, group: NodeGroup, labels: dict[str, str], toml: dict[str, Any] | None
) -> list[Resource]:
    fleet = ctx.fleet
    out: list[Resource] = []
    image_list = (
        (node_bootstrap.image_list_parameter(fleet.name, group), fleet.cluster.region)
        if prepulled_images(fleet, group)
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
        efa_interfaces=efa_interfaces(group),
        placement_group=placement,
        tags={**tags(fleet), "Name": f"{fleet.name}-{group.name}", LABEL_NODE_GROUP: group.name},
    )
    capacity = overlay_capacity(ctx, group)
    per_node = capacity.get(GPU_RESOURCE)
    pool = karpenter.node_pool(
        group,
        labels=node_labels(group, labels),
        taints=group_taints(group),
        gpus_per_node=int(per_node) if per_node is not None else None,
    )
    if group.reservation is not None:
        # What an ODCR bills running or not, for `gpufleet diff`'s cost (gpufleet.review.impact): the managed node
        # group carries it as a tag; on the NodePool object it is an annotation (not copied to its nodes).
        pool["metadata"]["annotations"] = {TAG_RESERVED_INSTANCES: str(group.reservation.instance_count)}
    after = (RELEASE, NODE_ACCESS_ENTRY, *node_role_attachments(fleet, NODE_ROLE))
    node_class_resource = k8s(node_class, depends_on=after)
    out += [node_class_resource, k8s(pool, depends_on=(node_class_resource.id,))]
    if capacity:
        # The chart installs the NodeOverlay CRD; the overlay applies to the pool by its name, so it may come
        # before the NodePool exists (Karpenter re-evaluates overlays when a NodePool changes).
        out.append(k8s(karpenter.node_overlay(group, capacity), depends_on=(RELEASE,)))
    return out


def overlay_capacity(ctx: BuildContext, group: NodeGroup) -> dict[str, str]:
    """The group's NodeOverlay capacity in this environment (gpufleet.plan.manifests.karpenter.overlay_capacity)."""
    return karpenter.overlay_capacity(
        ctx.fleet, group, with_sharing=ctx.includes("sharing"), with_network=ctx.includes("network")
    )


def used(fleet: Fleet) -> bool:
    return any(g.provisioner == "Karpenter" for g in fleet.node_groups)


def controller_resources(fleet: Fleet, *, node_repair: bool, node_overlay: bool = False) -> list[Resource]:
    """The Karpenter controller in stage 1, when any group has provisioner Karpenter: its Pod Identity role
    (trusting only kube-system/karpenter of this cluster) with Karpenter's own controller policy, the interruption
    queue (SQS, 300 s retention, SSE-SQS) with its policy and the EventBridge rules that feed it, the node role's
    node role of Karpenter's nodes (NODE_ROLE, not the managed node groups') with its EKS access entry (type
    EC2_LINUX: EKS creates one itself only for a managed node group's role; Karpenter's nodes join through it), and
    the Helm release, which waits for the association and the system nodes. Karpenter makes the instance profile of
    the node role itself (EC2NodeClass `role`), within the policy's AllowScopedInstanceProfile* statements."""
    create = fleet.cluster.mode == "Create"
    out = [
        Resource(
            id=QUEUE,
            type="aws:sqs/queue:Queue",
            provider=AWS_PROVIDER,
            args={
                "name": karpenter.queue_name(fleet),
                "messageRetentionSeconds": 300,
                "sqsManagedSseEnabled": True,
                "tags": tags(fleet),
            },
        ),
        Resource(
            id=QUEUE_POLICY,
            type="aws:sqs/queuePolicy:QueuePolicy",
            provider=AWS_PROVIDER,
            args={"queueUrl": Ref(QUEUE, "url"), "policy": json_document(karpenter.queue_policy(Ref(QUEUE, "arn")))},
        ),
    ]
    for suffix, (source, detail_type) in karpenter.INTERRUPTION_EVENTS.items():
        rule = f"karpenter-{suffix}-rule"
        out += [
            Resource(
                id=rule,
                type="aws:cloudwatch/eventRule:EventRule",
                provider=AWS_PROVIDER,
                args={
                    "namePrefix": f"{fleet.name}-karpenter-"[:38],
                    "description": f"Karpenter interruption handling: {detail_type} ({source})",
                    "eventPattern": karpenter.event_pattern(source, detail_type),
                    "tags": tags(fleet),
                },
            ),
            Resource(
                id=f"karpenter-{suffix}-target",
                type="aws:cloudwatch/eventTarget:EventTarget",
                provider=AWS_PROVIDER,
                args={
                    "rule": Ref(rule, "name"),
                    "targetId": "KarpenterInterruptionQueueTarget",
                    "arn": Ref(QUEUE, "arn"),
                },
                depends_on=(QUEUE_POLICY,),
            ),
        ]
    out += pod_identity_resources(
        fleet,
        role=CONTROLLER_ROLE,
        policy=CONTROLLER_POLICY,
        association=CONTROLLER_POD_IDENTITY,
        name_prefix=f"{fleet.name}-karpenter-",
        description=(
            f"Karpenter controller of EKS cluster {fleet.cluster.name} (EKS Pod Identity,"
            f" {karpenter.NAMESPACE}/{karpenter.SERVICE_ACCOUNT})"
        ),
        policy_name="karpenter-controller",
        policy_document=json_document(
            karpenter.iam_policy(fleet, node_role_arn=Ref(NODE_ROLE, "arn"), queue_arn=Ref(QUEUE, "arn"))
        ),
        namespace=karpenter.NAMESPACE,
        service_account=karpenter.SERVICE_ACCOUNT,
    )
    out += node_role_resources(fleet, NODE_ROLE)
    out.append(
        Resource(
            id=NODE_ACCESS_ENTRY,
            type="aws:eks/accessEntry:AccessEntry",
            provider=AWS_PROVIDER,
            args={
                "clusterName": Ref(CLUSTER, "name"),
                "principalArn": Ref(NODE_ROLE, "arn"),
                "type": "EC2_LINUX",
                "tags": tags(fleet),
            },
        )
    )
    out.append(
        helm(
            "karpenter",
            fleet.versions.karpenter,
            fleet=fleet,
            release=karpenter.RELEASE,
            namespace=karpenter.NAMESPACE,
            values=karpenter.values(
                fleet, karpenter.queue_name(fleet), node_repair=node_repair, node_overlay=node_overlay
            ),
            depends_on=(CONTROLLER_POD_IDENTITY, QUEUE_POLICY) + ((SYSTEM_NODE_GROUP,) if create else ()),
        )
    )
    return out
