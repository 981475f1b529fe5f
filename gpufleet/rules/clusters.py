"""clusters[]: what a spec of several clusters must hold together before it is projected onto one spec per cluster
(gpufleet.spec.clusters). Each projection then goes through every rule of a single-cluster fleet.

Why, with sources: docs/multi-cluster.md, "Design notes", gpufleet/rules/clusters.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.base.errors import Issue
from gpufleet.spec.clusters import OWN_FIELDS, is_multi


def spec_issues(data: dict[str, Any]) -> list[Issue]:
    """Every issue of a schema-valid spec's clusters[] (none for a spec without it)."""
    if not is_multi(data):
        multikueue = (data.get("admission") or {}).get("multiKueue")
        if multikueue:
            return [
                Issue(
                    path=("admission", "multiKueue"),
                    at_key=True,
                    message="admission.multiKueue configures the dispatch of several clusters, and the spec has no"
                    " clusters[]",
                    hint="remove it, or describe the manager and its workers in clusters[] (docs/multi-cluster.md)",
                )
            ]
        return []
    entries: list[dict[str, Any]] = data["clusters"]
    issues: list[Issue] = []
    if "nodeGroups" in data:
        issues.append(
            Issue(
                path=("nodeGroups",),
                at_key=True,
                message="a spec with clusters[] lists each worker's node groups under it, not here",
                hint="move each group to clusters[].nodeGroups of the worker that runs it",
            )
        )
    for field in OWN_FIELDS:
        if field in data["cluster"]:
            issues.append(
                Issue(
                    path=("cluster", field),
                    at_key=True,
                    message=f"with clusters[], each cluster gives its own {field} (clusters[].{field});"
                    " cluster holds what they share",
                    hint=f"move it to the clusters[] entry it belongs to: clusters[].{field}",
                )
            )
    managers = [i for i, e in enumerate(entries) if e["role"] == "Manager"]
    if not managers:
        issues.append(
            Issue(
                path=("clusters",),
                at_key=True,
                message="no cluster has role Manager: MultiKueue dispatches from exactly one manager cluster",
                hint="add a small CPU-only cluster with role: Manager (docs/multi-cluster.md)",
            )
        )
    for i in managers[1:]:
        issues.append(
            Issue(
                path=("clusters", i, "role"),
                message=f"a second Manager (clusters[{managers[0]}] is one): a fleet dispatches from exactly one",
                hint="make it a Worker, or describe the second fleet in a spec of its own",
            )
        )
    if not any(e["role"] == "Worker" for e in entries):
        issues.append(
            Issue(
                path=("clusters",),
                at_key=True,
                message="no cluster has role Worker: the manager runs no GPU work, so nothing would run",
                hint="add the GPU clusters with role: Worker and their nodeGroups",
            )
        )
    seen: dict[str, int] = {}
    groups: dict[str, int] = {}
    for i, entry in enumerate(entries):
        name = entry["name"]
        if name in seen:
            issues.append(
                Issue(
                    path=("clusters", i, "name"),
                    message=f'cluster "{name}" is also clusters[{seen[name]}]: one cluster has one role (Kueue does'
                    " not support a manager that is one of its own workers)",
                    hint="give each cluster its own EKS name",
                )
            )
        seen.setdefault(name, i)
        own = entry.get("nodeGroups") or []
        if entry["role"] == "Manager" and own:
            issues.append(
                Issue(
                    path=("clusters", i, "nodeGroups"),
                    at_key=True,
                    message="the Manager runs no GPU work: MultiKueue dispatches every admitted workload to a worker,"
                    " and Kueue does not support a manager that is one of its own workers",
                    hint="move these node groups to a Worker; the manager keeps only its CPU system nodes",
                )
            )
        if entry["role"] == "Worker" and not own:
            issues.append(
                Issue(
                    path=("clusters", i),
                    message=f'Worker "{name}" has no node groups: nothing dispatched to it could run',
                    hint="give it nodeGroups, or remove it",
                )
            )
        for j, group in enumerate(own):
            if group["name"] in groups:
                issues.append(
                    Issue(
                        path=("clusters", i, "nodeGroups", j, "name"),
                        message=f'node group "{group["name"]}" is also in clusters[{groups[group["name"]]}]: node'
                        " group names are unique across the fleet (a team's quota names one)",
                        hint=f"name it for its region, e.g. {group['name']}-{entry['region']}",
                    )
                )
            elif entry["role"] == "Worker":
                groups[group["name"]] = i
    for t, team in enumerate(data.get("teams") or []):
        for q, quota in enumerate(team["quotas"]):
            if quota["nodeGroup"] not in groups:
                issues.append(
                    Issue(
                        path=("teams", t, "quotas", q, "nodeGroup"),
                        message=f'no worker has a node group "{quota["nodeGroup"]}"',
                        hint="name a node group of clusters[].nodeGroups of a Worker",
                    )
                )
    return issues
