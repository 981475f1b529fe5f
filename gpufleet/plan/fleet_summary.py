"""The fleet-wide summary of a spec with clusters[] for one environment (`gpufleet plan --env ENV`): its stacks in the
order they deploy, the MultiKueue dispatch order, and each team's quota per cluster; then each stack's stage table.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/plan/fleet_summary.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpufleet.plan.manifests import kueue
from gpufleet.plan.parts import render_table
from gpufleet.plan.rollout import build_plan
from gpufleet.spec.fleet import Fleet

ROUND_MINUTES = 5


def dispatch_rounds(workers: Sequence[str], step_size: int) -> list[list[str]]:
    """The workers each round of the Incremental dispatcher nominates anew."""
    return [list(workers[i : i + step_size]) for i in range(0, len(workers), step_size)]


def deploy_order(stacks: Mapping[str, Fleet]) -> list[str]:
    """The stacks of one environment, workers in the spec's order, then the manager."""

    def rank(stack: str) -> tuple[int, int]:
        mk = stacks[stack].multikueue
        assert mk is not None
        names = [m.name for m in mk.members]
        return (mk.role == "Manager", names.index(mk.cluster))

    return sorted(stacks, key=rank)


def summary(environment: str, stacks: Mapping[str, Fleet]) -> str:
    order = deploy_order(stacks)
    manager = stacks[order[-1]]
    mk = manager.multikueue
    assert mk is not None and mk.mirrored is not None
    lines = [
        f"fleet {manager.name}, environment {environment}: {len(order)} clusters, one Pulumi stack each, deployed in"
        " this order (workers, then the manager that dispatches to them)",
        "",
    ]
    rows: list[tuple[str, ...]] = [("#", "stack", "role", "region", "GPU node groups", "GPUs at maxSize")]
    for i, stack in enumerate(order, 1):
        fleet = stacks[stack]
        assert fleet.multikueue is not None
        groups = fleet.node_groups
        rows.append(
            (
                str(i),
                stack,
                fleet.multikueue.role,
                fleet.cluster.region,
                ", ".join(g.name for g in groups) or "-",
                str(sum(kueue.capacity_gpus(g) for g in groups)) if groups else "-",
            )
        )
    lines += _table(rows)
    workers = [w.name for w in mk.workers]
    lines += ["", f"Dispatch (MultiKueue, Incremental dispatcher, stepSize {mk.step_size}):"]
    for n, batch in enumerate(dispatch_rounds(workers, mk.step_size), 1):
        when = "when admitted to the manager" if n == 1 else f"after {ROUND_MINUTES * (n - 1)} minutes unadmitted"
        lines.append(f"- round {n} ({when}): {', '.join(batch)}")
    lines += ["", "GPU quota per team (the workers' are authoritative; the manager's is their sum):", ""]
    by_worker = {w.name: set(w.node_groups) for w in mk.workers}
    rows = [("team", *workers, "manager")]
    for team in mk.mirrored.teams:
        per = [sum(q.gpus for q in team.quotas if q.node_group in by_worker[w]) for w in workers]
        rows.append((team.name, *(str(n) for n in per), str(sum(per))))
    lines += _table(rows)
    for stack in order:
        lines += ["", render_table(build_plan(stacks[stack], stack))]
    return "\n".join(lines)


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
