"""Who can reach and use the fleet: the API endpoint's reach and the access table of plan.md.

Why, with sources: docs/tenancy-and-access.md, "Design notes", gpufleet/spec/access.py.
"""

from __future__ import annotations

import re

from gpufleet.spec.fleet import Cluster
from gpufleet.spec.names import TEAM_GROUP_PREFIX

OPEN_TO_INTERNET = "0.0.0.0/0"


def public_cidrs(cluster: Cluster) -> tuple[str, ...]:
    """The CIDRs that reach the public endpoint; () for a private one.
    Sources: https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html.

    Why: docs/tenancy-and-access.md, "Design notes", access.public_cidrs."""
    if cluster.endpoint_access != "PublicAndPrivate":
        return ()
    return cluster.public_cidrs if cluster.public_cidrs is not None else (OPEN_TO_INTERNET,)


def endpoint_open(cluster: Cluster) -> bool:
    """True when the public endpoint admits the whole internet (a /0 prefix, explicit or by omission)."""
    return any(cidr.endswith("/0") for cidr in public_cidrs(cluster))


def endpoint_reach(cluster: Cluster) -> str:
    """One sentence for plan.md: who can reach the Kubernetes API endpoint."""
    if cluster.mode == "Existing":
        return "API endpoint: the existing cluster's, as configured outside gpufleet (not managed here)."
    private = "from the cluster's VPC (private endpoint: nodes, and anything routed into the VPC)"
    if cluster.endpoint_access == "Private":
        return f"API endpoint: private only, reachable {private}."
    cidrs = public_cidrs(cluster)
    if endpoint_open(cluster):
        why = (
            f"acknowledged: {cluster.open_endpoint_reason}"
            if cluster.open_endpoint_reason
            else "NOT acknowledged, `gpufleet check` fails"
        )
        return f"API endpoint: reachable {private} and publicly from the whole internet ({', '.join(cidrs)}; {why})."
    return f"API endpoint: reachable {private} and publicly only from {', '.join(cidrs)}."


# EKS access policies (https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html).
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
EDIT_POLICY = "AmazonEKSEditPolicy"


def team_group(team: str) -> str:
    return TEAM_GROUP_PREFIX + team


def entry_id(principal_arn: str, owner: str) -> str:
    """The logical name of a principal's access entry: the owner and the ARN's account and name (not the list
    position, so reordering the spec replaces nothing).

    Why: docs/tenancy-and-access.md, "Design notes", access.entry_id."""
    parts = re.match(r"arn:[^:]+:iam::([0-9]+):(?:role|user)/(.+)$", principal_arn)
    account, name = parts.groups() if parts else ("", principal_arn)  # the schema admits only ARNs that match
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"access-{owner}-{account}-{slug}"


def association_id(entry: str, policy: str) -> str:
    """The logical name of the association of `policy` with the access entry `entry`."""
    return f"{entry}-{policy.removeprefix('AmazonEKS').removesuffix('Policy').lower()}"


def arn_partition(principal_arn: str) -> str:
    return principal_arn.split(":", 2)[1]
