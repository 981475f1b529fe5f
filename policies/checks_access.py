"""Predicates over who can reach and use the cluster: the API endpoint, access entries, team RBAC, network
isolation of team namespaces and Pod Security levels (registered as rules in `gpufleet.policies.rules`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gpufleet.policies.resources import Resource, by_kind, by_type, get, is_unknown
from gpufleet.spec.names import LABEL_TEAM, TAG_OPEN_ENDPOINT_REASON, TEAM_GROUP_PREFIX
from gpufleet.tree.entries import inputs

CLUSTER = "aws:eks/cluster:Cluster"


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
    wide = [c for c in cidrs if isinstance(c, str) and _prefix_zero(c)]
    return wide or None


def _prefix_zero(cidr: str) -> bool:
    """A /0 prefix, however its digits are written: int() reads any script's digits ("٠.٠.٠.٠/٠", which a tree
    edited by hand may hold, is open as written, whatever AWS would make of it) and "/00" as 0."""
    _, slash, prefix = cidr.strip().rpartition("/")
    try:
        return bool(slash) and int(prefix) == 0
    except ValueError:
        return False


def _reason(resource: Resource) -> str | None:
    value = get(inputs(resource), "tags", {})
    value = value.get(TAG_OPEN_ENDPOINT_REASON) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def endpoint_not_open(resource: Resource) -> Iterator[str]:
    cidrs = _open_cidrs(resource)
    if cidrs is not None and _reason(resource) is None:
        yield (
            f"the public API endpoint of cluster {inputs(resource).get('name')} is open to the internet"
            f" ({', '.join(cidrs)})"
        )


def endpoint_open_acknowledged(resource: Resource) -> Iterator[str]:
    cidrs = _open_cidrs(resource)
    reason = _reason(resource)
    if cidrs is not None and reason is not None:
        yield (
            f"the public API endpoint of cluster {inputs(resource).get('name')} is open to the internet"
            f" ({', '.join(cidrs)}), acknowledged: {reason}"
        )


# ---------------------------------------------------------------------------------------------------------------
# Teams: access entries, their policy associations, and RBAC bound to a team's Kubernetes group.

ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
READ_VERBS = frozenset({"get", "list", "watch"})
# Cluster-scoped kinds a team may read cluster-wide (Kueue's queues, cohorts, flavors and priority classes): nothing
# namespaced, so no other team's objects.
CLUSTER_READABLE = {
    "kueue.x-k8s.io": frozenset(
        {
            "clusterqueues",
            "clusterqueues/status",
            "cohorts",
            "cohorts/status",
            "resourceflavors",
            "topologies",
            "workloadpriorityclasses",
        }
    )
}


def _k8s_meta(resource: Resource, key: str) -> Any:
    return get(inputs(resource), f"metadata.{key}")


def team_namespaces(resources: Sequence[Resource]) -> dict[str, Resource]:
    """Team -> its Namespace object (label gpufleet.io/team)."""
    out = {}
    for ns in by_kind(resources, "Namespace"):
        team = (_k8s_meta(ns, "labels") or {}).get(LABEL_TEAM)
        if isinstance(team, str):
            out[team] = ns
    return out


def _entry_team(entry: Resource) -> str | None:
    """The team an access entry belongs to: its gpufleet.io/team tag, or a gpufleet-team-<team> group."""
    tags = inputs(entry).get("tags")
    team = tags.get(LABEL_TEAM) if isinstance(tags, Mapping) else None
    if isinstance(team, str):
        return team
    groups = inputs(entry).get("kubernetesGroups")
    names = (
        [g.removeprefix(TEAM_GROUP_PREFIX) for g in groups if isinstance(g, str) and g.startswith(TEAM_GROUP_PREFIX)]
        if isinstance(groups, list)
        else []
    )
    return names[0] if names else None


def team_has_members(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str, str]]:
    teams_with_entries = {_entry_team(e) for e in by_type(resources, ACCESS_ENTRY)}
    for team, ns in sorted(team_namespaces(resources).items()):
        if team not in teams_with_entries:
            yield (
                ns,
                (
                    f"team {team} (namespace {_k8s_meta(ns, 'name')}) has no members: no access entry belongs to it, so"
                    " nobody can submit its work except cluster admins"
                ),
                f"add teams[].members to team {team}: the IAM roles its people assume",
            )


def _rules_beyond(rules: Any) -> list[str]:
    """What a ClusterRole bound to a team grants beyond reading the cluster-scoped kinds in CLUSTER_READABLE."""
    out = []
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, Mapping):
            continue
        verbs = set(rule.get("verbs") or [])
        if verbs - READ_VERBS:
            out.append(f"verbs {sorted(verbs - READ_VERBS)}")
        if rule.get("nonResourceURLs"):
            out.append("non-resource URLs")
        for group in rule.get("apiGroups") or []:
            allowed = CLUSTER_READABLE.get(group, frozenset())
            extra = sorted(set(rule.get("resources") or []) - allowed)
            if extra:
                out.append(f"{group or 'core'} {extra}")
    return out


def team_access_in_namespace(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str, str]]:
    namespaces = {team: _k8s_meta(ns, "name") for team, ns in team_namespaces(resources).items()}
    teams = {
        str(inputs(e).get("principalArn")): t
        for e in by_type(resources, ACCESS_ENTRY)
        if (t := _entry_team(e)) is not None
    }
    for assoc in by_type(resources, ASSOCIATION):
        args = inputs(assoc)
        team = teams.get(str(args.get("principalArn")))
        if team is None:
            continue
        raw_scope = args.get("accessScope")
        scope: Mapping[str, Any] = raw_scope if isinstance(raw_scope, Mapping) else {}
        raw_namespaces = scope.get("namespaces")
        scoped: list[Any] = raw_namespaces if isinstance(raw_namespaces, list) else []
        own = namespaces.get(team)
        if is_unknown(scope.get("type")) or any(is_unknown(n) for n in scoped):
            continue
        if (
            scope.get("type") != "namespace"
            or not scoped
            or (own is not None and set(scoped) != {own})
            or (own is None and len(scoped) != 1)
        ):
            yield (
                assoc,
                (
                    f"team {team}'s access policy {str(args.get('policyArn')).rsplit('/', 1)[-1]} reaches beyond its"
                    f" namespace (scope {dict(scope)!r})"
                ),
                (
                    "scope the association to the team's namespace only: accessScope {type: namespace, namespaces:"
                    f" [{own or '<team namespace>'}]}}"
                ),
            )
    cluster_roles = {_k8s_meta(r, "name"): r for r in by_kind(resources, "ClusterRole")}
    for binding in by_kind(resources, "RoleBinding") + by_kind(resources, "ClusterRoleBinding"):
        subjects = inputs(binding).get("subjects") or []
        bound = [
            s.get("name", "").removeprefix(TEAM_GROUP_PREFIX)
            for s in subjects
            if isinstance(s, Mapping)
            and s.get("kind") == "Group"
            and str(s.get("name", "")).startswith(TEAM_GROUP_PREFIX)
        ]
        for team in bound:
            kind = inputs(binding).get("kind")
            name = _k8s_meta(binding, "name")
            if kind == "RoleBinding":
                where = _k8s_meta(binding, "namespace")
                if namespaces.get(team) not in (None, where):
                    yield (
                        binding,
                        (
                            f"RoleBinding {where}/{name} gives team {team} access in namespace {where}, not its own"
                            f" ({namespaces[team]})"
                        ),
                        f"bind the team's group only in namespace {namespaces[team]}",
                    )
                # Any role bound by a RoleBinding (a ClusterRole too) acts only in the binding's namespace.
                continue
            role = cluster_roles.get(get(inputs(binding), "roleRef.name"))
            beyond = (
                _rules_beyond(inputs(role).get("rules")) if role is not None else ["a ClusterRole not in this tree"]
            )
            if beyond:
                yield (
                    binding,
                    (
                        f"ClusterRoleBinding {name} gives team {team} cluster-wide access beyond reading Kueue's"
                        f" cluster-scoped kinds: {', '.join(beyond)}"
                    ),
                    (
                        "bind teams cluster-wide only to read-only ClusterRoles over clusterqueues, cohorts,"
                        " resourceflavors, topologies and workloadpriorityclasses; grant everything else with a"
                        " RoleBinding in the team's namespace"
                    ),
                )


# ---------------------------------------------------------------------------------------------------------------
# Team namespaces: network isolation and Pod Security.

ADDON = "aws:eks/addon:Addon"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
PSA_AT_LEAST_BASELINE = ("baseline", "restricted")


def _workload_namespaces(resources: Sequence[Resource]) -> dict[str, Resource]:
    """Namespace name -> Namespace object, for namespaces that hold teams' work: label gpufleet.io/team, or a
    LocalQueue in them."""
    objects = {_k8s_meta(ns, "name"): ns for ns in by_kind(resources, "Namespace")}
    out = {str(_k8s_meta(ns, "name")): ns for ns in team_namespaces(resources).values()}
    for lq in by_kind(resources, "LocalQueue"):
        name = _k8s_meta(lq, "namespace")
        if name in objects:
            out.setdefault(str(name), objects[name])
    return out


def _open_peer(peer: Any) -> str | None:
    """Why an ingress `from` peer admits more than the namespace itself and named namespaces, or None."""
    if not isinstance(peer, Mapping):
        return None
    if "ipBlock" in peer:
        return f"ipBlock {peer['ipBlock'].get('cidr') if isinstance(peer['ipBlock'], Mapping) else '?'}"
    selector = peer.get("namespaceSelector")
    if selector is not None and not (isinstance(selector, Mapping) and selector.get("matchLabels")):
        return "a namespaceSelector that matches more than named namespaces"
    return None


def _denies_by_default(policy: Resource) -> str | None:
    """None when a NetworkPolicy selects every pod of its namespace for Ingress and admits only the namespace's
    own pods and named namespaces; else what is wrong."""
    raw = inputs(policy).get("spec")
    spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    if spec.get("podSelector"):
        return "it does not select every pod"
    if "Ingress" not in (spec.get("policyTypes") or ["Ingress"]):
        return "it does not govern ingress"
    for rule in spec.get("ingress") or []:
        peers = rule.get("from") if isinstance(rule, Mapping) else None
        if not peers:
            return "an ingress rule without `from` admits every source"
        reasons = [r for r in (_open_peer(p) for p in peers) if r]
        if reasons:
            return f"an ingress rule admits {reasons[0]}"
    return None


def team_namespace_default_deny(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str, str]]:
    namespaces = _workload_namespaces(resources)
    if not namespaces:
        return
    for addon in by_type(resources, ADDON):
        if inputs(addon).get("addonName") != "vpc-cni":
            continue
        raw = inputs(addon).get("configurationValues")
        if is_unknown(raw):
            continue
        try:
            config = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            config = {}
        if str(config.get("enableNetworkPolicy", "false")).lower() != "true":
            yield (
                addon,
                (
                    "the VPC CNI add-on does not enable its network policy agent: the teams' NetworkPolicies are"
                    " accepted but not enforced"
                ),
                'set the vpc-cni add-on configurationValues to {"enableNetworkPolicy": "true"}',
            )
    policies = by_kind(resources, "NetworkPolicy")
    for name, ns in sorted(namespaces.items()):
        own = [p for p in policies if _k8s_meta(p, "namespace") == name]
        problems = [why for why in (_denies_by_default(p) for p in own) if why]
        if not own or len(problems) == len(own):
            detail = f" ({problems[0]})" if problems else ""
            yield (
                ns,
                (
                    f"team namespace {name} has no default-deny ingress NetworkPolicy{detail}: any pod in the cluster"
                    " can connect to its pods"
                ),
                (
                    f"add a NetworkPolicy in {name} with podSelector {{}}, policyTypes [Ingress], and ingress only from"
                    " podSelector {} and named namespaces (the monitoring namespace)"
                ),
            )


def workload_namespace_pod_security(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str, str]]:
    for name, ns in sorted(_workload_namespaces(resources).items()):
        level = (_k8s_meta(ns, "labels") or {}).get(PSA_ENFORCE)
        if is_unknown(level) or level in PSA_AT_LEAST_BASELINE:
            continue
        yield (
            ns,
            (
                f"workload namespace {name} enforces Pod Security {level or 'nothing (privileged)'}: a privileged"
                " container there sees every GPU of its node, whatever the device plugin allotted"
            ),
            f"label namespace {name} {PSA_ENFORCE}: baseline (or restricted: teams[].podSecurity)",
        )
