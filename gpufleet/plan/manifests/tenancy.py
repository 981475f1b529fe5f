"""What a team may do in the cluster beyond the managed EKS edit policy, as plain RBAC objects bound to the
Kubernetes group of the team's access entries (`gpufleet-team-<team>`, see gpufleet.plan.builders.access_entries).

Why, with sources: docs/tenancy-and-access.md, "Design notes", gpufleet/plan/manifests/tenancy.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.plan.manifests import inference, kueue
from gpufleet.spec import access
from gpufleet.spec.devices import device_managing
from gpufleet.spec.fleet import Fleet, Team
from gpufleet.spec.names import LABEL_MANAGED_BY, LABEL_TEAM

RBAC = "rbac.authorization.k8s.io/v1"
LABEL_NAMESPACE_NAME = kueue.LABEL_NAMESPACE_NAME  # set by the API server on every namespace
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "get", "list", "patch", "update", "watch"]
TEAM_ROLE = "gpufleet-team"
QUEUE_VIEWER = "gpufleet-team-queue-viewer"

# Resources of the Kueue job integrations the edit policy does not cover: the custom job kinds the fleet installs
# (kueue.installed_frameworks; group and plural from each CRD's spec.names).
# Why: docs/tenancy-and-access.md, "Design notes", tenancy.CLUSTER_READABLE.
CLUSTER_READABLE = [
    "clusterqueues",
    "clusterqueues/status",
    "cohorts",
    "cohorts/status",
    "resourceflavors",
    "topologies",
    "workloadpriorityclasses",
]


def _meta(name: str, namespace: str | None = None, team: str | None = None) -> dict[str, Any]:
    labels = {**LABEL_MANAGED_BY, **({LABEL_TEAM: team} if team else {})}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _group_subject(team: Team) -> list[dict[str, str]]:
    return [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": access.team_group(team.name)}]


def job_resources(fleet: Fleet) -> list[tuple[str, str]]:
    """(API group, plural) of every custom job kind the team Role grants: exactly the kinds the fleet installs."""
    return [kueue.RESOURCES[f][:2] for f in kueue.installed_frameworks(fleet)]


# KEDA's ScaledObject (group keda.sh, plural scaledobjects: kedacore/charts keda/templates/crds/
# crd-scaledobjects.yaml @ keda-2.20.2), which docs/inference.md's recipe and docs/examples/vllm.yaml and
# lws-inference.yaml have team members write beside their servers. EKS access policies cover built-in kinds only.
SCALED_OBJECT = ("keda.sh", "scaledobjects")


def scaling_resources(fleet: Fleet) -> list[tuple[str, str]]:
    """(API group, plural) of the autoscaling kinds the team Role grants: KEDA's, where the fleet installs it (the
    telemetry stage, for a fleet with an Inference group)."""
    return [SCALED_OBJECT] if inference.inference_groups(fleet) else []


# devices DRA: reading the ResourceClaimTemplates and claims in a team namespace needs a rule (EKS access
# policies cover built-in kinds only).
DRA_GROUP = "resource.k8s.io"
DRA_READABLE = ("resourceclaims", "resourceclaims/status", "resourceclaimtemplates")


def claims_devices(fleet: Fleet, team: Team) -> bool:
    """The team has quota on a group whose pods claim their devices (devices DRA)."""
    return any(device_managing(fleet.node_group(q.node_group)).claims for q in team.quotas)


def team_role(fleet: Fleet, team: Team) -> dict[str, Any]:
    """In the team's namespace: read its LocalQueue and Workloads, run the Kueue-managed job kinds the fleet serves,
    and scale its servers with KEDA where the fleet installs it."""
    groups: dict[str, list[str]] = {}
    for group, plural in job_resources(fleet) + scaling_resources(fleet):
        groups.setdefault(group, []).append(plural)
    rules = [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["localqueues", "localqueues/status", "workloads", "workloads/status"],
            "verbs": READ,
        }
    ]
    rules += [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": WRITE}
        for group, plurals in sorted(groups.items())
    ]
    if claims_devices(fleet, team):
        rules.append({"apiGroups": [DRA_GROUP], "resources": list(DRA_READABLE), "verbs": READ})
    return {"apiVersion": RBAC, "kind": "Role", "metadata": _meta(TEAM_ROLE, team.namespace, team.name), "rules": rules}


def team_role_binding(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": _meta(access.team_group(team.name), team.namespace, team.name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TEAM_ROLE},
        "subjects": _group_subject(team),
    }


def queue_viewer_role() -> dict[str, Any]:
    """Read-only, cluster-scoped Kueue kinds only (one ClusterRole for every team)."""
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": _meta(QUEUE_VIEWER),
        "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": CLUSTER_READABLE, "verbs": READ}],
    }


def queue_viewer_binding(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(f"{access.team_group(team.name)}-queue-viewer", team=team.name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": QUEUE_VIEWER},
        "subjects": _group_subject(team),
    }


DEFAULT_DENY = "gpufleet-default-deny-ingress"


def default_deny_ingress(team: Team, monitoring_namespace: str) -> dict[str, Any]:
    """Every pod of the team's namespace accepts connections only from pods of the same namespace (distributed
    jobs talk pod to pod: rendezvous, NCCL bootstrap, parameter servers) and from the monitoring namespace (the
    Prometheus scrapers).

    Why: docs/tenancy-and-access.md, "Design notes", tenancy.default_deny_ingress."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(DEFAULT_DENY, team.namespace, team.name),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"podSelector": {}}]},
                {"from": [{"namespaceSelector": {"matchLabels": {LABEL_NAMESPACE_NAME: monitoring_namespace}}}]},
            ],
        },
    }


DEFAULT_DENY_EGRESS = "gpufleet-default-deny-egress"
# The EKS Pod Identity agent's link-local address and port (EKS user guide "Set up the Amazon EKS Pod Identity
# Agent": 169.254.170.23, port 80), where the checkpoint writer's SDK fetches its credentials.
POD_IDENTITY_AGENT = "169.254.170.23/32"
# What a team's pods may reach outside their namespace: HTTPS anywhere (the API server, S3 and the checkpoint bucket,
# STS, model hubs, package indexes), DNS on CoreDNS, the Pod Identity agent.
# Why: docs/tenancy-and-access.md, "Design notes", tenancy.HTTPS.
HTTPS = 443


def default_deny_egress(team: Team) -> dict[str, Any]:
    """Every pod of the team's namespace connects only to pods of the same namespace (any port), to DNS (53),
    to the Pod Identity agent (80) and to TCP 443 anywhere.

    Why: docs/tenancy-and-access.md, "Design notes", tenancy.default_deny_egress."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(DEFAULT_DENY_EGRESS, team.namespace, team.name),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"podSelector": {}}]},
                # DNS to any address: pods resolve through the kube-dns Service's ClusterIP, which the network policy
                # agent sees before kube-proxy translates it to a CoreDNS pod.
                {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
                {"to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}], "ports": [{"protocol": "TCP", "port": 80}]},
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": HTTPS}]},
            ],
        },
    }


def default_service_account(team: Team) -> dict[str, Any]:
    """The namespace's `default` ServiceAccount without an automounted token: a pod that names no ServiceAccount
    gets no API credentials (EKS Best Practices Guide, security: "Disable auto-mounting of service account
    tokens"); a pod that needs them names one, or sets automountServiceAccountToken itself."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta("default", team.namespace, team.name),
        "automountServiceAccountToken": False,
    }
