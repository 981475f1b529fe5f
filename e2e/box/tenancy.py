"""Who is who in the box: what EKS makes of the fleet's access entries, as Kubernetes identities and grants.

EKS authenticates an IAM principal of an access entry as the Kubernetes user
arn:aws:sts::<account>:assumed-role/<role>/<session> with the entry's kubernetesGroups (and system:authenticated)
(https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html). The box gives each member a client
certificate with exactly that user and groups. EKS's access policies are not RBAC objects: they are an authorizer
of EKS's own. The box stands in for AmazonEKSEditPolicy with the built-in rules of Kubernetes' `edit` ClusterRole,
without what charts aggregate into it (EKS's policy aggregates nothing;
https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html lists it as edit's built-in rules),
bound in the team's namespace only, as the policy association's namespace scope does; AmazonEKSClusterAdminPolicy
is system:masters. Everything else a member has comes from the RBAC gpufleet renders, applied as it is.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from e2e.box.client import Client
from e2e.box.cluster import Cluster
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.authorization import identity
from gpufleet.spec import access

EDIT_POLICY_ROLE = "gpufleet-box:amazon-eks-edit-policy"


@dataclass(frozen=True)
class Member:
    team: str
    namespace: str
    arn: str
    user: str
    groups: tuple[str, ...]


def session_user(arn: str, session: str = "box") -> str:
    who = identity(arn)
    return f"arn:{who.partition}:sts::{who.account}:assumed-role/{who.name}/{session}"


def members(plan: RolloutPlan) -> list[Member]:
    return [
        Member(t.name, t.namespace, m.principal_arn, session_user(m.principal_arn), (access.team_group(t.name),))
        for t in plan.fleet.teams
        for m in t.members
    ]


def edit_policy_role(cluster: Cluster) -> None:
    """AmazonEKSEditPolicy's stand-in: `edit`'s built-in rules. `edit` is an aggregated role whose rules the
    controller manager fills in from every ClusterRole labelled aggregate-to-edit (charts' roles among them): its
    built-in part is the bootstrap roles system:aggregate-to-edit and system:aggregate-to-view (`view` aggregates
    into `edit`; kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go)."""
    rules: list[Any] = []
    for name in ("system:aggregate-to-edit", "system:aggregate-to-view"):
        rules += cluster.admin.get("rbac.authorization.k8s.io/v1", "ClusterRole", name).get("rules", [])
    cluster.admin.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": EDIT_POLICY_ROLE},
            "rules": rules,
        }
    )


def grant(cluster: Cluster, member: Member) -> None:
    """The access policy association: AmazonEKSEditPolicy scoped to the team's namespace."""
    binding: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": f"gpufleet-box-eks-edit-{hashlib.sha256(member.user.encode()).hexdigest()[:10]}",
            "namespace": member.namespace,
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EDIT_POLICY_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": member.user}],
    }
    cluster.admin.apply(binding)


def client(cluster: Cluster, member: Member) -> Client:
    return cluster.as_user(member.user, member.groups)
