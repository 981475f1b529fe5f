"""May the submitter create this workload? The API server's authorization, the first gate a manifest meets, as the
fleet's EKS access entries and team RBAC grant it (`gpufleet explain --as ARN`).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/authorization.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.base.errors import Path
from gpufleet.facts import stages
from gpufleet.plan.manifests import kueue, tenancy
from gpufleet.spec import access
from gpufleet.spec.fleet import Fleet

_IAM = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):iam::(?P<account>\d{12}):(?P<kind>role|user)/(?:[\w+=,.@/-]*/)?(?P<name>[\w+=,.@-]+)",
    re.ASCII,  # IAM names and account IDs are ASCII: \w and \d must not admit other scripts' letters and digits
)
_SESSION = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sts::(?P<account>\d{12}):assumed-role/(?P<name>[\w+=,.@-]+)/[\w+=,.@-]+", re.ASCII
)
# Kinds granted by the namespace-scoped AmazonEKSEditPolicy (Kubernetes' `edit` role for built-in kinds).
EDIT_POLICY_KINDS = frozenset({"Pod", "Job", "Deployment", "StatefulSet", "DaemonSet"})
# What the documented examples put beside their workloads, granted too (the edit policy's Services, ConfigMaps and
# Secrets; KEDA's ScaledObject through the team Role where the fleet installs KEDA): not workloads to submit.
SUPPORTING_KINDS = frozenset({"Service", "ConfigMap", "Secret", "ScaledObject"})


class PrincipalError(ValueError):
    """An `--as` value that is not an IAM role, user or assumed-role session ARN."""


@dataclass(frozen=True, slots=True)
class Identity:
    """An IAM principal as EKS sees it: partition, account, role or user, and name (role path dropped)."""

    partition: str
    account: str
    kind: str
    name: str


def identity(arn: str) -> Identity:
    m = _IAM.fullmatch(arn)
    if m:
        return Identity(m["partition"], m["account"], m["kind"], m["name"])
    m = _SESSION.fullmatch(arn)
    if m:
        return Identity(m["partition"], m["account"], "role", m["name"])
    raise PrincipalError(
        f"{arn!r} is not an IAM role, user or assumed-role ARN (arn:aws:iam::<account>:role/<name>, "
        "arn:aws:iam::<account>:user/<name> or arn:aws:sts::<account>:assumed-role/<name>/<session>)"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    message: str
    fix: str
    spec_path: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """None refusal and None note: the principal may create the workload."""

    refusal: Refusal | None = None
    note: str | None = None


def team_kinds(fleet: Fleet) -> frozenset[str]:
    """What a team member may create in the team's namespace: the edit policy's kinds, plus the custom job kinds the
    fleet installs, which the team Role grants (gpufleet.plan.manifests.tenancy.team_role)."""
    scaling = {"ScaledObject"} if tenancy.scaling_resources(fleet) else set()
    return EDIT_POLICY_KINDS | {"Service", "ConfigMap", "Secret"} | set(kueue.served_kinds(fleet)) | scaling


def team_member(fleet: Fleet, arn: str) -> bool:
    """Whether `arn` is in a team's Kubernetes group (the group the tenant admission policies match)."""
    who = identity(arn)
    return any(identity(m.principal_arn) == who for t in fleet.teams for m in t.members)


def may_create(fleet: Fleet, through: stages.StageName, arn: str, kind: str, namespace: str) -> Decision:
    """Whether `arn` may create a `kind` in `namespace` on the fleet of this environment (raises PrincipalError)."""
    who = identity(arn)
    if any(identity(a.principal_arn) == who for a in fleet.cluster.admins):
        return Decision()
    owner = next(
        ((i, t) for i, t in enumerate(fleet.teams) if any(identity(m.principal_arn) == who for m in t.members)), None
    )
    by_namespace = next(((i, t) for i, t in enumerate(fleet.teams) if t.namespace == namespace), None)
    # What the spec names: the member's own ARN (with its role path), else the role a session came from.
    spec_arn = (
        next((m.principal_arn for m in owner[1].members if identity(m.principal_arn) == who), arn)
        if owner
        else f"arn:{who.partition}:iam::{who.account}:{who.kind}/{who.name}"
    )
    add_to = (
        (f"add {spec_arn} to teams[{by_namespace[1].name}].members", ("teams", by_namespace[0], "members"))
        if by_namespace
        else ("submit it in a team's namespace", None)
    )
    if owner is None:
        if fleet.cluster.mode == "Existing":
            return Decision(
                note=(
                    f"{arn} has no access entry in the spec; the existing cluster {fleet.cluster.name} may grant access"
                    " outside gpufleet (other access entries, aws-auth), which explain cannot see"
                )
            )
        return Decision(
            refusal=Refusal(
                message=(
                    f"{arn} has no EKS access entry on cluster {fleet.cluster.name} (authenticationMode API): the API"
                    " server refuses the request (Unauthorized)"
                ),
                fix=add_to[0] + ", or to cluster.admins",
                spec_path=add_to[1],
            )
        )
    index, team = owner
    group = access.team_group(team.name)
    if namespace != team.namespace:
        return Decision(
            refusal=Refusal(
                message=(
                    f"{arn} (team {team.name}, group {group}) may create workloads only in namespace {team.namespace}; "
                    f"the {kind} is in namespace {namespace}, where the API server forbids it (Forbidden)"
                ),
                fix=f"submit it in namespace {team.namespace}"
                + (
                    f", or move {spec_arn} to teams[{by_namespace[1].name}].members (one access entry per principal)"
                    if by_namespace
                    else ""
                ),
                spec_path=("teams", index, "members"),
            )
        )
    if not stages.included("admission", through):
        return Decision(
            refusal=Refusal(
                message=(
                    f"namespace {namespace} does not exist in this environment: the admission stage creates it (and"
                    f" team {team.name}'s Role), and this environment stops before it"
                ),
                fix="roll this environment through the admission stage (environments.<env>.through)",
            )
        )
    granted = team_kinds(fleet)
    if kind not in granted:
        return Decision(
            refusal=Refusal(
                message=(
                    f"{arn} (team {team.name}) may not create {kind}: neither {access.EDIT_POLICY} nor the Role"
                    f" {tenancy.TEAM_ROLE} grants it"
                ),
                fix=f"submit one of {', '.join(sorted(granted - SUPPORTING_KINDS))}, or ask a cluster admin",
            )
        )
    return Decision()
