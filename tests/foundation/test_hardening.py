"""Issue 31 item 8: node and platform hardening of stage 1, asserted on the plan."""

from __future__ import annotations

import json

from gpufleet.plan.builders.cluster import SYSTEM_LAUNCH_TEMPLATE
from gpufleet.plan.parts import Concat, Ref, RolloutPlan
from gpufleet.spec.names import SYSTEM_NODE_GROUP


def resource(plan: RolloutPlan, rid: str):  # type: ignore[no-untyped-def]
    return next(r for s in plan.stages for r in s.content.resources if r.id == rid)


def test_system_nodes_get_imdsv2_with_one_hop(prod: RolloutPlan) -> None:
    """Without a launch template the system group had the AMI's hop limit 2: any pod there could take the node role."""
    template = resource(prod, SYSTEM_LAUNCH_TEMPLATE)
    assert template.args["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
    }
    assert "userData" not in template.args and "imageId" not in template.args  # EKS bootstraps the AMI itself
    group = resource(prod, SYSTEM_NODE_GROUP)
    assert group.args["launchTemplate"] == {
        "id": Ref(SYSTEM_LAUNCH_TEMPLATE, "id"),
        "version": Concat(Ref(SYSTEM_LAUNCH_TEMPLATE, "latestVersion")),
    }


def test_every_control_plane_log_is_on(prod: RolloutPlan) -> None:
    assert resource(prod, "cluster").args["enabledClusterLogTypes"] == [
        "api",
        "audit",
        "authenticator",
        "controllerManager",
        "scheduler",
    ]


def test_secrets_are_envelope_encrypted_with_the_fleets_key(prod: RolloutPlan) -> None:
    """CIS EKS 5.3.1: Secrets under a customer-managed key that only the cluster role may use."""
    cluster = resource(prod, "cluster")
    assert cluster.args["encryptionConfig"] == {
        "provider": {"keyArn": Ref("secrets-key", "arn")},
        "resources": ["secrets"],
    }
    assert "secrets-key" in cluster.depends_on
    key = resource(prod, "secrets-key")
    assert key.protect and key.retain_on_delete and key.args["enableKeyRotation"] is True
    policy = key.args["policy"]
    text = str(policy)
    statements = {s["Sid"]: s for s in json.loads(text)["Statement"]}
    assert statements["AccountReadOnly"]["Action"] == ["kms:Describe*", "kms:Get*", "kms:List*"]
    assert statements["ClusterRoleEnvelopeEncryption"] == {
        "Sid": "ClusterRoleEnvelopeEncryption",
        "Effect": "Allow",
        "Principal": {"AWS": "<ref:cluster-role.arn>"},
        "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ListGrants"],
        "Resource": "*",
    }
    admin = statements["KeyAdministration"]
    assert admin["Principal"]["AWS"] == [a.principal_arn for a in prod.fleet.cluster.admins]
    assert not {"kms:Encrypt", "kms:Decrypt", "kms:*"} & set(admin["Action"])


def test_the_vpc_cni_policy_is_on_a_role_only_aws_node_assumes(prod: RolloutPlan, existing: RolloutPlan) -> None:
    """Before: AmazonEKS_CNI_Policy sat on the node role, which every process of a node (and, through IMDS, any pod
    that reaches it) can use to change the VPC's network interfaces."""
    ids = {r.id for s in prod.stages for r in s.content.resources}
    assert "node-role-amazoneks-cni-policy" not in ids
    assert "vpc-cni-role-amazoneks-cni-policy" in ids
    trust = json.loads(resource(prod, "vpc-cni-role").args["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "aws-node"
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-namespace"] == "kube-system"
    cni = resource(prod, "addon-vpc-cni")
    assert cni.args["podIdentityAssociations"] == [
        {"roleArn": Ref("vpc-cni-role", "arn"), "serviceAccount": "aws-node"}
    ]
    # the agent serves aws-node's credentials when the first node boots: installed before the CNI, not after nodes
    assert "addon-eks-pod-identity-agent" in cni.depends_on
    assert resource(prod, "addon-eks-pod-identity-agent").depends_on == ()
    # an existing cluster's aws-node is not gpufleet's: its GPU nodes keep the policy on the node role
    assert "node-role-amazoneks-cni-policy" in {r.id for s in existing.stages for r in s.content.resources}
