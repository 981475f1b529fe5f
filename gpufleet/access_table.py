"""The "Access" section of plan.md: who can reach the API endpoint, and a table of every principal gpufleet gives
access to (people through EKS access entries, controllers through EKS Pod Identity), what it may do, and where."""

from __future__ import annotations

from gpufleet import access, stages
from gpufleet.manifests import autoscaler, storage, tenancy
from gpufleet.manifests.telemetry import monitoring_namespace
from gpufleet.spec import Fleet

_TEAM_EDIT = (
    f"edit ({access.EDIT_POLICY}): pods, Jobs, Deployments, Services, ConfigMaps, Secrets; "
    "create and delete the Kueue-managed training kinds ({kinds}); read the team's LocalQueue and Workloads"
)


def _team_kinds() -> str:
    return ", ".join(plural for _, plural in sorted(tenancy.JOB_RESOURCES.values()))


def access_section(fleet: Fleet, through: stages.StageName) -> list[str]:
    admission = stages.included("admission", through)
    lines = ["## Access", "", access.endpoint_reach(fleet.cluster), "", "| principal | may | where |", "|---|---|---|"]
    for admin in fleet.cluster.admins:
        lines.append(f"| `{admin.principal_arn}` (admin) | cluster admin ({access.CLUSTER_ADMIN_POLICY}): everything | the whole cluster |")
    for team in fleet.teams:
        if not team.members:
            lines.append(f"| nobody (team {team.name} has no members) | - | namespace `{team.namespace}` |")
        for member in team.members:
            who = f"`{member.principal_arn}` (team {team.name}, group `{access.team_group(team.name)}`)"
            if admission:
                lines.append(f"| {who} | {_TEAM_EDIT.format(kinds=_team_kinds())} | namespace `{team.namespace}` only |")
                lines.append(f"| {who} | read: {', '.join(tenancy.CLUSTER_READABLE)} | cluster-scoped Kueue objects (no namespaced kind) |")
            else:
                lines.append(f"| {who} | edit ({access.EDIT_POLICY}) | namespace `{team.namespace}` only (created by the admission stage, not in this environment) |")
    if fleet.cluster.autoscaler == "Install":
        lines.append(
            f"| `{autoscaler.NAMESPACE}/{autoscaler.SERVICE_ACCOUNT}` (EKS Pod Identity) | describe node groups and instance types; "
            f"set the desired size of, and terminate instances in, Auto Scaling groups tagged for cluster {fleet.cluster.name} | AWS |"
        )
    cp = fleet.checkpoints
    if cp is not None and stages.included("storage", through):
        for team in fleet.teams:
            lines.append(
                f"| `{team.namespace}/{storage.CHECKPOINT_SERVICE_ACCOUNT}` (EKS Pod Identity) | read, write and delete checkpoints "
                f"| `s3://{cp.bucket}/{storage.team_prefix(team)}` only |"
            )
    if admission and fleet.teams:
        lines += ["", "| team namespace | Pod Security enforced | ingress admitted from (NetworkPolicy `" + tenancy.DEFAULT_DENY + "`) |", "|---|---|---|"]
        for team in fleet.teams:
            lines.append(f"| `{team.namespace}` | {team.pod_security.lower()} | its own pods, namespace `{monitoring_namespace(fleet)}` (EFA traffic is not governed) |")
    return lines
