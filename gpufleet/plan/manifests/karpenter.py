"""A Karpenter group's NodePool (karpenter.sh/v1) and EC2NodeClass (karpenter.k8s.aws/v1), Karpenter 1.14.1.

Why, with sources: docs/karpenter.md, "Design notes", gpufleet/plan/manifests/karpenter.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpufleet.facts import catalog
from gpufleet.facts.ami_releases import is_bottlerocket
from gpufleet.plan.manifests import node_bootstrap
from gpufleet.plan.manifests.autoscaler import EPHEMERAL_STORAGE, template_resources
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup, WorkloadClass
from gpufleet.spec.names import EFA_RESOURCE, GPU_RESOURCE, LABEL_NODE_GROUP, SYSTEM_GROUP, partition

API_NODE_POOL = "karpenter.sh/v1"
API_NODE_CLASS = "karpenter.k8s.aws/v1"
# NodeOverlay, alpha in 1.14.1 behind the controller's NodeOverlay feature gate (chart value
# settings.featureGates.nodeOverlay, default false); its CRD ships in the karpenter-crd chart gpufleet installs the
# CRDs with (aws/karpenter-provider-aws charts/karpenter-crd/templates/karpenter.sh_nodeoverlays.yaml @ v1.14.1).
API_NODE_OVERLAY = "karpenter.sh/v1alpha1"
NODE_POOL_KEY = "karpenter.sh/nodepool"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
# Well-known requirement keys Karpenter schedules on (kubernetes-sigs/karpenter pkg/apis/v1/labels.go
# CapacityTypeLabelKey and its values on-demand, spot, reserved; reserved is capacity of a reservation the
# EC2NodeClass selects, Capacity Blocks included: aws/karpenter-provider-aws docs/concepts/nodeclasses.md,
# capacityReservationSelectorTerms).
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
INSTANCE_TYPE_KEY = "node.kubernetes.io/instance-type"
# The spec's zone is a zone ID (use1-az4); Karpenter labels nodes with it as topology.k8s.aws/zone-id
# (aws/karpenter-provider-aws pkg/apis/v1/labels.go LabelTopologyZoneID), topology.kubernetes.io/zone holds the name.
ZONE_KEY = "topology.k8s.aws/zone-id"
ARCH_KEY = "kubernetes.io/arch"

_AL2023_RELEASE = re.compile(r"^(?P<k8s>[0-9]+\.[0-9]+)\.[0-9]+-(?P<date>[0-9]{8})$")
_BOTTLEROCKET_RELEASE = re.compile(r"^(?P<version>[0-9]+\.[0-9]+\.[0-9]+)(-[0-9a-f]{8})?$")


# capacity.fallback's spelling -> karpenter.sh/capacity-type's (kubernetes-sigs/karpenter pkg/apis/v1/labels.go).
FALLBACK_CAPACITY_TYPES = {"Reserved": "reserved", "Spot": "spot", "OnDemand": "on-demand"}


def capacity_types(group: NodeGroup) -> list[str]:
    """The pool's karpenter.sh/capacity-type values.

    Why: docs/karpenter.md, "Design notes", karpenter.capacity_types."""
    if group.capacity_fallback:
        return [FALLBACK_CAPACITY_TYPES[c] for c in group.capacity_fallback]
    if group.capacity_type is CapacityType.SPOT:
        return ["spot"]
    if group.capacity_type is CapacityType.CAPACITY_BLOCK or group.reservation is not None:
        return ["reserved"]
    return ["on-demand"]


def architecture(group: NodeGroup) -> str:
    return "arm64" if "_ARM_64_" in group.ami_type else "amd64"


def ami_selector(group: NodeGroup, kubernetes_version: str) -> dict[str, str]:
    """The pinned AMI release as the public SSM parameter of that exact release (an `ssmParameter` term), never an
    alias: Karpenter's `al2023@` alias picks the NVIDIA or standard variant by instance type itself, which would put
    an `*_STANDARD` group (driver from the GPU Operator) on the NVIDIA AMI.

    Why: docs/karpenter.md, "Design notes", karpenter.ami_selector."""
    arch = "arm64" if "_ARM_64_" in group.ami_type else "x86_64"
    release = group.ami_release_version
    if is_bottlerocket(group.ami_type):
        match = _BOTTLEROCKET_RELEASE.match(release)
        assert match is not None  # the schema's releaseVersion pattern
        k8s = kubernetes_version
        return {"ssmParameter": f"/aws/service/bottlerocket/aws-k8s-{k8s}-nvidia/{arch}/{match['version']}/image_id"}
    match = _AL2023_RELEASE.match(release)
    assert match is not None
    flavor = "standard" if group.ami_type.endswith("_STANDARD") else "nvidia"
    k8s = match["k8s"]
    name = f"amazon-eks-node-al2023-{arch}-{flavor}-{k8s}-v{match['date']}"
    return {"ssmParameter": f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{flavor}/{name}/image_id"}


def node_pool(
    group: NodeGroup, *, labels: dict[str, str], taints: list[dict[str, str]], gpus_per_node: int | None = None
) -> dict[str, Any]:
    """The group's NodePool: its labels and taints, instance types, capacity types, and a limit of maxSize
    nodes' GPUs (in the slices a MIG or time-sliced node advertises, gpus_per_node).

    Why: docs/karpenter.md, "Design notes", karpenter.node_pool."""
    info = catalog.lookup(group.instance_type)
    gpus = gpus_per_node if gpus_per_node is not None else info.gpu_count if info is not None else 0
    requirements: list[dict[str, Any]] = [
        {"key": INSTANCE_TYPE_KEY, "operator": "In", "values": list(group.instance_types)},
        {"key": CAPACITY_TYPE_KEY, "operator": "In", "values": capacity_types(group)},
        {"key": ARCH_KEY, "operator": "In", "values": [architecture(group)]},
    ]
    if group.zone is not None:
        requirements.append({"key": ZONE_KEY, "operator": "In", "values": [group.zone]})
    return {
        "apiVersion": API_NODE_POOL,
        "kind": "NodePool",
        "metadata": {"name": group.name},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": "EC2NodeClass", "name": group.name},
                    "requirements": requirements,
                    "taints": taints,
                    # Never forcibly expired (see disruption): a managed node group's nodes do not expire either.
                    "expireAfter": "Never",
                },
            },
            "limits": {GPU_RESOURCE: str(group.max_size * gpus)},
            "disruption": disruption(group),
        },
    }


# Classes whose pods are long-lived and lose work when evicted: a drifted node (a NodePool or EC2NodeClass change,
# a new AMI) is never replaced while it runs them; it goes once empty.
NO_DRIFT_WHILE_BUSY = (WorkloadClass.TRAINING, WorkloadClass.INTERACTIVE)


def disruption(group: NodeGroup) -> dict[str, Any]:
    """Disruption that never evicts GPU work for Karpenter's own reasons (kubernetes-sigs/karpenter
    designs/disruption docs, NodePool spec.disruption in karpenter.sh_nodepools.yaml @ v1.14.1):
    `WhenEmpty`: consolidation removes only nodes with nothing but DaemonSets on them, never to pack pods tighter
    (reason `Empty`; `Underutilized` never happens).

    Why: docs/karpenter.md, "Design notes", karpenter.disruption."""
    budgets: list[dict[str, Any]] = [{"nodes": "1"}]
    if group.workload_class in NO_DRIFT_WHILE_BUSY:
        budgets.insert(0, {"nodes": "0", "reasons": ["Drifted"]})
    return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": budgets}


def overlay_capacity(fleet: Fleet, group: NodeGroup, *, with_sharing: bool, with_network: bool) -> dict[str, str]:
    """What a node of the pool advertises once its device plugins run that Karpenter's instance type does not say,
    so that Karpenter's scheduling simulation sees the pods' requests fit (resources.Fits counts a resource the
    instance type lacks as 0, and no NodeClaim is made): the capacity of the pool's NodeOverlay.

    Why: docs/karpenter.md, "Design notes", karpenter.overlay_capacity."""
    info = catalog.lookup(group.instance_type)
    if info is None:
        return {}
    seen = template_resources(fleet, group, with_sharing=with_sharing, with_network=with_network)
    out = {r: v for r, v in seen.items() if r not in (EPHEMERAL_STORAGE, EFA_RESOURCE)}
    if out.get(GPU_RESOURCE) == str(info.gpu_count):
        del out[GPU_RESOURCE]
    return dict(sorted(out.items()))


def node_overlay(group: NodeGroup, capacity: dict[str, str]) -> dict[str, Any]:
    """The pool's NodeOverlay (karpenter.sh/v1alpha1, cluster-scoped, named after the group): the capacity
    overlay_capacity gives, on every instance type of this NodePool only (a `karpenter.sh/nodepool` requirement:
    NodeOverlay requirements match well-known labels, the NodePool's among them; kubernetes-sigs/karpenter
    pkg/apis/v1alpha1/nodeoverlay.go and pkg/controllers/nodeoverlay/controller.go getOverlaidOfferings @ v1.14.1).

    Why: docs/karpenter.md, "Design notes", karpenter.node_overlay."""
    return {
        "apiVersion": API_NODE_OVERLAY,
        "kind": "NodeOverlay",
        "metadata": {"name": group.name},
        "spec": {
            "requirements": [{"key": NODE_POOL_KEY, "operator": "In", "values": [group.name]}],
            "capacity": capacity,
        },
    }


def block_devices(group: NodeGroup) -> list[dict[str, Any]]:
    """The EBS volumes, as the managed node group's launch template has them: AL2023 keeps images and pods on the
    root volume /dev/xvda; Bottlerocket on its data volume /dev/xvdb beside a 4 GiB root /dev/xvda (a
    blockDeviceMappings list replaces Karpenter's defaults whole, whose Bottlerocket root is that 4Gi volume:
    aws/karpenter-provider-aws pkg/providers/amifamily/bottlerocket.go DefaultBlockDeviceMappings)."""
    ebs = {
        "volumeSize": f"{group.disk_size_gib}Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
        # gp3 throughput and IOPS above the baseline (diskThroughputMiBps, diskIops): EC2NodeClass
        # blockDeviceMappings[].ebs.{throughput, iops}, as karpenter-blueprints' soci-snapshotter EC2NodeClass sets
        **node_bootstrap.ebs_performance(group),
    }
    if is_bottlerocket(group.ami_type):
        root = {"volumeSize": "4Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
        if group.data_volume_snapshot_id is not None:
            # The data volume created from a snapshot that holds the images already (dataVolumeSnapshotId): the node
            # joins with them (EC2NodeClass blockDeviceMappings[].ebs.snapshotID).
            ebs["snapshotID"] = group.data_volume_snapshot_id
            # The rate EBS initializes it at (snapshotInitialization mode ProvisionedRate): the pinned CRD has
            # blockDeviceMappings[].ebs.volumeInitializationRate (100 to 300 MiB/s, only with snapshotID).
            ebs.update(node_bootstrap.volume_initialization(group))
        return [{"deviceName": "/dev/xvda", "ebs": root}, {"deviceName": "/dev/xvdb", "ebs": ebs}]
    return [{"deviceName": "/dev/xvda", "ebs": ebs, "rootVolume": True}]


def network_interfaces(group: NodeGroup, efa_interfaces: int) -> list[dict[str, Any]]:
    """EFA groups: the primary ENA interface on card 0 (the EC2NodeClass's CEL rule requires `interface` at card 0,
    device 0), and one EFA-only interface on every card, card 0 included (device index 1 each), as the upstream
    example puts an `efa-only` on card 0 device 1 (aws/karpenter-provider-aws website/content/en/docs/concepts/
    nodeclasses.md, spec.networkInterfaces @ v1.14.1).

    Why: docs/karpenter.md, "Design notes", karpenter.network_interfaces."""
    if group.fabric is not Fabric.EFA:
        return []
    out = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]
    out += [{"networkCardIndex": card, "deviceIndex": 1, "interfaceType": "efa-only"} for card in range(efa_interfaces)]
    return out


def ec2_node_class(
    group: NodeGroup,
    *,
    kubernetes_version: str,
    role: Any,
    subnet_ids: list[str],
    security_groups: list[Any],
    user_data: str,
    kubelet: dict[str, Any],
    efa_interfaces: int,
    placement_group: Any | None,
    tags: dict[str, str],
) -> dict[str, Any]:
    """The group's EC2NodeClass.

    Why: docs/karpenter.md, "Design notes", karpenter.ec2_node_class."""
    spec: dict[str, Any] = {
        "amiFamily": "Bottlerocket" if is_bottlerocket(group.ami_type) else "AL2023",
        "amiSelectorTerms": [ami_selector(group, kubernetes_version)],
        "role": role,
        "subnetSelectorTerms": [{"id": s} for s in subnet_ids],
        "securityGroupSelectorTerms": [{"id": g} for g in security_groups],
        "blockDeviceMappings": block_devices(group),
        # IMDSv2 only, one hop: pods cannot reach the node's credentials (they use EKS Pod Identity instead).
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 1,
        },
        "userData": user_data,
        "tags": tags,
    }
    if kubelet:
        spec["kubelet"] = kubelet
    if group.local_storage == "RAID0":
        spec["instanceStorePolicy"] = "RAID0"
    interfaces = network_interfaces(group, efa_interfaces)
    if interfaces:
        spec["networkInterfaces"] = interfaces
    if placement_group is not None:
        spec["placementGroupSelector"] = {"name": placement_group}
    reservation = group.reservation_id if group.capacity_type is CapacityType.CAPACITY_BLOCK else None
    if reservation is None and group.reservation is not None:
        reservation = group.reservation.id
    if reservation is not None:
        spec["capacityReservationSelectorTerms"] = [{"id": reservation}]
    elif group.reservation is not None and group.reservation.tags is not None:
        # Every reservation carrying all the tags (one term: its tags are ANDed; a `*` value matches any), ODCRs and
        # Capacity Blocks alike, as ai-on-eks selects its reservations (EC2NodeClass capacityReservationSelectorTerms).
        spec["capacityReservationSelectorTerms"] = [{"tags": dict(group.reservation.tags)}]
    return {"apiVersion": API_NODE_CLASS, "kind": "EC2NodeClass", "metadata": {"name": group.name}, "spec": spec}


# The controller (stage 1). kube-system and the names Karpenter's getting-started guide uses; the Pod Identity
# association names the ServiceAccount, so it is fixed (the chart's serviceAccount.name).
RELEASE = "karpenter"
# The release of the karpenter-crd chart (gpufleet.plan.builders.karpenter), named as Karpenter's upgrade guide
# installs it: `helm upgrade --install karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd`.
CRD_RELEASE = "karpenter-crd"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"


def queue_name(fleet: Fleet) -> str:
    """The interruption queue (SQS names: up to 80 characters of letters, digits, - and _; cluster names fit)."""
    return f"{fleet.cluster.name}-karpenter"


def values(fleet: Fleet, queue: str, *, node_repair: bool, node_overlay: bool = False) -> dict[str, Any]:
    """Helm values (keys of the pinned chart's values.yaml, aws/karpenter-provider-aws charts/karpenter @ v1.14.1):
    the cluster, the interruption queue, the fixed ServiceAccount; on the system nodes when gpufleet made them (the
    chart's own affinity already keeps it off the nodes it provisions: karpenter.sh/nodepool DoesNotExist)."""
    out: dict[str, Any] = {
        "settings": {"clusterName": fleet.cluster.name, "interruptionQueue": queue},
        "serviceAccount": {"name": SERVICE_ACCOUNT},
    }
    if node_repair:
        # Karpenter's NodeRepair (alpha in 1.14.1) owns node repair on Karpenter nodes.
        out["settings"]["featureGates"] = {"nodeRepair": True}
    if node_overlay:
        # The NodeOverlays of the pools (overlay_capacity) take effect only with the gate on (alpha in 1.14.1,
        # settings.featureGates.nodeOverlay in the chart's values.yaml; kubernetes-sigs/karpenter
        # pkg/cloudprovider/overlay/cloudprovider.go applies them only then).
        out["settings"].setdefault("featureGates", {})["nodeOverlay"] = True
    if fleet.cluster.mode == "Create":
        out["nodeSelector"] = {"kubernetes.io/os": "linux", LABEL_NODE_GROUP: SYSTEM_GROUP}
    return out


def iam_policy(fleet: Fleet, *, node_role_arn: Any, queue_arn: Any) -> dict[str, Any]:
    """The controller's permissions, statement for statement as Karpenter's getting-started CloudFormation grants
    them (aws/karpenter-provider-aws website/content/en/v1.14/getting-started/getting-started-with-karpenter/
    cloudformation.yaml: NodeLifecyclePolicy, IAMIntegrationPolicy, EKSIntegrationPolicy, InterruptionPolicy,
    ResourceDiscoveryPolicy), the account as `*` (gpufleet does not know it offline) and one document."""
    c = fleet.cluster
    p, r, name = partition(c.region), c.region, c.name
    ec2 = f"arn:{p}:ec2:{r}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{name}": "owned"}
    request_owned = {
        f"aws:RequestTag/kubernetes.io/cluster/{name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": name,
    }
    nodepool = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    request_nodepool = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    tagged = [
        f"{ec2}:*:{kind}/*"
        for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
    ]
    profile = f"arn:{p}:iam::*:instance-profile/*"
    region_tags = {"aws:ResourceTag/topology.kubernetes.io/region": r}
    request_region = {"aws:RequestTag/topology.kubernetes.io/region": r}
    node_class = {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    request_node_class = {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    cluster_arn = f"arn:{p}:eks:{r}:*:cluster/{name}"
    statements: list[dict[str, Any]] = [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{ec2}::image/*",
                f"{ec2}::snapshot/*",
                *(
                    f"{ec2}:*:{kind}/*"
                    for kind in ("security-group", "subnet", "capacity-reservation", "placement-group")
                ),
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {"StringEquals": owned, "StringLike": nodepool},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": tagged,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {"StringEquals": request_owned, "StringLike": request_nodepool},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": tagged,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {
                    **request_owned,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": request_nodepool,
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": owned,
                "StringLike": nodepool,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {"StringEquals": owned, "StringLike": nodepool},
        },
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": profile,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {"StringEquals": {**request_owned, **request_region}, "StringLike": request_node_class},
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": profile,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {**owned, **region_tags, **request_owned, **request_region},
                "StringLike": {**node_class, **request_node_class},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": profile,
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Condition": {"StringEquals": {**owned, **region_tags}, "StringLike": node_class},
        },
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": cluster_arn,
            "Action": "eks:DescribeCluster",
        },
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        },
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": r}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{p}:ssm:{r}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": profile,
            "Action": "iam:GetInstanceProfile",
        },
    ]
    return {"Version": "2012-10-17", "Statement": statements}


def queue_policy(queue_arn: Any) -> dict[str, Any]:
    """EventBridge (and SQS) may send to the queue; nothing reads it but over TLS (the same CloudFormation,
    KarpenterInterruptionQueuePolicy)."""
    return {
        "Id": "EC2InterruptionPolicy",
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Principal": "*",
            },
        ],
    }


# The events Karpenter's interruption controller handles, one EventBridge rule each, as the same CloudFormation has
# them (ScheduledChangeRule, SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule,
# CapacityReservationInterruptionRule): rule id suffix -> (source, detail-type).
INTERRUPTION_EVENTS: dict[str, tuple[str, str]] = {
    "scheduled-change": ("aws.health", "AWS Health Event"),
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "instance-state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "capacity-reservation-interruption": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def event_pattern(source: str, detail_type: str) -> str:
    return json.dumps({"source": [source], "detail-type": [detail_type]})
