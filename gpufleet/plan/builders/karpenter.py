"""The node half of stage 1 for a Karpenter group (`provisioner: Karpenter`): its EC2NodeClass and NodePool
(gpufleet.plan.manifests.karpenter) in place of the launch template and managed node group, with what later stages
put into the nodes through their `at_foundation` (labels, Bottlerocket settings) taken the same way.

Why, with sources: docs/karpenter.md, "Design notes", gpufleet/plan/builders/karpenter.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpufleet.plan.builders.cluster import node_role_attachments, node_role_resources, pod_identity_resources, tags
from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER, helm, k8s
from gpufleet.plan.builders.node_groups import (
    EFA_SECURITY_GROUP,
    efa_placement,
    image_list,
    node_labels,
    prepulled_images,
)
from gpufleet.plan.manifests import karpenter, node_bootstrap
from gpufleet.plan.parts import (
    AtFoundation,
    BuildContext,
    Ref,
    Resource,
    RolloutPlan,
    bottlerocket_settings,
    json_document,
)
from gpufleet.spec.efa import efa_interfaces
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup
from gpufleet.spec.names import (
    GPU_RESOURCE,
    LABEL_NODE_GROUP,
    SYSTEM_NODE_GROUP,
    TAG_RESERVED_INSTANCES,
    group_taints,
)
from gpufleet.spec.provisioning import KARPENTER

CONTROLLER_ROLE = "karpenter-controller-role"
CONTROLLER_POLICY = "karpenter-controller-policy"
CONTROLLER_POD_IDENTITY = "karpenter-pod-identity"
QUEUE = "karpenter-interruption-queue"
QUEUE_POLICY = "karpenter-interruption-queue-policy"
NODE_ACCESS_ENTRY = "karpenter-node-access-entry"
# Karpenter's nodes get a role of their own.
NODE_ROLE = "karpenter-node-role"
# The Helm releases' resource ids (gpufleet.plan.builders.common.helm).
CRD_RELEASE = f"helm-{karpenter.CRD_RELEASE}"
RELEASE = f"helm-{karpenter.RELEASE}"


def resources(
    ctx: BuildContext, group: NodeGroup, labels: dict[str, str], toml: dict[str, Any] | None
) -> list[Resource]:
    fleet = ctx.fleet
    out: list[Resource] = []
    image_list = (
        (node_bootstrap.image_list_parameter(fleet.name, group), fleet.cluster.region)
        if prepulled_images(fleet, group) and node_bootstrap.boot_prepull(group)
        else None
    )
    security_groups: list[Any] = [Ref(CLUSTER, "vpcConfig.clusterSecurityGroupId")]
    placement: Any | None = None
    if group.fabric is Fabric.EFA:
        security_groups.append(Ref(EFA_SECURITY_GROUP, "id"))
        created, placement = efa_placement(fleet, group)
        out += created
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
        # The CRD release installs the NodeOverlay CRD; the overlay applies to the pool by its name, so it may come
        # before the NodePool exists (Karpenter re-evaluates overlays when a NodePool changes).
        out.append(k8s(karpenter.node_overlay(group, capacity), depends_on=(RELEASE,)))
    return out


def overlay_capacity(ctx: BuildContext, group: NodeGroup) -> dict[str, str]:
    """The group's NodeOverlay capacity in this environment (gpufleet.plan.manifests.karpenter.overlay_capacity)."""
    return karpenter.overlay_capacity(
        ctx.fleet, group, with_sharing=ctx.includes("sharing"), with_network=ctx.includes("network")
    )


def controller_resources(fleet: Fleet, *, node_repair: bool, node_overlay: bool = False) -> list[Resource]:
    """The Karpenter controller in stage 1, when any group has provisioner Karpenter: its Pod Identity role
    (trusting only kube-system/karpenter of this cluster) with Karpenter's own controller policy, the interruption
    queue (SQS, 300 s retention, SSE-SQS) with its policy and the EventBridge rules that feed it, the node role's
    node role of Karpenter's nodes (NODE_ROLE, not the managed node groups') with its EKS access entry (type
    EC2_LINUX: EKS creates one itself only for a managed node group's role; Karpenter's nodes join through it), and
    the Helm release, which waits for the association and the system nodes.

    Why: docs/karpenter.md, "Design notes", karpenter.controller_resources."""
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
    crds = helm(
        "karpenter",
        fleet.versions.karpenter,
        fleet=fleet,
        release=karpenter.CRD_RELEASE,
        namespace=karpenter.NAMESPACE,
        values={},
        crds=True,
    )
    out += [
        crds,
        helm(
            "karpenter",
            fleet.versions.karpenter,
            fleet=fleet,
            release=karpenter.RELEASE,
            namespace=karpenter.NAMESPACE,
            values=karpenter.values(
                fleet, karpenter.queue_name(fleet), node_repair=node_repair, node_overlay=node_overlay
            ),
            depends_on=(crds.id, CONTROLLER_POD_IDENTITY, QUEUE_POLICY) + ((SYSTEM_NODE_GROUP,) if create else ()),
            skip_crds=True,
        ),
    ]
    return out


# What each statement of the Karpenter controller's policy (gpufleet.plan.manifests.karpenter.iam_policy, by Sid) lets
# it do, for plan.md's access table; statements that say the same are joined.
KARPENTER_STATEMENTS: dict[str, str] = {
    "AllowScopedEC2InstanceAccessActions": (
        "launch EC2 instances (RunInstances, CreateFleet) from launch templates it creates, tagged for cluster"
        " {cluster} and a NodePool"
    ),
    "AllowScopedEC2LaunchTemplateAccessActions": "",
    "AllowScopedEC2InstanceActionsWithTags": "",
    "AllowScopedResourceCreationTagging": "tag what it launches",
    "AllowScopedResourceTagging": "",
    "AllowScopedDeletion": (
        "terminate instances and delete launch templates tagged for cluster {cluster} and a NodePool"
    ),
    "AllowPassingInstanceRole": "pass the Karpenter node role to EC2 (iam:PassRole)",
    "AllowScopedInstanceProfileCreationActions": (
        "create, tag, change and delete instance profiles tagged for cluster {cluster} in {region}"
    ),
    "AllowScopedInstanceProfileTagActions": "",
    "AllowScopedInstanceProfileActions": "",
    "AllowAPIServerEndpointDiscovery": "describe cluster {cluster}",
    "AllowInterruptionQueueActions": "receive and delete the messages of the interruption queue `{queue}`",
    "AllowRegionalReadActions": (
        "describe instances, instance types and offerings, images, subnets, security groups, placement groups,"
        " capacity reservations and Spot prices in {region}"
    ),
    "AllowSSMReadActions": "read the public AMI parameters (`/aws/service/*`)",
    "AllowPricingReadActions": "read EC2 prices (pricing:GetProducts)",
    "AllowUnscopedInstanceProfileListAction": "list and read instance profiles",
    "AllowInstanceProfileReadActions": "",
}


# Said once under the table when any group is a Karpenter pool: what its size, capacity and warm columns mean.
KARPENTER_NOTE = (
    "Karpenter pools have no minimum, desired size or warm pool (warm pools belong to an Auto Scaling group): the"
    " NodePool's `limits` cap the GPUs of all its nodes together (maxSize x GPUs per instance), Karpenter launches a"
    " node when a pod Kueue admitted is pending (a cold start: boot, join, image pull), and a node that becomes empty"
    " stays for `consolidateAfter` before Karpenter removes it (`consolidationPolicy: WhenEmpty`), so work that"
    " follows within that window finds it; `headroom` keeps nodes running ahead of work. Their nodes carry"
    " `karpenter.sh/nodepool` and `karpenter.sh/capacity-type` (docs/karpenter.md)."
)

# How plan.md's cost section names a capacity type of the NodePool's requirement.
_CAPACITY_WORDS = {"reserved": "reserved", "spot": "Spot", "on-demand": "On-Demand"}


class KarpenterPools:
    """provisioner Karpenter (gpufleet.plan.builders.provisioners): a NodePool and EC2NodeClass per group, launched
    and scaled by the Karpenter controller stage 1 installs with them."""

    provisioning = KARPENTER
    note: str | None = KARPENTER_NOTE

    def group_resources(
        self, ctx: BuildContext, group: NodeGroup, labels: dict[str, str], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        # A NodePool and EC2NodeClass instead of a launch template and managed node group; the Cluster
        # Autoscaler manages Auto Scaling groups only, so it neither labels nor tags these nodes.
        toml = bottlerocket_settings(group, later)
        listed = image_list(ctx.fleet, group)
        return ([listed] if listed is not None else []) + resources(ctx, group, labels, toml)

    def controller_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        # The health stage's node_repair hook decides repair for Karpenter groups too; Karpenter's is one setting
        # of its controller, on when the hook asks for any Karpenter group.
        repaired = any(part.node_repair(g) is not None for part in later for g in groups)
        overlaid = any(overlay_capacity(ctx, g) for g in groups)
        return controller_resources(ctx.fleet, node_repair=repaired, node_overlay=overlaid)

    def provisioned_by(self, fleet: Fleet, group: NodeGroup) -> str:
        return f"Karpenter NodePool `{group.name}` (EC2NodeClass `{group.name}`)"

    def sizes(self, plan: RolloutPlan, group: NodeGroup) -> str:
        """A Karpenter pool has no minimum nor desired size, only its `limits`, which cap the GPUs of all its nodes
        together, as the environment's NodePool has them (gpufleet.plan.manifests.karpenter.node_pool: in the slices
        a MIG or time-sliced pool's NodeOverlay has Karpenter count)."""
        pool = next(
            r.args["object"]
            for s in plan.stages
            for r in s.content.resources
            if isinstance(r.args.get("object"), Mapping)
            and r.args["object"].get("kind") == "NodePool"
            and r.args["object"]["metadata"]["name"] == group.name
        )
        limits = pool["spec"]["limits"]
        limit = ", ".join(f"`{k}: {v}`" for k, v in limits.items())
        return f"up to {group.max_size} (NodePool limit {limit})"

    def capacity(self, group: NodeGroup) -> str:
        # What the NodePool requires (gpufleet.plan.manifests.karpenter.capacity_types), in Karpenter's spelling.
        values = " or ".join(f"`{v}`" for v in karpenter.capacity_types(group))
        return f"; `{karpenter.CAPACITY_TYPE_KEY}` {values}"

    def warm(self, group: NodeGroup, warm: list[str]) -> str:
        """Without headroom nothing but an emptied node that has not been consolidated yet (KARPENTER_NOTE)."""
        after = karpenter.disruption(group)["consolidateAfter"]
        beyond = "beyond them, " if warm else "none: "
        return "; ".join([*warm, f"{beyond}launched per pending pod; an emptied node stays {after}"])

    def spot_capacity(self, group: NodeGroup) -> str | None:
        """The pool's capacity types in the order it tries them ("Spot, then On-Demand"), or None without Spot."""
        kinds = karpenter.capacity_types(group)
        if "spot" not in kinds:
            return None
        return ", then ".join(_CAPACITY_WORDS.get(k, k) for k in kinds)

    def access(self, fleet: Fleet) -> dict[str, str] | None:
        """The Karpenter controller's Pod Identity association (`who`) and what its role may do (`may`)."""
        fill = {"cluster": fleet.cluster.name, "region": fleet.cluster.region, "queue": karpenter.queue_name(fleet)}
        policy = karpenter.iam_policy(fleet, node_role_arn="node-role", queue_arn="queue")
        phrases = [KARPENTER_STATEMENTS[statement["Sid"]] for statement in policy["Statement"]]
        return {
            "who": f"{karpenter.NAMESPACE}/{karpenter.SERVICE_ACCOUNT}",
            "what": "the Karpenter controller",
            "may": "; ".join(p.format(**fill) for p in phrases if p),
        }

    def before_deploy(self, fleet: Fleet) -> list[str]:
        # aws/karpenter-provider-aws website/content/en/docs/getting-started/getting-started-with-karpenter/_index.md
        # @ v1.14.1, "Private Clusters": the endpoints the controller needs; IAM and the Price List API have none.
        where = "the system nodes" if fleet.cluster.mode == "Create" else "the cluster's nodes"
        return [
            f"The Karpenter controller (on {where}) reaches EC2, SSM (AMI parameters), SQS (the interruption queue),"
            " STS and EKS, and the IAM API, which has no VPC endpoint: the EC2NodeClasses name the node role"
            " (`role`), whose instance profile Karpenter creates through IAM, so its nodes' subnets need a NAT gateway."
            " Without the Price List API (no VPC endpoint either) Karpenter uses the static prices it ships."
        ]


KARPENTER_POOLS = KarpenterPools()
