"""The Kubernetes Cluster Autoscaler (stage 1, cluster.autoscaler Install) as plain data: its Helm values, the IAM
policy of its EKS Pod Identity role, and the node-group tags and labels that let it scale a group up from zero.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/manifests/autoscaler.py.
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.facts import catalog
from gpufleet.facts.versions import CLUSTER_AUTOSCALER_IMAGES
from gpufleet.plan.manifests import node_bootstrap, restricted
from gpufleet.plan.manifests.network import rdma_resource
from gpufleet.plan.manifests.sharing import advertised
from gpufleet.spec.efa import efa_interfaces
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup
from gpufleet.spec.names import EFA_RESOURCE, GPU_RESOURCE, LABEL_NODE_GROUP, SYSTEM_GROUP, partition

RELEASE = "cluster-autoscaler"
# kube-system: the autoscaler never removes a node that runs a non-DaemonSet kube-system pod
# (--skip-nodes-with-system-pods, default true), so it does not scale away the system node it runs on
# (cluster-autoscaler/README.md, "Deployment").
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"

TAG_ENABLED = "k8s.io/cluster-autoscaler/enabled"
TEMPLATE_RESOURCE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"
EPHEMERAL_STORAGE = "ephemeral-storage"
# The AWS provider's GPU label (cloudprovider/aws/aws_cloud_provider.go GPULabel).
# Why: docs/stage-1.md, "Design notes", autoscaler.ACCELERATOR_LABEL.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
_ACCELERATOR_NAMES = {"A100": "nvidia-tesla-a100", "T4": "nvidia-tesla-t4", "V100": "nvidia-tesla-v100"}
# Instances with the EFA driver pre-allocate 5128 2 MiB huge pages (awsdocs/amazon-eks-user-guide
# latest/ug/ml/node-efa.adoc); EFA pods (the bandwidth gate) request hugepages-2Mi.
EFA_HUGEPAGES_2MI = f"{5128 * 2}Mi"

# Flags of the autoscaler binary, each present in cluster-autoscaler/config/flags/flags.go at cluster-autoscaler-1.35.2
# (cluster-autoscaler/main.go at 1.32.7), so every image in CLUSTER_AUTOSCALER_IMAGES accepts them.
# Why: docs/stage-1.md, "Design notes", autoscaler.EXTRA_ARGS.
EXTRA_ARGS: dict[str, str] = {
    # Cheapest group that fits when several would (CPU and memory waste). The default of 1.33 and later; 1.32
    # defaults to random.
    "expander": "least-waste",
    # A GPU node counts as unneeded only below 0.1% GPU utilisation, i.e. when no pod holds any of its GPUs (at most 8 x
    # 48 = 384 nvidia.com/gpu per node, so one is at least 0.26%).
    # Why: docs/stage-1.md, "Design notes", autoscaler.scale-down-gpu-utilization-threshold.
    "scale-down-gpu-utilization-threshold": "0.001",
    # How long a node must stay unneeded before it is removed: about one cold start of a GPU node (boot, driver,
    # image pulls: 5-15 min), so an idle node costs at most what re-creating it for the next job would.
    "scale-down-unneeded-time": "15m",
    # gpufleet pulls a group's images in user data before kubelet starts, so a cold GPU node can take longer than the
    # default 15m to register; past this the autoscaler deletes the instance and backs off the group.
    "max-node-provision-time": "30m",
}

# The values.yaml keys gpufleet sets, every one read at kubernetes/autoscaler
# cluster-autoscaler/charts/cluster-autoscaler/values.yaml @ cluster-autoscaler-chart-9.59.0 (identical at
# cluster-autoscaler-chart-9.58.0); tests check each against that values.yaml (tools/upstream_files.json).
VALUE_KEYS = frozenset(
    {
        "cloudProvider",
        "awsRegion",
        "autoDiscovery.clusterName",
        "image.tag",
        "fullnameOverride",
        "rbac.serviceAccount.name",
        "extraArgs",
        "nodeSelector",
        "resources",
        "securityContext",
        "containerSecurityContext",
    }
)
# Value paths whose content the chart passes on whole (see above).
OPAQUE_VALUES = frozenset({"extraArgs", "nodeSelector", "resources", "securityContext", "containerSecurityContext"})

# The upstream values.yaml comments suggest these; the image is distroless `nonroot`
# (cluster-autoscaler/Dockerfile), so nothing needs root or a writable root filesystem.
_CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
}
# The requests are values.yaml's commented example; the limit leaves room for a large fleet's caches (an OOM-killed
# autoscaler scales nothing).
_RESOURCES = {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "1Gi"}}


def image_tag(fleet: Fleet) -> str:
    return CLUSTER_AUTOSCALER_IMAGES[fleet.cluster.kubernetes_version]


def values(fleet: Fleet) -> dict[str, Any]:
    """Helm values: auto-discovery of this cluster's ASGs, the image of the cluster's Kubernetes minor, the GPU
    scale-down policy, on the system nodes when gpufleet made them (mode Existing: the chart's placement)."""
    out: dict[str, Any] = {
        "cloudProvider": "aws",
        "awsRegion": fleet.cluster.region,
        # With the chart's default autoDiscovery.tags: ASGs tagged k8s.io/cluster-autoscaler/enabled and
        # k8s.io/cluster-autoscaler/<clusterName>.
        "autoDiscovery": {"clusterName": fleet.cluster.name},
        "image": {"tag": image_tag(fleet)},
        "fullnameOverride": RELEASE,
        # A fixed name: the Pod Identity association names it.
        "rbac": {"serviceAccount": {"name": SERVICE_ACCOUNT}},
        "extraArgs": dict(EXTRA_ARGS),
        "resources": _RESOURCES,
        "securityContext": restricted.POD,
        "containerSecurityContext": _CONTAINER_SECURITY,
    }
    if fleet.cluster.mode == "Create":
        out["nodeSelector"] = {LABEL_NODE_GROUP: SYSTEM_GROUP}
    return out


def discovery_tags(fleet: Fleet) -> dict[str, str]:
    """The auto-discovery tags (README "Auto-Discovery Setup"), as EKS sets them on each managed node group's ASG."""
    return {TAG_ENABLED: "true", f"k8s.io/cluster-autoscaler/{fleet.cluster.name}": "owned"}


def template_resources(fleet: Fleet, group: NodeGroup, *, with_sharing: bool, with_network: bool) -> dict[str, str]:
    """Resources beyond CPU and memory a node of the group offers once its device plugins run, derived from the
    catalog and the environment's stages (never read back from a tag): the scale-from-zero template's tags, and
    what gpufleet.simulate.nodes gives each node, autoscaler or not.

    Why: docs/stage-1.md, "Design notes", autoscaler.template_resources."""
    info = catalog.lookup(group.instance_type)
    if info is None:
        return {}
    out = (
        {name: str(n) for name, n in advertised(group).items()} if with_sharing else {GPU_RESOURCE: str(info.gpu_count)}
    )
    out[EPHEMERAL_STORAGE] = f"{node_bootstrap.ephemeral_storage_mib(group)}Mi"
    if with_network and group.fabric is Fabric.EFA:
        out[EFA_RESOURCE] = str(efa_interfaces(group))
        out["hugepages-2Mi"] = EFA_HUGEPAGES_2MI
    if with_network and group.fabric is Fabric.RDMA and fleet.network.rdma is not None:
        out[rdma_resource(fleet.network.rdma)] = str(fleet.network.rdma.hca_max)
    return out


def node_group_tags(fleet: Fleet, group: NodeGroup, *, with_sharing: bool, with_network: bool) -> dict[str, str]:
    """Tags for a GPU node group: auto-discovery plus its node-template resources."""
    resources = template_resources(fleet, group, with_sharing=with_sharing, with_network=with_network)
    return {
        **discovery_tags(fleet),
        **{TEMPLATE_RESOURCE_TAG + name: value for name, value in sorted(resources.items())},
    }


def accelerator_label(group: NodeGroup) -> dict[str, str]:
    info = catalog.lookup(group.instance_type)
    model = info.gpu_model if info else "unknown"
    return {ACCELERATOR_LABEL: _ACCELERATOR_NAMES.get(model, f"nvidia-{model.lower()}")}


# The "Full Cluster Autoscaler Features Policy" of cloudprovider/aws/README.md (auto-discovery and dynamic EC2
# instance lists), with its write actions restricted to this cluster's node groups as the README recommends.
READ_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
)
WRITE_ACTIONS = ("autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup")


def iam_policy(fleet: Fleet) -> str:
    """Read everything it needs to plan; scale and terminate only ASGs tagged as this cluster's (the auto-discovery
    tag EKS puts on its managed node groups' ASGs); describe only this cluster's node groups."""
    c = fleet.cluster
    doc = {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Discover", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": "*"},
            {
                "Sid": "NodeGroupTemplates",
                "Effect": "Allow",
                "Action": ["eks:DescribeNodegroup"],
                "Resource": f"arn:{partition(c.region)}:eks:{c.region}:*:nodegroup/{c.name}/*",
            },
            {
                "Sid": "ScaleOwnNodeGroups",
                "Effect": "Allow",
                "Action": list(WRITE_ACTIONS),
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{c.name}": "owned"}},
            },
        ],
    }
    return json.dumps(doc, indent=2)
