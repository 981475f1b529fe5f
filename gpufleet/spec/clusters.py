"""clusters[]: one spec, several EKS clusters, dispatched by Kueue's MultiKueue (docs/multi-cluster.md).

Why, with sources: docs/multi-cluster.md, "Design notes", gpufleet/spec/clusters.py.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpufleet.base.errors import Path
from gpufleet.spec.fields import build
from gpufleet.spec.fleet import ClusterRole, Fleet, Member, MultiKueue, NodeGroup
from gpufleet.spec.schema import with_defaults

# What clusters[] entries give of `cluster` (the rest is shared).
OWN_FIELDS = ("name", "region", "network")
# MultiKueueConfig.spec.clusters holds at most 20 (kueue.x-k8s.io_multikueueconfigs.yaml maxItems @ v0.19.2).
MAX_WORKERS = 20
STACK_SEPARATOR = "."


def is_multi(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("clusters"), list)


def stack_name(environment: str, cluster: str) -> str:
    """The Pulumi stack of one cluster in one environment."""
    return f"{environment}{STACK_SEPARATOR}{cluster}"


def split_stack(stack: str) -> tuple[str, str | None]:
    """(environment, cluster) of a stack name; cluster None for a single-cluster spec's stack (the environment)."""
    environment, _, cluster = stack.partition(STACK_SEPARATOR)
    return environment, cluster or None


@dataclass(frozen=True, slots=True, kw_only=True)
class Projection:
    """One cluster's spec, and how a path of it maps back to the spec the user wrote."""

    index: int  # in clusters[]
    name: str
    role: ClusterRole
    data: dict[str, Any]
    # per team index: the quota indices in the spec of the projected quotas, in order
    quotas: Mapping[int, tuple[int, ...]]

    def source_path(self, path: Path) -> Path:
        """The spec path of a path of the projected spec."""
        if path[:1] == ("nodeGroups",):
            return ("clusters", self.index, *path)
        if path[:1] == ("cluster",) and len(path) > 1 and path[1] in OWN_FIELDS:
            return ("clusters", self.index, *path[1:])
        if path[:1] == ("teams",) and len(path) > 3 and path[2] == "quotas" and isinstance(path[3], int):
            kept = self.quotas.get(int(path[1]), ())
            if path[3] < len(kept):
                return (*path[:3], kept[path[3]], *path[4:])
        return path


def _groups(entry: Mapping[str, Any]) -> list[Any]:
    groups = entry.get("nodeGroups")
    return groups if isinstance(groups, list) else []


def project(data: dict[str, Any]) -> list[Projection]:
    """Each cluster's spec (schema-valid data with clusters[]).

    Why: docs/multi-cluster.md, "Design notes", clusters.project."""
    entries = data["clusters"]
    workers_groups = [g for e in entries if e["role"] == "Worker" for g in _groups(e)]
    out = []
    for index, entry in enumerate(entries):
        projected = {k: copy.deepcopy(v) for k, v in data.items() if k != "clusters"}
        projected["cluster"] = {**projected["cluster"], **{k: copy.deepcopy(entry[k]) for k in OWN_FIELDS}}
        own = {g["name"] for g in _groups(entry)}
        quotas: dict[int, tuple[int, ...]] = {}
        if entry["role"] == "Manager":
            projected["nodeGroups"] = copy.deepcopy(workers_groups)
        else:
            projected["nodeGroups"] = copy.deepcopy(_groups(entry))
            teams = projected.get("teams") or []
            for t, team in enumerate(teams):
                kept = tuple(q for q, quota in enumerate(team["quotas"]) if quota["nodeGroup"] in own)
                quotas[t] = kept
                team["quotas"] = [team["quotas"][q] for q in kept]
            prices = (projected.get("cost") or {}).get("gpuHourUsd")
            if isinstance(prices, dict):  # priced per node group: the worker's own
                projected["cost"]["gpuHourUsd"] = {k: v for k, v in prices.items() if k in own}
        out.append(Projection(index=index, name=entry["name"], role=entry["role"], data=projected, quotas=quotas))
    return out


def members(data: Mapping[str, Any]) -> tuple[Member, ...]:
    return tuple(build(Member, e) for e in data["clusters"])


def fleet_of(
    projection: Projection,
    fleet: Fleet,
    data: Mapping[str, Any],
    stacks: Mapping[str, str],
    dispatched: tuple[NodeGroup, ...] | None = None,
) -> Fleet:
    """The cluster's Fleet from the model of its projection: its environments renamed to their stacks (`stacks`:
    environment -> stack), and its place among the clusters.

    Why: docs/multi-cluster.md, "Design notes", clusters.fleet_of."""
    multikueue = MultiKueue(
        cluster=projection.name,
        role=projection.role,
        members=members(data),
        step_size=int(with_defaults({"admission": data.get("admission", {})})["admission"]["multiKueue"]["stepSize"]),
        dispatched=fleet.node_groups if dispatched is None else dispatched,
    )
    environments = tuple(replace(e, name=stacks[e.name]) for e in fleet.environments if e.name in stacks)
    fleet = replace(fleet, environments=environments)
    if projection.role == "Manager":
        mirrored = replace(fleet, multikueue=multikueue)
        multikueue = replace(multikueue, mirrored=mirrored)
        return replace(
            fleet,
            node_groups=(),
            teams=tuple(replace(t, quotas=()) for t in fleet.teams),
            gpu_hour_usd={},
            multikueue=multikueue,
        )
    return replace(fleet, multikueue=multikueue)
