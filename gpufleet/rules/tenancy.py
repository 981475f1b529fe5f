"""Rules on the teams' quotas and on admission: what a quota can hold, cohorts for borrowing and lending, Kueue's
preemption settings, priorities and topology-aware placement.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue
from gpufleet.facts import catalog
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec import cold_start
from gpufleet.spec.deployed import stage_used
from gpufleet.spec.fleet import Fleet, NodeGroup
from gpufleet.spec.names import RESERVED_NAMESPACES


@rule("quota-fits-node-group")
def _quota_fits(fleet: Fleet) -> Iterator[Issue]:
    by_name: dict[str, NodeGroup] = {}
    for g in fleet.node_groups:
        by_name.setdefault(g.name, g)  # a second group of the same name is reported by duplicate-names
    for i, team in enumerate(fleet.teams):
        for j, quota in enumerate(team.quotas):
            if quota.lending_limit is not None and quota.lending_limit > quota.gpus:
                yield Issue(
                    path=("teams", i, "quotas", j, "lendingLimit"),
                    message=f"lendingLimit {quota.lending_limit} is more than the nominal quota of {quota.gpus} GPUs",
                    hint=f"a team can lend at most what it owns: set lendingLimit to {quota.gpus} or less",
                )
            group = by_name.get(quota.node_group)
            info = catalog.lookup(group.instance_type) if group else None
            if group is None or info is None:
                continue
            capacity = group.max_size * info.gpu_count
            if quota.gpus > capacity:
                yield Issue(
                    path=("teams", i, "quotas", j, "gpus"),
                    message=(
                        f'{quota.gpus} GPUs is more than node group "{group.name}" can ever hold (maxSize'
                        f" {group.max_size} x {info.gpu_count} GPU(s) per {group.instance_type} = {capacity})"
                    ),
                    hint=f"lower the quota to at most {capacity}, or raise the group's maxSize",
                )


@rule("limits-need-cohort")
def _limits_need_cohort(fleet: Fleet) -> Iterator[Issue]:
    # Kueue: borrowingLimit and lendingLimit must be null when the ClusterQueue has no cohort.
    for i, team in enumerate(fleet.teams):
        if team.cohort is not None:
            continue
        for j, quota in enumerate(team.quotas):
            for field, limit in (("borrowingLimit", quota.borrowing_limit), ("lendingLimit", quota.lending_limit)):
                if limit is not None:
                    yield Issue(
                        path=("teams", i, "quotas", j, field),
                        at_key=True,
                        message=f'{field} needs a cohort, but team "{team.name}" has none',
                        hint=(
                            "set teams[].cohort, or remove the limit (without a cohort there is nothing to borrow from"
                            " or lend to)"
                        ),
                    )


@rule("admission")
def _admission(fleet: Fleet) -> Iterator[Issue]:
    if not stage_used(fleet, "admission"):
        return
    adm = fleet.admission
    derived, slowest = cold_start.default_timeout_seconds(fleet)
    if adm.pods_ready_timeout_seconds is not None and adm.pods_ready_timeout_seconds < derived:
        yield Issue(
            path=("admission", "podsReadyTimeoutSeconds"),
            severity="warning",
            message=(
                f"{adm.pods_ready_timeout_seconds}s is shorter than a cold start of node group {slowest} (about"
                f" {derived}s with margin: node boot and join, image pulls, GPU Operator operands, the pull a pod does"
                " itself and, on an Inference group, the weight load and warm-up before its readiness probe passes):"
                " a workload that must scale the group up is evicted before its pods are ready, and deactivated after"
                f" {adm.backoff_limit_count} requeues"
            ),
            hint=f"remove podsReadyTimeoutSeconds (the default is {derived}s), or set at least {derived}",
        )
    if adm.reclaim_within_cohort == "Never" and adm.borrow_within_cohort != "Never":
        yield Issue(
            path=("admission", "preemption", "borrowWithinCohort"),
            message=(
                f"borrowWithinCohort {adm.borrow_within_cohort} needs reclaimWithinCohort other than Never (Kueue"
                " rejects the ClusterQueue otherwise)"
            ),
            hint="set reclaimWithinCohort: LowerPriority or Any, or borrowWithinCohort: Never",
        )
    protected = [p for p in adm.priorities if not p.preemptible]
    for i, prio in enumerate(adm.priorities):
        above = [p.name for p in protected if prio.preemptible and prio.value >= p.value]
        if above:
            yield Issue(
                path=("admission", "priorities", i, "value"),
                message=(
                    f'preemptible class "{prio.name}" ({prio.value}) ranks at or above non-preemptible "{above[0]}": it'
                    " could preempt it"
                ),
                hint="give every non-preemptible class a higher value than every preemptible one",
            )
    for i, team in enumerate(fleet.teams):
        if team.namespace in RESERVED_NAMESPACES or team.namespace.startswith("kube-"):
            yield Issue(
                path=("teams", i, "namespace"),
                message=f'team namespace "{team.namespace}" is a system namespace',
                hint="give the team its own namespace (teams[].namespace; omitted, it is the team name)",
            )
    for path, group in each_group(fleet):
        if (
            group.topology.placement not in (None, "None")
            and group.instance_type not in catalog.TOPOLOGY_INSTANCE_TYPES
            and catalog.lookup(group.instance_type)
        ):
            yield Issue(
                path=path + ("topology", "placement"),
                message=(
                    f"topology-aware placement needs the EKS network topology labels, which {group.instance_type} nodes"
                    " do not get (Kueue would find no capacity)"
                ),
                hint=(
                    "set placement: None, or use an instance type EC2 reports topology for (p4d, p5, p5e, p5en, p6,"
                    " g6e)"
                ),
            )
