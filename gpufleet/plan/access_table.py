"""The "Access" section of plan.md (laid out by gpufleet/templates/_plan-access.md.j2): who can reach the API
endpoint, and every principal gpufleet gives access to (people through EKS access entries, controllers through EKS
Pod Identity), what it may do, and where."""

from __future__ import annotations

from typing import Any

from gpufleet.facts import stages
from gpufleet.plan.builders import provisioners
from gpufleet.plan.manifests import autoscaler, storage, tenancy
from gpufleet.plan.manifests.telemetry import monitoring_namespace
from gpufleet.spec import access, defaults
from gpufleet.spec.fleet import Fleet

_TEAM_EDIT = (
    f"edit ({access.EDIT_POLICY}): pods, Jobs, Deployments, Services, ConfigMaps, Secrets; "
    "create and delete the Kueue-managed job kinds the fleet installs ({kinds}){scaling}; read the team's "
    "LocalQueue and "
    "Workloads. "
    "Refused at admission (gpufleet.plan.manifests.tenant_policies): DaemonSets, changing or deleting gpufleet's "
    "objects "
    "(NetworkPolicies, LocalQueues, ServiceAccounts, ConfigMaps, PersistentVolumeClaims labelled "
    "app.kubernetes.io/managed-by: gpufleet), "
    "NetworkPolicies naming peers outside the namespace, controller ownerReferences to Kueue-managed kinds, "
    "ReplicaSets and DaemonSets, "
    "Services with externalIPs"
)


def _team_kinds(fleet: Fleet) -> str:
    return ", ".join(plural for _, plural in sorted(tenancy.job_resources(fleet))) or "none installed"


def access_values(fleet: Fleet, through: stages.StageName) -> dict[str, Any]:
    """The values of _plan-access.md.j2 for one environment deployed through `through`."""
    cp = fleet.checkpoints
    return {
        "endpoint": access.endpoint_reach(fleet.cluster),
        "admins": [admin.principal_arn for admin in fleet.cluster.admins],
        "teams": [
            {
                "name": team.name,
                "namespace": team.namespace,
                "members": [member.principal_arn for member in team.members],
                "group": access.team_group(team.name),
                "pod_security": team.pod_security.lower(),
                "checkpoint_prefix": storage.team_prefix(team),
                "priorities": list(defaults.team_priorities(fleet, team)),
                "service_types": ["ClusterIP", *team.service_types],
            }
            for team in fleet.teams
        ],
        "admission": stages.included("admission", through),
        "team_edit": _TEAM_EDIT.format(
            kinds=_team_kinds(fleet),
            scaling=" and KEDA ScaledObjects (scaledobjects.keda.sh)" if tenancy.scaling_resources(fleet) else "",
        ),
        "cluster_readable": list(tenancy.CLUSTER_READABLE),
        "cluster_name": fleet.cluster.name,
        "cluster_admin_policy": access.CLUSTER_ADMIN_POLICY,
        "edit_policy": access.EDIT_POLICY,
        "autoscaler": f"{autoscaler.NAMESPACE}/{autoscaler.SERVICE_ACCOUNT}"
        if fleet.cluster.autoscaler == "Install"
        else None,
        "controllers": [a for p in provisioners.used(fleet) if (a := p.access(fleet)) is not None],
        "checkpoint_bucket": cp.bucket if cp is not None and stages.included("storage", through) else None,
        "checkpoint_service_account": storage.CHECKPOINT_SERVICE_ACCOUNT,
        "default_deny": tenancy.DEFAULT_DENY,
        "default_deny_egress": tenancy.DEFAULT_DENY_EGRESS,
        "monitoring_namespace": monitoring_namespace(fleet),
    }
