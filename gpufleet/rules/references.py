"""Rules on names: unique within their section, references that resolve, and EKS's limits on the names gpufleet
composes from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpufleet.base.errors import Issue, did_you_mean
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec import names
from gpufleet.spec.fleet import Fleet


@rule("duplicate-names")
def _duplicate_names(fleet: Fleet) -> Iterator[Issue]:
    lists: list[tuple[str, list[str]]] = [
        ("nodeGroups", [g.name for g in fleet.node_groups]),
        ("teams", [t.name for t in fleet.teams]),
        ("imageSets", [s.name for s in fleet.image_sets]),
    ]
    for section, section_names in lists:
        seen: set[str] = set()
        for i, name in enumerate(section_names):
            if name in seen:
                yield Issue(
                    path=(section, i, "name"),
                    message=f'duplicate name "{name}" in {section}',
                    hint="names identify resources; make each one unique",
                )
            seen.add(name)
    seen_ns: dict[str, str] = {}
    for i, team in enumerate(fleet.teams):
        if team.namespace in seen_ns and seen_ns[team.namespace] != team.name:
            yield Issue(
                path=("teams", i, "namespace"),
                message=f'namespace "{team.namespace}" is already used by team "{seen_ns[team.namespace]}"',
                hint="each team gets its own namespace; its ClusterQueue admits only that one",
            )
        seen_ns.setdefault(team.namespace, team.name)
        counts = Counter(q.node_group for q in team.quotas)
        for j, quota in enumerate(team.quotas):
            if counts[quota.node_group] > 1 and [q.node_group for q in team.quotas].index(quota.node_group) != j:
                yield Issue(
                    path=("teams", i, "quotas", j, "nodeGroup"),
                    message=f'a second quota on node group "{quota.node_group}"',
                    hint="merge the quotas into one entry",
                )
    seen_p: set[str] = set()
    for i, prio in enumerate(fleet.admission.priorities):
        if prio.name in seen_p:
            yield Issue(path=("admission", "priorities", i, "name"), message=f'duplicate priority class "{prio.name}"')
        seen_p.add(prio.name)


@rule("references")
def _references(fleet: Fleet) -> Iterator[Issue]:
    groups = [g.name for g in fleet.node_groups]
    sets = [s.name for s in fleet.image_sets]
    for path, group in each_group(fleet):
        for j, name in enumerate(group.images):
            if name not in sets:
                yield Issue(
                    path=path + ("images", j),
                    message=f'unknown image set "{name}"',
                    hint=did_you_mean(name, sets) or "define it under imageSets",
                )
    for i, team in enumerate(fleet.teams):
        for j, quota in enumerate(team.quotas):
            if quota.node_group not in groups:
                yield Issue(
                    path=("teams", i, "quotas", j, "nodeGroup"),
                    message=f'unknown node group "{quota.node_group}"',
                    hint=did_you_mean(quota.node_group, groups),
                )
        priorities = [p.name for p in fleet.admission.priorities]
        for j, name in enumerate(team.priorities or ()):
            if name not in priorities:
                yield Issue(
                    path=("teams", i, "priorities", j),
                    message=f'unknown priority class "{name}"',
                    hint=did_you_mean(name, priorities) or f"one of admission.priorities: {', '.join(priorities)}",
                )
    for name in fleet.gpu_hour_usd:
        if name not in groups:
            yield Issue(
                path=("cost", "gpuHourUsd", name),
                at_key=True,
                message=f'price for unknown node group "{name}"',
                hint=did_you_mean(name, groups),
            )


@rule("eks-names")
def _eks_names(fleet: Fleet) -> Iterator[Issue]:
    """The node group name prefixes gpufleet composes, `{metadata.name}-{nodeGroups[].name}-` (and
    `{metadata.name}-system-` for the system nodes in mode Create), fit EKS: at most 37 characters, 63 for the name
    minus the 26-character unique suffix (terraform-provider-aws internal/service/eks/node_group.go).

    Why: docs/spec.md, "Design notes", references._eks_names."""
    limit = names.NODE_GROUP_NAME_PREFIX_MAX
    fixed = [names.SYSTEM_GROUP] if fleet.cluster.mode == "Create" else []
    # the longest fleet name that still leaves a one-character group (and the system group) room
    fleet_max = limit - len(names.node_group_name_prefix("", max(fixed + ["x"], key=len)))
    if len(fleet.name) > fleet_max:
        system = " and the system node group's" if fixed else ""
        yield Issue(
            path=("metadata", "name"),
            message=(
                f'fleet name "{fleet.name}" is {len(fleet.name)} characters: the node group name prefixes'
                f" {names.node_group_name_prefix(fleet.name, '<group>')}{system} may be at most {limit} (EKS node"
                f" group names are at most {names.NODE_GROUP_NAME_MAX}, 26 of them the unique suffix)"
            ),
            hint=f"shorten metadata.name to at most {fleet_max} characters",
        )
        return
    for path, group in each_group(fleet):
        prefix = names.node_group_name_prefix(fleet.name, group.name)
        if len(prefix) > limit:
            room = limit - len(names.node_group_name_prefix(fleet.name, ""))
            yield Issue(
                path=(*path, "name"),
                message=(
                    f"node group name prefix {prefix} is {len(prefix)} characters; EKS allows at most {limit} (node"
                    f" group names are at most {names.NODE_GROUP_NAME_MAX}, 26 of them the unique suffix)"
                ),
                hint=f"shorten the node group name to at most {room} characters (or metadata.name)",
            )
