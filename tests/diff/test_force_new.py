"""The replace-on-change table (gpufleet.review.impact.FORCE_NEW), one row per kind: a change that replaces the resource
and one that updates it in place, read as the symbol the text diff prints (`+-` / `~`, what `pulumi preview`
prints). Kubernetes rows follow pulumi-kubernetes provider/pkg/provider/diff.go (v4.32.0); AWS rows the
terraform-provider-aws resource schemas (ForceNew). An access policy association and a role policy attachment have
no input that can change in place."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.review import summary
from gpufleet.review.impact import compare
from tests.policies.objects import k8s, res

Edit = Callable[[dict[str, Any]], None]

SELECTOR = {"matchLabels": {"app": "a"}}
POD = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "c:1"}]}}
DAEMON_SET = k8s(
    {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "d", "namespace": "s"},
        "spec": {"selector": SELECTOR, "template": POD},
    }
)
DEPLOYMENT = k8s(
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "s"},
        "spec": {"replicas": 1, "selector": SELECTOR, "template": POD},
    }
)
STATEFUL_SET = k8s(
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "d", "namespace": "s"},
        "spec": {
            "replicas": 1,
            "serviceName": "d",
            "podManagementPolicy": "OrderedReady",
            "revisionHistoryLimit": 10,
            "selector": SELECTOR,
            "template": POD,
        },
    }
)
JOB = k8s(
    {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "s"},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 0, "template": POD},
    }
)
SERVICE = k8s(
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "g", "namespace": "s"},
        "spec": {"clusterIP": "None", "selector": {"app": "a"}, "ports": [{"name": "p", "port": 29500}]},
    }
)
ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
SUBJECTS = [{"kind": "Group", "name": "team-a", "apiGroup": "rbac.authorization.k8s.io"}]
CLUSTER_ROLE_BINDING = k8s(
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "roleRef": ROLE_REF,
        "subjects": SUBJECTS,
    }
)
ROLE_BINDING = k8s(
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "s"},
        "roleRef": ROLE_REF,
        "subjects": SUBJECTS,
    }
)
SERVICE_ACCOUNT = k8s({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a", "namespace": "s"}})
RELEASE = res(
    "gpu-operator",
    "kubernetes:helm.sh/v3:Release",
    {
        "name": "gpu-operator",
        "namespace": "gpu-operator",
        "chart": "gpu-operator",
        "values": {"driver": {"enabled": False}},
    },
)
CLUSTER = res(
    "cluster",
    "aws:eks/cluster:Cluster",
    {
        "name": "research",
        "roleArn": "arn:aws:iam::111122223333:role/c",
        "version": "1.33",
        "bootstrapSelfManagedAddons": False,
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
    },
)
ACCESS_ENTRY = res(
    "admin-access",
    "aws:eks/accessEntry:AccessEntry",
    {
        "clusterName": "research",
        "principalArn": "arn:aws:iam::111122223333:role/a",
        "type": "STANDARD",
        "kubernetesGroups": [],
    },
)
POLICY_ASSOCIATION = res(
    "admin-policy",
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
    {
        "clusterName": "research",
        "principalArn": "arn:aws:iam::111122223333:role/a",
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
        "accessScope": {"type": "namespace", "namespaces": ["team-a"]},
    },
)
POD_IDENTITY = res(
    "pod-identity",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    {
        "clusterName": "research",
        "namespace": "kube-system",
        "serviceAccount": "a",
        "roleArn": "arn:aws:iam::111122223333:role/a",
    },
)
ROLE_POLICY = res("role-policy", "aws:iam/rolePolicy:RolePolicy", {"name": "p", "role": "r", "policy": "{}"})
ATTACHMENT = res(
    "attachment",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    {"role": "r", "policyArn": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"},
)
KMS_ALIAS = res("alias", "aws:kms/alias:Alias", {"name": "alias/checkpoints", "targetKeyId": "<ref:key.keyId>"})


def s3(kind: str, **inputs: Any) -> dict[str, Any]:
    return res(f"bucket-{kind}", f"aws:s3/bucket{kind}:Bucket{kind}", {"bucket": "research-checkpoints", **inputs})


MUTABLE = res("k8s-provider", "pulumi:providers:kubernetes", {"enableConfigMapMutable": "true"})


def config_map(**extra: Any) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "m", "namespace": "s"},
            "data": {"k": "1"},
            **extra,
        }
    )


def set_(path: str, value: Any) -> Edit:
    """Set (or add) the input at a dotted path."""

    def edit(inputs: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            inputs = inputs.setdefault(key, {})
        inputs[last] = value

    return edit


def symbol(entries: list[dict[str, Any]], edit: Edit) -> str:
    """What the text diff prints in front of the first entry after `edit` changed its inputs."""
    old = {e["id"]: dict(e, stage="foundation") for e in copy.deepcopy(entries)}
    new = copy.deepcopy(old)
    target = entries[0]
    edit(new[target["id"]]["inputs"])
    line = next(
        line
        for line in summary.text(compare(old, new), "a", "b").splitlines()
        if f" {target['id']} ({target['type']})" in line
    )
    return line.split()[0]


CASES: list[tuple[str, list[dict[str, Any]], Edit, Edit | None]] = [
    # (kind, entries (the changed one first), a change that replaces, a change made in place if the type has one)
    (
        "DaemonSet",
        [DAEMON_SET],
        set_("spec.selector.matchLabels.app", "b"),
        set_("spec.template.spec.containers", [{"name": "c", "image": "c:2"}]),
    ),
    ("Deployment", [DEPLOYMENT], set_("spec.selector.matchLabels.tier", "x"), set_("spec.replicas", 3)),
    (
        "StatefulSet podManagementPolicy",
        [STATEFUL_SET],
        set_("spec.podManagementPolicy", "Parallel"),
        set_("spec.replicas", 3),
    ),
    (
        "StatefulSet revisionHistoryLimit",
        [STATEFUL_SET],
        set_("spec.revisionHistoryLimit", 3),
        set_("spec.template.metadata.annotations", {"a": "1"}),
    ),
    ("StatefulSet serviceName", [STATEFUL_SET], set_("spec.serviceName", "other"), set_("metadata.labels", {"a": "1"})),
    ("Job completions", [JOB], set_("spec.completions", 4), set_("spec.backoffLimit", 2)),
    ("Job parallelism", [JOB], set_("spec.parallelism", 4), set_("spec.activeDeadlineSeconds", 600)),
    (
        "Job template",
        [JOB],
        set_("spec.template.spec.containers", [{"name": "c", "image": "c:2"}]),
        set_("metadata.annotations", {"a": "1"}),
    ),
    ("Service", [SERVICE], set_("spec.clusterIP", "10.100.0.10"), set_("spec.ports", [{"name": "p", "port": 29501}])),
    (
        "ClusterRoleBinding",
        [CLUSTER_ROLE_BINDING],
        set_("roleRef.name", "edit"),
        set_("subjects", SUBJECTS + [{"kind": "Group", "name": "team-b", "apiGroup": "rbac.authorization.k8s.io"}]),
    ),
    ("RoleBinding", [ROLE_BINDING], set_("roleRef.name", "edit"), set_("subjects", [])),
    (
        "any kind: name and namespace",
        [SERVICE_ACCOUNT],
        set_("metadata.namespace", "t"),
        set_("metadata.labels", {"a": "1"}),
    ),
    ("ConfigMap, enableConfigMapMutable", [config_map(), MUTABLE], set_("metadata.name", "n"), set_("data.k", "2")),
    ("ConfigMap, default provider", [config_map()], set_("data.k", "2"), set_("metadata.labels", {"a": "1"})),
    (
        "ConfigMap immutable, enableConfigMapMutable",
        [config_map(immutable=True), MUTABLE],
        set_("data.k", "2"),
        set_("metadata.labels", {"a": "1"}),
    ),
    ("Helm Release", [RELEASE], set_("namespace", "other"), set_("values.driver.enabled", True)),
    (
        "EKS cluster bootstrapSelfManagedAddons",
        [CLUSTER],
        set_("bootstrapSelfManagedAddons", True),
        set_("version", "1.34"),
    ),
    (
        "EKS cluster bootstrapClusterCreatorAdminPermissions",
        [CLUSTER],
        set_("accessConfig.bootstrapClusterCreatorAdminPermissions", True),
        set_("accessConfig.authenticationMode", "API_AND_CONFIG_MAP"),
    ),
    (
        "EKS access entry",
        [ACCESS_ENTRY],
        set_("principalArn", "arn:aws:iam::111122223333:role/b"),
        set_("kubernetesGroups", ["viewers"]),
    ),
    ("EKS access policy association", [POLICY_ASSOCIATION], set_("accessScope.namespaces", ["team-b"]), None),
    (
        "EKS pod identity association",
        [POD_IDENTITY],
        set_("serviceAccount", "b"),
        set_("roleArn", "arn:aws:iam::111122223333:role/b"),
    ),
    ("IAM role policy", [ROLE_POLICY], set_("role", "other"), set_("policy", '{"Version": "2012-10-17"}')),
    (
        "IAM role policy attachment",
        [ATTACHMENT],
        set_("policyArn", "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly"),
        None,
    ),
    (
        "FSx for Lustre file system",
        [
            res(
                "fsx-lustre",
                "aws:fsx/lustreFileSystem:LustreFileSystem",
                {"deploymentType": "PERSISTENT_2", "subnetIds": "subnet-0aa", "storageCapacity": 2400, "tags": {}},
            )
        ],
        set_("subnetIds", "subnet-0bb"),
        set_("tags", {"team": "x"}),
    ),
    (
        "FSx data repository association",
        [
            res(
                "fsx-data-repository-0",
                "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
                {"fileSystemPath": "/datasets", "dataRepositoryPath": "s3://d/", "batchImportMetaDataOnCreate": True},
            )
        ],
        set_("fileSystemPath", "/data"),
        set_("batchImportMetaDataOnCreate", False),
    ),
    (
        "security group",
        [
            res(
                "efa-security-group",
                "aws:ec2/securityGroup:SecurityGroup",
                {"namePrefix": "f-efa-", "vpcId": "vpc-1", "tags": {}},
            )
        ],
        set_("vpcId", "vpc-2"),
        set_("tags", {"team": "x"}),
    ),
    (
        "security group rule",
        [
            res(
                "efa-self-ingress",
                "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                {"securityGroupId": "sg-1", "ipProtocol": "-1"},
            )
        ],
        set_("securityGroupId", "sg-2"),
        set_("ipProtocol", "tcp"),
    ),
    ("KMS alias", [KMS_ALIAS], set_("name", "alias/other"), set_("targetKeyId", "<ref:other-key.keyId>")),
    (
        "S3 lifecycle",
        [s3("LifecycleConfiguration", rules=[])],
        set_("bucket", "other"),
        set_("rules", [{"id": "r", "status": "Enabled"}]),
    ),
    (
        "S3 ownership controls",
        [s3("OwnershipControls", rule={"objectOwnership": "BucketOwnerEnforced"})],
        set_("bucket", "other"),
        set_("rule.objectOwnership", "BucketOwnerPreferred"),
    ),
    (
        "S3 bucket policy",
        [s3("Policy", policy="{}")],
        set_("bucket", "other"),
        set_("policy", '{"Version": "2012-10-17"}'),
    ),
    (
        "S3 public access block",
        [s3("PublicAccessBlock", blockPublicAcls=True)],
        set_("bucket", "other"),
        set_("blockPublicAcls", False),
    ),
    (
        "S3 encryption",
        [s3("ServerSideEncryptionConfiguration", rules=[])],
        set_("expectedBucketOwner", "111122223333"),
        set_("rules", [{"bucketKeyEnabled": True}]),
    ),
    (
        "S3 versioning",
        [s3("Versioning", versioningConfiguration={"status": "Enabled"})],
        set_("bucket", "other"),
        set_("versioningConfiguration.status", "Suspended"),
    ),
]


@pytest.mark.parametrize(("kind", "entries", "replaces", "in_place"), CASES, ids=[c[0] for c in CASES])
def test_replace_and_in_place_change_per_kind(
    kind: str, entries: list[dict[str, Any]], replaces: Edit, in_place: Edit | None
) -> None:
    assert symbol(entries, replaces) == "+-"
    if in_place is not None:
        assert symbol(entries, in_place) == "~"
