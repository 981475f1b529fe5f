"""Predicates over who can reach and use the cluster: the API endpoint, access entries, team RBAC, network
isolation of team namespaces and Pod Security levels (registered as rules in `policies.rules`)."""

from __future__ import annotations

from typing import Any, Iterator

from gpufleet.entries import inputs
from policies.resources import Resource, get, is_unknown

CLUSTER = "aws:eks/cluster:Cluster"
# = gpufleet.access.TAG_OPEN_ENDPOINT_REASON: the cluster tag that records publicEndpoint.acknowledgeOpenToInternet.
TAG_OPEN_ENDPOINT_REASON = "gpufleet.io/open-endpoint-reason"


def _open_cidrs(resource: Resource) -> list[str] | None:
    """The CIDRs that open a cluster's public endpoint to the internet; None when it is not open (or unknown).

    EKS defaults endpointPublicAccess to true and publicAccessCidrs to 0.0.0.0/0
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html), so a missing value is open."""
    if resource.get("type") != CLUSTER:
        return None
    vpc = inputs(resource).get("vpcConfig")
    vpc = vpc if isinstance(vpc, dict) else {}
    public = vpc.get("endpointPublicAccess", True)
    if public is False or is_unknown(public) or (isinstance(public, str) and public.lower() == "false"):
        return None
    cidrs: Any = vpc.get("publicAccessCidrs")
    if cidrs is None:
        return ["0.0.0.0/0 (EKS's default)"]
    if not isinstance(cidrs, list) or any(is_unknown(c) for c in cidrs):
        return None
    wide = [c for c in cidrs if isinstance(c, str) and c.strip().endswith("/0")]
    return wide or None


def _reason(resource: Resource) -> str | None:
    value = get(inputs(resource), "tags", {})
    value = value.get(TAG_OPEN_ENDPOINT_REASON) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def endpoint_not_open(resource: Resource) -> Iterator[str]:
    cidrs = _open_cidrs(resource)
    if cidrs is not None and _reason(resource) is None:
        yield f"the public API endpoint of cluster {inputs(resource).get('name')} is open to the internet ({', '.join(cidrs)})"


def endpoint_open_acknowledged(resource: Resource) -> Iterator[str]:
    cidrs = _open_cidrs(resource)
    reason = _reason(resource)
    if cidrs is not None and reason is not None:
        yield f"the public API endpoint of cluster {inputs(resource).get('name')} is open to the internet ({', '.join(cidrs)}), acknowledged: {reason}"
