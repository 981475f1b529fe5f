"""The deploying identity: whoever runs `pulumi up` must be one of cluster.admins.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/identity.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpufleet.preflight.clients import call
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding

_ASSUMED = re.compile(r"^arn:(?P<partition>[^:]+):sts::(?P<account>[0-9]{12}):assumed-role/(?P<name>[^/]+)/[^/]+$")
_IAM = re.compile(
    r"^arn:(?P<partition>[^:]+):iam::(?P<account>[0-9]{12}):(?P<kind>role|user)/(?:[^/]+/)*(?P<name>[^/]+)$"
)


def principal_key(arn: str) -> tuple[str, str, str] | None:
    """(account, role|user, name) of an IAM role or user ARN, or of the role behind an assumed-role session."""
    assumed = _ASSUMED.match(arn)
    if assumed:
        return assumed["account"], "role", assumed["name"]
    iam = _IAM.match(arn)
    if iam:
        return iam["account"], iam["kind"], iam["name"]
    return None


def check_identity(ctx: Context) -> Iterator[AccountFinding]:
    sts = ctx.clients.sts
    if sts is None:
        return
    caller = str(call(sts, "get_caller_identity")["Arn"])
    admins = [a.principal_arn for a in ctx.fleet.cluster.admins]
    key = principal_key(caller)
    if key is not None and any(principal_key(a) == key for a in admins):
        return
    create = ctx.fleet.cluster.mode == "Create"
    consequence = (
        "the cluster is created without creator admin (bootstrapClusterCreatorAdminPermissions false, immutable), so"
        " `pulumi up` could not apply a single Kubernetes resource"
        if create
        else "`pulumi up` reaches the existing cluster only if this identity has an access entry there already"
    )
    yield AccountFinding(
        severity="error" if (create) else "warning",
        node_group=None,
        message=(
            f"the deploying identity {caller} is not one of cluster.admins ({', '.join(admins) or 'none'}):"
            f" {consequence}"
        ),
        hint="run preflight and `pulumi up` as a cluster.admins principal, or add this one to cluster.admins",
        scope="account",
    )
