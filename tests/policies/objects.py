"""Small inventory-shaped resources for policy tests: each builder returns a good resource; tests break one field."""

from __future__ import annotations

import base64
import copy
from typing import Any

from gpufleet.tree.entries import LAUNCH_TEMPLATE, NODE_GROUP


def res(rid: str, rtype: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {
        "id": rid,
        "type": rtype,
        "inputs": inputs,
        "protect": False,
        "retainOnDelete": False,
        "ignoreChanges": [],
        "dependsOn": [],
        **options,
    }


def k8s(obj: dict[str, Any]) -> dict[str, Any]:
    group = "core/v1" if obj["apiVersion"] == "v1" else obj["apiVersion"]
    meta = obj["metadata"]
    return res(
        f"{obj['kind'].lower()}-{meta.get('namespace', 'cluster')}-{meta['name']}",
        f"kubernetes:{group}:{obj['kind']}",
        obj,
    )


def mime(node_config: str, *scripts: str) -> str:
    parts = [("application/node.eks.aws", node_config)] + [
        ('text/x-shellscript; charset="us-ascii"', s) for s in scripts
    ]
    lines = ["MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="==B=="', ""]
    for ctype, body in parts:
        lines += ["--==B==", f"Content-Type: {ctype}", "", body, ""]
    return "\n".join(lines + ["--==B==--", ""])


SINGLE_NUMA = (
    "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      topologyManagerPolicy:"
    " single-numa-node\n      topologyManagerScope: pod\n"
)
CLOSE_ESCAPE = (
    "#!/bin/bash\nsed -i 's/x/accept-nvidia-visible-devices-envvar-when-unprivileged = false/'"
    " /etc/nvidia-container-runtime/config.toml\n"
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def launch_template(group: str, user_data: str | None = None, efa: bool = False, **extra: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "namePrefix": f"research-{group}-",
        "updateDefaultVersion": True,
        "userData": b64(user_data if user_data is not None else mime(SINGLE_NUMA, CLOSE_ESCAPE)),
    }
    if efa:
        inputs["networkInterfaces"] = [
            {"deviceIndex": 0, "networkCardIndex": 0, "interfaceType": "efa"},
            {"deviceIndex": 1, "networkCardIndex": 1, "interfaceType": "efa-only"},
        ]
    inputs.update(extra)
    return res(f"{group}-launch-template", LAUNCH_TEMPLATE, inputs)


def node_group(group: str = "h100", cls: str = "Training", fabric: str = "None", **extra: Any) -> dict[str, Any]:
    taints = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    if fabric == "EFA":
        taints.append({"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NO_SCHEDULE"})
    inputs: dict[str, Any] = {
        "amiType": "AL2023_x86_64_NVIDIA",
        "capacityType": "ON_DEMAND",
        "clusterName": "<ref:cluster.name>",
        "instanceTypes": ["p5.48xlarge"],
        "labels": {"gpufleet.io/node-group": group, "gpufleet.io/workload-class": cls, "gpufleet.io/fabric": fabric},
        "launchTemplate": {
            "id": f"<ref:{group}-launch-template.id>",
            "version": f"<ref:{group}-launch-template.latestVersion>",
        },
        "releaseVersion": "1.33.13-20260714",
        "scalingConfig": {"desiredSize": 0, "minSize": 0, "maxSize": 4},
        "subnetIds": ["subnet-1"] if fabric == "EFA" else ["subnet-1", "subnet-2"],
        "taints": taints,
    }
    inputs.update(extra)
    return res(f"{group}-node-group", NODE_GROUP, inputs, ignoreChanges=["scalingConfig.desiredSize"])


def system_group() -> dict[str, Any]:
    ng = node_group("system", cls="Batch")
    ng["id"] = "system-node-group"
    ng["inputs"].update(
        amiType="AL2023_x86_64_STANDARD",
        instanceTypes=["m7i.xlarge", "m6i.xlarge"],
        labels={"gpufleet.io/node-group": "system"},
        taints=[],
    )
    del ng["inputs"]["launchTemplate"]
    return ng


TOOLKIT_ENV = [
    {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
    {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"},
]


def gpu_operator(version: str = "v26.7.0", toolkit: dict[str, Any] | None = None, **values: Any) -> dict[str, Any]:
    vals: dict[str, Any] = {
        "driver": {"enabled": False},
        "toolkit": toolkit if toolkit is not None else {"enabled": False},
        "devicePlugin": {"env": [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]},
    }
    vals.update(values)
    return res(
        "helm-gpu-operator",
        "kubernetes:helm.sh/v3:Release",
        {
            "chart": "gpu-operator",
            "name": "gpu-operator",
            "namespace": "gpu-operator",
            "version": version,
            "values": vals,
            "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
        },
    )


def bucket_set(name: str = "research-checkpoints") -> list[dict[str, Any]]:
    """A checkpoint bucket the way the storage stage is expected to render it."""
    bucket = res(
        "checkpoint-bucket",
        "aws:s3/bucket:Bucket",
        {"bucket": name, "forceDestroy": False},
        protect=True,
        retainOnDelete=True,
    )
    sse = res(
        "checkpoint-bucket-encryption",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        {
            "bucket": "<ref:checkpoint-bucket.id>",
            "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}],
        },
    )
    pab = res(
        "checkpoint-bucket-public-access",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        {
            "bucket": "<ref:checkpoint-bucket.id>",
            "blockPublicAcls": True,
            "blockPublicPolicy": True,
            "ignorePublicAcls": True,
            "restrictPublicBuckets": True,
        },
    )
    return [bucket, sse, pab]


def team(name: str) -> list[dict[str, Any]]:
    """Namespace, ClusterQueue and LocalQueue of one team, as the admission stage renders them."""
    ns = k8s(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": {"gpufleet.io/team": name, "pod-security.kubernetes.io/enforce": "baseline"},
            },
        }
    )
    cq = k8s(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}, "resourceGroups": []},
        }
    )
    lq = k8s(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": name},
            "spec": {"clusterQueue": name},
        }
    )
    return [ns, cq, lq, *team_access(name), default_deny(name)]


def default_deny(namespace: str) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": namespace},
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {"from": [{"podSelector": {}}]},
                    {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]},
                ],
            },
        }
    )


def vpc_cni(configuration: str | None = '{"enableNetworkPolicy": "true"}') -> dict[str, Any]:
    inputs: dict[str, Any] = {"addonName": "vpc-cni", "clusterName": "<ref:cluster.name>"}
    if configuration is not None:
        inputs["configurationValues"] = configuration
    return res("addon-vpc-cni", "aws:eks/addon:Addon", inputs)


def team_access(name: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """One member's access entry and edit association, and the team group's RBAC, as the fleet renders them."""
    ns = namespace or name
    arn = f"arn:aws:iam::111122223333:role/{name}"
    entry = res(
        f"access-team-{name}",
        "aws:eks/accessEntry:AccessEntry",
        {
            "clusterName": "<ref:cluster.name>",
            "principalArn": arn,
            "type": "STANDARD",
            "kubernetesGroups": [f"gpufleet-team-{name}"],
            "tags": {"gpufleet.io/team": name},
        },
    )
    assoc = res(
        f"access-team-{name}-edit",
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        {
            "clusterName": "<ref:cluster.name>",
            "principalArn": arn,
            "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy",
            "accessScope": {"type": "namespace", "namespaces": [ns]},
        },
    )
    group = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"gpufleet-team-{name}"}]
    role = k8s(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "gpufleet-team", "namespace": ns},
            "rules": [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["localqueues", "workloads"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        }
    )
    binding = k8s(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"gpufleet-team-{name}", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpufleet-team"},
            "subjects": group,
        }
    )
    viewer = k8s(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "gpufleet-team-queue-viewer"},
            "rules": [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["clusterqueues", "clusterqueues/status", "cohorts"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        }
    )
    viewer_binding = k8s(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"gpufleet-team-{name}-queue-viewer"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "gpufleet-team-queue-viewer",
            },
            "subjects": group,
        }
    )
    return [entry, assoc, role, binding, viewer, viewer_binding]


def queue_name_policy(namespaces: list[str], actions: tuple[str, ...] = ("Deny",)) -> list[dict[str, Any]]:
    vap = k8s(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "require-queue-name"},
            "spec": {
                "variables": [{"name": "q", "expression": "object.metadata.labels['kueue.x-k8s.io/queue-name']"}],
                "validations": [{"expression": "variables.q != ''"}],
            },
        }
    )
    binding = k8s(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "require-queue-name"},
            "spec": {
                "policyName": "require-queue-name",
                "validationActions": list(actions),
                "matchResources": {
                    "namespaceSelector": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}
                        ]
                    }
                },
            },
        }
    )
    return [vap, binding]


def device_plugin_configmap(entries: dict[str, str]) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gpufleet-device-plugin-config", "namespace": "gpu-operator"},
            "data": entries,
        }
    )


def clone(value: Any) -> Any:
    return copy.deepcopy(value)


def eks_cluster(
    cidrs: list[str] | None = None, public: bool | None = True, reason: str | None = None
) -> dict[str, Any]:
    """The EKS cluster of mode Create: public endpoint limited to `cidrs` (None: the field omitted)."""
    vpc: dict[str, Any] = {"endpointPrivateAccess": True, "subnetIds": ["subnet-1", "subnet-2"]}
    if public is not None:
        vpc["endpointPublicAccess"] = public
    if cidrs is not None:
        vpc["publicAccessCidrs"] = cidrs
    tags = {"gpufleet.io/fleet": "research"} | ({"gpufleet.io/open-endpoint-reason": reason} if reason else {})
    return res(
        "cluster",
        "aws:eks/cluster:Cluster",
        {"name": "research", "vpcConfig": vpc, "tags": tags, "accessConfig": {"authenticationMode": "API"}},
        protect=True,
    )


def node_class(group: str = "l40s", user_data: str | None = None, **spec: Any) -> dict[str, Any]:
    """A Karpenter EC2NodeClass as gpufleet renders it (plan/manifests/karpenter.py): IMDSv2, encrypted volumes."""
    body: dict[str, Any] = {
        "amiFamily": "AL2023",
        "amiSelectorTerms": [{"ssmParameter": "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/x"}],
        "role": "<ref:node-role.name>",
        "subnetSelectorTerms": [{"id": "subnet-1"}],
        "securityGroupSelectorTerms": [{"id": "<ref:cluster.vpcConfig.clusterSecurityGroupId>"}],
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {"volumeSize": "300Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
                "rootVolume": True,
            }
        ],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 1,
        },
        "userData": user_data if user_data is not None else mime(SINGLE_NUMA, CLOSE_ESCAPE),
    }
    body.update(spec)
    return k8s(
        {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": group}, "spec": body}
    )


def node_pool(group: str = "l40s", cls: str = "Inference", **spec: Any) -> dict[str, Any]:
    """A Karpenter NodePool as gpufleet renders it: GPU taint, expireAfter Never, WhenEmpty, budgets by class."""
    budgets: list[dict[str, Any]] = [{"nodes": "1"}]
    if cls in ("Training", "Interactive"):
        budgets.insert(0, {"nodes": "0", "reasons": ["Drifted"]})
    body: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {"gpufleet.io/node-group": group, "gpufleet.io/workload-class": cls}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": group},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6e.12xlarge"]}
                ],
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                "expireAfter": "Never",
            },
        },
        "limits": {"nvidia.com/gpu": "16"},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": budgets},
    }
    body.update(spec)
    return k8s({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": group}, "spec": body})
