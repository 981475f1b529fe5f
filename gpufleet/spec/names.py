"""Names every layer shares: node labels, taints and their tolerations, namespaces, extended resources, reserved
sharing-config names and the AWS partition of a region.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/spec/names.py.
"""

from __future__ import annotations

from gpufleet.spec.fleet import Fabric, NodeGroup

# Node labels gpufleet sets on every node group (the selectors of Kueue flavors, device plugin configs, etc.).
LABEL_NODE_GROUP = "gpufleet.io/node-group"
# Tag on a node group with an On-Demand Capacity Reservation: the reserved instance count, which the synth tree
# otherwise lacks and `gpufleet diff` needs for the standing cost.
TAG_RESERVED_INSTANCES = "gpufleet.io/reserved-instances"
LABEL_WORKLOAD_CLASS = "gpufleet.io/workload-class"
LABEL_FABRIC = "gpufleet.io/fabric"
LABEL_GPU_MODEL = "gpufleet.io/gpu-model"
LABEL_SHARING = "gpufleet.io/sharing"
# The LABEL_NODE_GROUP value of the CPU system node group (mode Create), where cluster add-ons run.
SYSTEM_GROUP = "system"
LABEL_MANAGED_BY = {"app.kubernetes.io/managed-by": "gpufleet"}
# Annotation: pulumi-kubernetes creates the object without waiting for it to become ready (pulumi-kubernetes
# provider/pkg/await: a Deployment or DaemonSet is otherwise awaited until its rollout completes).
SKIP_AWAIT = "pulumi.com/skipAwait"
# The logical names of the system node group and of each GPU node group's resources (the rule resource-ids keeps a
# GPU node group's from meeting another resource's).
SYSTEM_NODE_GROUP = "system-node-group"


def node_group_id(group: NodeGroup) -> str:
    return f"{group.name}-node-group"


def launch_template_id(group: NodeGroup) -> str:
    return f"{group.name}-launch-template"


def placement_group_id(group: NodeGroup) -> str:
    return f"{group.name}-placement-group"


# EKS names a node group from its prefix plus a 26-character unique suffix, and a node group name may be at most 63
# characters: terraform-provider-aws internal/service/eks/node_group.go validates node_group_name_prefix with
# StringLenBetween(0, 63-id.UniqueIDSuffixLength), i.e. at most 37.
NODE_GROUP_NAME_MAX = 63
NODE_GROUP_NAME_PREFIX_MAX = NODE_GROUP_NAME_MAX - 26


def node_group_name_prefix(fleet_name: str, group_name: str) -> str:
    """`nodeGroupNamePrefix` of a node group: `{fleet}-{group}-` (the system node group's group is `system`)."""
    return f"{fleet_name}-{group_name}-"


# Tenancy (docs/tenancy-and-access.md).
# Why: docs/architecture.md, "Design notes", names.LABEL_TEAM.
LABEL_TEAM = "gpufleet.io/team"
# Kueue's workload labels (kueue pkg/controller/constants: QueueLabel, WorkloadPriorityClassLabel).
LABEL_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
LABEL_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"
TEAM_GROUP_PREFIX = "gpufleet-team-"
TAG_OPEN_ENDPOINT_REASON = "gpufleet.io/open-endpoint-reason"

# Headroom (nodeGroups[].headroom, docs/inference.md "Headroom"): the placeholder pods' PriorityClass and its value,
# the lowest that still makes the Cluster Autoscaler scale up: "Priority -10 will be reserved for overprovisioning
# pods as it is the lowest priority that triggers scaling clusters" (kubernetes/autoscaler cluster-autoscaler/FAQ.md,
# "How can I configure overprovisioning with Cluster Autoscaler?"; --expendable-pods-priority-cutoff defaults to -10,
# pods below it are ignored for scale-up and scale-down, config/flags/flags.go).
HEADROOM_PRIORITY_CLASS = "gpufleet-headroom"
HEADROOM_PRIORITY = -10

# Extended resources the device plugins advertise.
GPU_RESOURCE = "nvidia.com/gpu"
# MIG strategy mixed: one resource per profile, nvidia.com/mig-<profile> (NVIDIA/k8s-device-plugin internal/rm/rm.go)
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
EFA_RESOURCE = "vpc.amazonaws.com/efa"

# Taints: key nvidia.com/gpu so that EKS's ExtendedResourceToleration admission plugin adds the toleration
# to every pod requesting nvidia.com/gpu (https://docs.aws.amazon.com/eks/latest/userguide/platform-versions.html).
GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
EFA_TAINT = {"key": EFA_RESOURCE, "value": "true", "effect": "NoSchedule"}

NS_GPU_OPERATOR = "gpu-operator"
NS_KUEUE = "kueue-system"
NS_MONITORING = "monitoring"
NS_NETWORK = "gpufleet-network"
NS_HEALTH = "gpufleet-health"
NS_SYSTEM = "gpufleet-system"
# Namespaces a team may not claim: Kubernetes' own and every namespace gpufleet installs into.
RESERVED_NAMESPACES = (
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    NS_GPU_OPERATOR,
    NS_KUEUE,
    NS_MONITORING,
    NS_NETWORK,
    NS_HEALTH,
    NS_SYSTEM,
)

# Entry names of the GPU Operator's sharing ConfigMaps that gpufleet reserves for "no sharing" (a group of that
# strategy may not use them: rules.py "sharing-names").
DEFAULT_DEVICE_PLUGIN_CONFIG = "default"
MIG_DISABLED = "all-disabled"

_EKS_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


def eks_effect(effect: str) -> str:
    """Kubernetes spelling -> EKS API spelling (API_Taint accepts only NO_SCHEDULE style)."""
    return _EKS_EFFECT[effect]


def group_taints(group: NodeGroup) -> list[dict[str, str]]:
    """All taints of a group in Kubernetes spelling: GPU taint, EFA taint on EFA groups (unless efaTaint is
    Disabled), then the spec's. Node group, Kueue flavor and every toleration gpufleet writes derive from this."""
    taints = [dict(GPU_TAINT)]
    if group.fabric is Fabric.EFA and group.efa_taint == "Enabled":
        taints.append(dict(EFA_TAINT))
    taints += [{"key": t.key, "value": t.value, "effect": t.effect} for t in group.taints]
    return taints


def tolerations_for(taints: list[dict[str, str]]) -> list[dict[str, str]]:
    """Tolerations that match exactly the given taints."""
    return [{"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]} for t in taints]


def partition(region: str) -> str:
    """The AWS partition of a region, the second field of every ARN."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"
