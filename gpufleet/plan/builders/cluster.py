"""The cluster half of stage 1: explicit AWS provider, IAM roles, the EKS cluster and its add-ons (mode Create)
or a lookup of the existing cluster (mode Existing), the system node group, and the Kubernetes provider.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/builders/cluster.py.
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.facts.ami_releases import SYSTEM_NODES_AMI_TYPE
from gpufleet.plan.builders.access_entries import access_entry_resources, admin_associations
from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER, K8S_PROVIDER
from gpufleet.plan.manifests import node_monitoring, storage
from gpufleet.plan.parts import Concat, Ref, Resource, json_document
from gpufleet.spec import access
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.names import (
    LABEL_NODE_GROUP,
    SYSTEM_GROUP,
    SYSTEM_NODE_GROUP,
    TAG_OPEN_ENDPOINT_REASON,
    node_group_name_prefix,
    partition,
)

# aws:eks/cluster enabledClusterLogTypes values (EKS API LogType enum).
CONTROL_PLANE_LOGS = ("api", "audit", "authenticator", "controllerManager", "scheduler")
NODE_ROLE = "node-role"
CLUSTER_ROLE = "cluster-role"
SYSTEM_LAUNCH_TEMPLATE = "system-launch-template"
SECRETS_KEY = "secrets-key"

# EKS add-on name per versions.addons key (https://docs.aws.amazon.com/eks/latest/userguide/workloads-add-ons-available-eks.html).
ADDONS = {
    "vpcCni": "vpc-cni",
    "kubeProxy": "kube-proxy",
    "coreDns": "coredns",
    "nodeMonitoringAgent": "eks-node-monitoring-agent",
    "podIdentityAgent": "eks-pod-identity-agent",
}
# Add-ons gpufleet always manages in mode Create (an unpinned one gets EKS's default version, with a warning).
REQUIRED_ADDONS = ("vpcCni", "kubeProxy", "coreDns", "nodeMonitoringAgent", "podIdentityAgent")
# The VPC CNI enforces Kubernetes NetworkPolicies (the teams' default-deny ingress) only with its network policy
# agent turned on: add-on configuration value enableNetworkPolicy, a string (EKS user guide "Restrict Pod network
# traffic with Kubernetes network policies"; aws/amazon-vpc-cni-k8s charts/aws-vpc-cni values.yaml
# enableNetworkPolicy). Without it NetworkPolicy objects are accepted and silently not enforced.
VPC_CNI_CONFIGURATION = {"enableNetworkPolicy": "true"}
POD_IDENTITY_ADDON = f"addon-{ADDONS['podIdentityAgent']}"


def pod_identity_after(fleet: Fleet) -> tuple[str, ...]:
    """What a PodIdentityAssociation waits for: the agent add-on, which gpufleet installs in mode Create."""
    return (POD_IDENTITY_ADDON,) if fleet.cluster.mode == "Create" else ()


def pod_identity_trust(fleet: Fleet, namespace: str, service_account: str) -> str:
    """The trust policy of any EKS Pod Identity role of the fleet: only `namespace/service_account` on this
    cluster may assume it (the Cluster Autoscaler's and each team's checkpoint writer)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
                    "Effect": "Allow",
                    "Principal": {"Service": "pods.eks.amazonaws.com"},
                    "Action": ["sts:AssumeRole", "sts:TagSession"],
                    "Condition": {
                        "StringEquals": {
                            "aws:RequestTag/eks-cluster-name": fleet.cluster.name,
                            "aws:RequestTag/kubernetes-namespace": namespace,
                            "aws:RequestTag/kubernetes-service-account": service_account,
                        }
                    },
                }
            ],
        },
        indent=2,
    )


def pod_identity_resources(
    fleet: Fleet,
    *,
    role: str,
    policy: str,
    association: str,
    name_prefix: str,
    description: str,
    policy_name: str,
    policy_document: str | Concat,
    namespace: str,
    service_account: str,
) -> list[Resource]:
    """An IAM role only `namespace/service_account` of this cluster may assume through EKS Pod Identity, its
    inline policy, and the association (after the policy, so a pod never starts with a role that can do nothing)."""
    return [
        Resource(
            id=role,
            type="aws:iam/role:Role",
            provider=AWS_PROVIDER,
            args={
                "namePrefix": name_prefix[:38],
                "description": description,
                "assumeRolePolicy": pod_identity_trust(fleet, namespace, service_account),
                "tags": tags(fleet),
            },
        ),
        Resource(
            id=policy,
            type="aws:iam/rolePolicy:RolePolicy",
            provider=AWS_PROVIDER,
            args={"name": policy_name, "role": Ref(role, "name"), "policy": policy_document},
        ),
        Resource(
            id=association,
            type="aws:eks/podIdentityAssociation:PodIdentityAssociation",
            provider=AWS_PROVIDER,
            depends_on=(policy, *pod_identity_after(fleet)),
            args={
                "clusterName": Ref(CLUSTER, "name"),
                "namespace": namespace,
                "serviceAccount": service_account,
                "roleArn": Ref(role, "arn"),
                "tags": tags(fleet),
            },
        ),
    ]


def pod_identity_warning(fleet: Fleet, who: str) -> str | None:
    """On an existing cluster nobody here installs the agent: say who goes without credentials."""
    if fleet.cluster.mode == "Existing":
        return (
            "gpufleet manages no EKS add-ons on an existing cluster: the eks-pod-identity-agent add-on must be"
            f" installed, or {who}"
        )
    return None


NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)
# The VPC CNI's policy.
CNI_POLICY = "AmazonEKS_CNI_Policy"
VPC_CNI_ROLE = "vpc-cni-role"
VPC_CNI_SERVICE_ACCOUNT = ("kube-system", "aws-node")


def _assume(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": (
                        ["sts:AssumeRole", "sts:TagSession"] if service == "eks.amazonaws.com" else "sts:AssumeRole"
                    ),
                }
            ],
        },
        sort_keys=True,
    )


def _role(
    fleet: Fleet, rid: str, service: str, policies: tuple[str, ...], *, trust: str | None = None
) -> list[Resource]:
    out = [
        Resource(
            id=rid,
            type="aws:iam/role:Role",
            provider=AWS_PROVIDER,
            args={
                "namePrefix": f"{fleet.name}-{rid}-"[:38],
                "assumeRolePolicy": trust if trust is not None else _assume(service),
                "tags": tags(fleet),
            },
        )
    ]
    arn = f"arn:{partition(fleet.cluster.region)}:iam::aws:policy/"
    for policy in policies:
        out.append(
            Resource(
                id=f"{rid}-{policy.lower().replace('_', '-')}",
                type="aws:iam/rolePolicyAttachment:RolePolicyAttachment",
                provider=AWS_PROVIDER,
                args={"role": Ref(rid, "name"), "policyArn": arn + policy},
            )
        )
    return out


# What the cluster role does with the Secrets key: terraform-aws-modules/terraform-aws-eks main.tf, the cluster
# encryption policy (kms:Encrypt, kms:Decrypt, kms:ListGrants, kms:DescribeKey).
SECRETS_KEY_USE = ("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ListGrants")


def secrets_key_policy(fleet: Fleet) -> str | Concat:
    """cluster.admins administer the key, the account root only reads it, and only the cluster role uses
    it.

    Why: docs/stage-1.md, "Design notes", cluster.secrets_key_policy."""
    root = f"arn:{partition(fleet.cluster.region)}:iam::{storage.account_of(fleet)}:root"
    return json_document(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "KeyAdministration",
                    "Effect": "Allow",
                    "Principal": {"AWS": [a.principal_arn for a in fleet.cluster.admins]},
                    "Action": list(storage.KEY_ADMIN_ACTIONS),
                    "Resource": "*",
                },
                {
                    "Sid": "AccountReadOnly",
                    "Effect": "Allow",
                    "Principal": {"AWS": root},
                    "Action": list(storage.KEY_READ_ACTIONS),
                    "Resource": "*",
                },
                {
                    "Sid": "ClusterRoleEnvelopeEncryption",
                    "Effect": "Allow",
                    "Principal": {"AWS": Ref(CLUSTER_ROLE, "arn")},
                    "Action": list(SECRETS_KEY_USE),
                    "Resource": "*",
                },
            ],
        }
    )


def tags(fleet: Fleet) -> dict[str, str]:
    return {"gpufleet.io/fleet": fleet.name, "app.kubernetes.io/managed-by": "gpufleet"}


def security_group(fleet: Fleet, rid: str, purpose: str, description: str) -> Resource:
    """A security group of the fleet's VPC named `<fleet>-<purpose>`; its rules are separate resources
    (security_group_rule), as the provider recommends over inline rules."""
    return Resource(
        id=rid,
        type="aws:ec2/securityGroup:SecurityGroup",
        provider=AWS_PROVIDER,
        args={
            "namePrefix": f"{fleet.name}-{purpose}-",
            "description": description,
            "vpcId": fleet.cluster.vpc_id,
            "tags": {**tags(fleet), "Name": f"{fleet.name}-{purpose}"},
        },
    )


def security_group_rule(fleet: Fleet, rid: str, kind: str, group: Ref, **rule: Any) -> Resource:
    """One Ingress or Egress rule (aws:vpc/securityGroup{Ingress,Egress}Rule) on `group`, with the fleet's tags."""
    return Resource(
        id=rid,
        type=f"aws:vpc/securityGroup{kind}Rule:SecurityGroup{kind}Rule",
        provider=AWS_PROVIDER,
        args={"securityGroupId": group, **rule, "tags": tags(fleet)},
    )


def node_policies(fleet: Fleet) -> tuple[str, ...]:
    return NODE_POLICIES if fleet.cluster.mode == "Create" else (*NODE_POLICIES, CNI_POLICY)


def node_role_attachments(fleet: Fleet, role: str = NODE_ROLE) -> tuple[str, ...]:
    return tuple(f"{role}-{p.lower().replace('_', '-')}" for p in node_policies(fleet))


def node_role_resources(fleet: Fleet, role: str) -> list[Resource]:
    """A node role `role` (trusting EC2) with the node policies, beside the managed node groups' NODE_ROLE."""
    return _role(fleet, role, "ec2.amazonaws.com", node_policies(fleet))


def kubeconfig(fleet: Fleet, ca_path: str) -> Concat:
    """A kubeconfig (JSON) from the cluster's endpoint and CA, authenticating with `aws eks get-token`."""
    head = (
        '{"apiVersion": "v1", "kind": "Config", "current-context": "gpufleet", '
        '"clusters": [{"name": "eks", "cluster": {"server": "'
    )
    middle = '", "certificate-authority-data": "'
    tail = (
        '"}}], "contexts": [{"name": "gpufleet", "context": {"cluster": "eks", "user": "aws"}}], "users":'
        ' [{"name": "aws", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command":'
        f' "aws", "args": ["eks", "get-token", "--cluster-name", "{fleet.cluster.name}", "--region",'
        f' "{fleet.cluster.region}"]}}}}}}]}}'
    )
    return Concat(head, Ref(CLUSTER, "endpoint"), middle, Ref(CLUSTER, ca_path), tail)


def cluster_resources(fleet: Fleet) -> tuple[list[Resource], list[str]]:
    """Resources of the cluster half and warnings."""
    c = fleet.cluster
    warnings = [
        f"team {t.name} has no members: nobody can submit its work, and gpufleet check fails (add teams[].members)"
        for t in fleet.teams
        if not t.members
    ]
    # skipCredentialsValidation false and skipRegionValidation true are the defaults pulumi-aws's Python SDK sends
    # when they are not given (sdk/python/pulumi_aws/provider.py, 7.x): written out so the plan holds every input.
    provider = {
        "region": c.region,
        "defaultTags": {"tags": tags(fleet)},
        "skipCredentialsValidation": False,
        "skipRegionValidation": True,
    }
    res = [Resource(id=AWS_PROVIDER, type="pulumi:providers:aws", args=provider)]
    res += _role(fleet, NODE_ROLE, "ec2.amazonaws.com", node_policies(fleet))
    if c.mode == "Existing":
        res.append(
            Resource(
                id=CLUSTER,
                type="aws:eks/getCluster:getCluster",
                args={"name": c.name},
                provider=AWS_PROVIDER,
                lookup=True,
            )
        )
        res += access_entry_resources(fleet, tags(fleet))
        res.append(_kubernetes_provider(fleet, "certificateAuthorities[0].data"))
        if fleet.teams:
            warnings.append(
                "gpufleet manages no EKS add-ons on an existing cluster: turn on the VPC CNI's network policy agent"
                ' (add-on configuration {"enableNetworkPolicy": "true"}), or the teams\' default-deny NetworkPolicies'
                " are not enforced"
            )
        if c.admins or any(t.members for t in fleet.teams):
            warnings.append(
                "gpufleet adds access entries to the existing cluster: its authentication mode must be API or"
                " API_AND_CONFIG_MAP, and a principal that already has an access entry there makes CreateAccessEntry"
                " fail (import or remove that entry)"
            )
        return res, warnings
    res += _role(fleet, CLUSTER_ROLE, "eks.amazonaws.com", ("AmazonEKSClusterPolicy",))
    res += _role(
        fleet,
        VPC_CNI_ROLE,
        "pods.eks.amazonaws.com",
        (CNI_POLICY,),
        trust=pod_identity_trust(fleet, *VPC_CNI_SERVICE_ACCOUNT),
    )
    vpc: dict[str, object] = {
        "subnetIds": list(c.subnet_ids),
        "endpointPrivateAccess": True,
        "endpointPublicAccess": c.endpoint_access == "PublicAndPrivate",
    }
    cluster_tags = tags(fleet)
    if c.endpoint_access == "PublicAndPrivate":
        # Written out even when it is EKS's default, so the tree and the policies see who can reach the endpoint.
        vpc["publicAccessCidrs"] = list(access.public_cidrs(c))
        if access.endpoint_open(c) and c.open_endpoint_reason is None:
            warnings.append(
                "cluster endpoint is public to 0.0.0.0/0 and gpufleet check fails on it: set"
                " cluster.publicEndpoint.cidrs, or say why in publicEndpoint.acknowledgeOpenToInternet"
            )
        if c.open_endpoint_reason is not None:
            cluster_tags[TAG_OPEN_ENDPOINT_REASON] = c.open_endpoint_reason
    res.append(
        Resource(
            id=SECRETS_KEY,
            type="aws:kms/key:Key",
            provider=AWS_PROVIDER,
            # Deleting the key makes every Secret of the cluster unreadable: never by accident.
            protect=True,
            retain_on_delete=True,
            args={
                "description": f"Fleet {fleet.name}: envelope encryption of cluster {c.name}'s Kubernetes Secrets",
                "enableKeyRotation": True,
                "policy": secrets_key_policy(fleet),
                "tags": tags(fleet),
            },
        )
    )
    res.append(
        Resource(
            id=CLUSTER,
            type="aws:eks/cluster:Cluster",
            provider=AWS_PROVIDER,
            # A deleted cluster takes every node and workload with it: never by accident.
            protect=True,
            depends_on=(f"{CLUSTER_ROLE}-amazoneksclusterpolicy", SECRETS_KEY),
            args={
                "name": c.name,
                "version": c.kubernetes_version,
                "roleArn": Ref(CLUSTER_ROLE, "arn"),
                "vpcConfig": vpc,
                # No implicit admin for whoever runs `pulumi up`: cluster.admins are the admins, each an explicit access
                # entry.
                "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
                # Add-ons are managed below at pinned versions instead of EKS's unmanaged bootstrap copies.
                "bootstrapSelfManagedAddons": False,
                # Every control-plane log type EKS offers (EKS user guide "Send control plane logs to CloudWatch
                # Logs"; CIS EKS Benchmark 2.1.1): controllerManager and scheduler say why pods were evicted or not
                # placed, which is where a team's priority or scheduling dispute is settled.
                "enabledClusterLogTypes": list(CONTROL_PLANE_LOGS),
                # Secrets envelope-encrypted with the fleet's own key (CIS EKS Benchmark 5.3.1; EKS's default encryption
                # since 1.28 uses an AWS owned key).
                "encryptionConfig": {"provider": {"keyArn": Ref(SECRETS_KEY, "arn")}, "resources": ["secrets"]},
                "tags": cluster_tags,
            },
        )
    )
    system = c.system_nodes
    assert system is not None  # rules: mode Create requires systemNodes
    # The GPU groups' metadata options (gpufleet.plan.builders.node_groups): IMDSv2 only, one hop, so a
    # pod cannot take the node role.
    res.append(
        Resource(
            id=SYSTEM_LAUNCH_TEMPLATE,
            type="aws:ec2/launchTemplate:LaunchTemplate",
            provider=AWS_PROVIDER,
            args={
                "namePrefix": f"{fleet.name}-system-",
                "updateDefaultVersion": True,
                "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
                "tagSpecifications": [
                    {
                        "resourceType": "instance",
                        "tags": {**tags(fleet), "Name": f"{fleet.name}-system", LABEL_NODE_GROUP: SYSTEM_GROUP},
                    }
                ],
            },
        )
    )
    res.append(
        Resource(
            id=SYSTEM_NODE_GROUP,
            type="aws:eks/nodeGroup:NodeGroup",
            provider=AWS_PROVIDER,
            ignore_changes=("scalingConfig.desiredSize",),
            depends_on=node_role_attachments(fleet) + ("addon-vpc-cni",),
            args={
                "clusterName": Ref(CLUSTER, "name"),
                "nodeGroupNamePrefix": node_group_name_prefix(fleet.name, SYSTEM_GROUP),
                "nodeRoleArn": Ref(NODE_ROLE, "arn"),
                "subnetIds": list(c.subnet_ids),
                "amiType": SYSTEM_NODES_AMI_TYPE,
                "releaseVersion": system.release_version,
                "instanceTypes": [system.instance_type],
                "capacityType": "ON_DEMAND",
                "scalingConfig": {
                    "minSize": system.min_size,
                    "maxSize": system.max_size,
                    "desiredSize": system.min_size,
                },
                "updateConfig": {"maxUnavailable": 1},
                "labels": {LABEL_NODE_GROUP: SYSTEM_GROUP},
                # A numeric version, as the GPU groups' (policies: image-pinned).
                "launchTemplate": {
                    "id": Ref(SYSTEM_LAUNCH_TEMPLATE, "id"),
                    "version": Concat(Ref(SYSTEM_LAUNCH_TEMPLATE, "latestVersion")),
                },
                "tags": tags(fleet),
            },
        )
    )
    unpinned = [key for key in REQUIRED_ADDONS if fleet.versions.addons.get(key) is None]
    if unpinned:
        warnings.append(unpinned_addons_warning(unpinned, c.kubernetes_version))
    for key in ADDONS:
        version = fleet.versions.addons.get(key)
        if key not in REQUIRED_ADDONS and version is None:
            continue
        args: dict[str, object] = {
            "clusterName": Ref(CLUSTER, "name"),
            "addonName": ADDONS[key],
            "resolveConflictsOnCreate": "OVERWRITE",
            "resolveConflictsOnUpdate": "PRESERVE",
            "tags": tags(fleet),
        }
        if version is not None:
            args["addonVersion"] = version
        if key == "vpcCni":
            args["configurationValues"] = json.dumps(VPC_CNI_CONFIGURATION, sort_keys=True)
            namespace, account = VPC_CNI_SERVICE_ACCOUNT
            args["podIdentityAssociations"] = [{"roleArn": Ref(VPC_CNI_ROLE, "arn"), "serviceAccount": account}]
        if key == "nodeMonitoringAgent":
            # Its dcgm-server stays off GPU nodes: the GPU Operator's host engine serves the agent there.
            args["configurationValues"] = json.dumps(node_monitoring.ADDON_CONFIGURATION, sort_keys=True)
        # CoreDNS and the monitoring agent need nodes to become healthy; the CNI must exist before any node, and the
        # Pod Identity agent before the CNI: aws-node takes its credentials from it (a hostNetwork DaemonSet, so it
        # runs on a node whose CNI is not ready yet) when the first node boots.
        after: tuple[str, ...] = (SYSTEM_NODE_GROUP,)
        if key in ("kubeProxy", "podIdentityAgent"):
            after = ()
        elif key == "vpcCni":
            after = (POD_IDENTITY_ADDON, f"{VPC_CNI_ROLE}-{CNI_POLICY.lower().replace('_', '-')}")
        res.append(
            Resource(
                id=f"addon-{ADDONS[key]}",
                type="aws:eks/addon:Addon",
                provider=AWS_PROVIDER,
                args=args,
                depends_on=after,
            )
        )
    res += access_entry_resources(fleet, tags(fleet))
    res.append(_kubernetes_provider(fleet, "certificateAuthority.data"))
    return res, warnings


def unpinned_addons_warning(keys: list[str], kubernetes_version: str) -> str:
    """One warning for every required EKS add-on without a version: what happens, why it matters, how to pin."""
    named = ", ".join(f"{ADDONS[key]} (versions.addons.{key})" for key in keys)
    return (
        f"EKS add-ons not pinned: {named}. EKS installs its default version of each at creation, and the default"
        " moves with EKS releases: environments created apart run different versions, and the tree does not say"
        " which. To silence this, pin each to a version `aws eks describe-addon-versions --kubernetes-version"
        f" {kubernetes_version} --addon-name NAME` lists (`gpufleet preflight` checks the pins)"
    )


def _kubernetes_provider(fleet: Fleet, ca_path: str) -> Resource:
    """The one Kubernetes provider; it waits for the admins' access, through which `pulumi up` reaches the API.

    Why: docs/stage-1.md, "Design notes", cluster._kubernetes_provider."""
    args = {"kubeconfig": kubeconfig(fleet, ca_path), "enableConfigMapMutable": True}
    return Resource(
        id=K8S_PROVIDER, type="pulumi:providers:kubernetes", args=args, depends_on=admin_associations(fleet)
    )
