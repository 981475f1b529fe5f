"""Render a `gpufleet.review.impact.Report` as plain text (terminal, CI log) or Markdown (a pull request comment,
laid out by gpufleet/templates/diff-comment.md.j2)."""

from __future__ import annotations

from gpufleet.base.render import render
from gpufleet.facts import pricing
from gpufleet.review.impact import Change, FileSystemCost, GroupCost, NodeImpact, Report

# The symbols `pulumi preview` prints for each operation.
_SYMBOL = {"add": "+", "remove": "-", "update": "~", "replace": "+-"}
_NODE_WORDS = {
    "replace": "REPLACED: a new node group is created and the old one drained and deleted; every node is terminated",
    "roll": "ROLLED: every node is replaced, maxUnavailable at a time (pods are evicted)",
    "remove": "REMOVED: its nodes are drained and terminated",
}
# A Karpenter NodePool's nodes (gpufleet.review.impact, NODE_POOL): the EC2NodeClass and NodePool are patched in
# place; Karpenter replaces the nodes that drifted under the pool's disruption budgets.
_POOL_WORDS = {
    "drift": "drifts: Karpenter replaces its nodes",
    "remove": "REMOVED: Karpenter drains and terminates its nodes",
}


# What the fleet line counts and what it leaves out: a delta of the GPU node groups, Karpenter pools and FSx for
# Lustre file systems only.
LEAVES_OUT = (
    "GPU node groups, Karpenter pools and FSx for Lustre file systems only: their nodes at the cost stage's prices or"
    " the on-demand list, warm pools and reservations, and each file system's provisioned capacity (the same at every"
    " size); not counted: the EKS control plane, the system nodes, volumes of running nodes, S3 storage, logs and data"
    " transfer"
)


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.0f}"


def _delta(old: float | None, new: float | None) -> str:
    if old is None or new is None:
        return "unknown"
    d = new - old
    return "$0" if abs(d) < 0.5 else f"{'+' if d > 0 else '-'}${abs(d):,.0f}"


def _totals(costs: tuple[GroupCost, ...], storage: tuple[FileSystemCost, ...], which: str) -> float | None:
    values = [c.monthly(c.idle_size if which == "min" else c.max_size) for c in costs] + [s.monthly for s in storage]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _fleet_total(report: Report, which: str) -> str:
    """The fleet's monthly cost at every group's minSize or maxSize, file systems included: before -> after
    (change)."""
    old = _totals(report.cost_old, report.storage_old, which)
    new = _totals(report.cost_new, report.storage_new, which)
    return f"{_usd(old)} -> {_usd(new)} ({_delta(old, new)})"


def _storage_rows(report: Report) -> list[tuple[str, str, str, str, str]]:
    """Each FSx for Lustre file system that is new, gone or resized: name, before, after, and its monthly change
    at minSize and at maxSize (the same: capacity is billed whatever the nodes do)."""
    old = {c.id: c for c in report.storage_old}
    new = {c.id: c for c in report.storage_new}
    rows = []
    for rid in sorted(set(old) | set(new)):
        a, b = old.get(rid), new.get(rid)
        if a == b:
            continue
        change = _delta(a.monthly if a else 0.0, b.monthly if b else 0.0)
        rows.append((f"FSx for Lustre {rid}", _file_system(a), _file_system(b), change, change))
    return rows


def _file_system(c: FileSystemCost | None) -> str:
    if c is None:
        return "-"
    tier = f" at {c.per_unit_throughput} MB/s/TiB" if c.per_unit_throughput else ""
    return f"{c.deployment_type}, {c.capacity_gib:,} GiB{tier} ({_usd(c.monthly)})"


def _all_cost_rows(report: Report) -> list[tuple[str, str, str, str, str]]:
    """The cost table's rows: each changed node group or pool, then each changed file system."""
    groups = [(name, _size(a), _size(b), *_size_deltas(a, b)) for name, a, b in _cost_rows(report)]
    return groups + _storage_rows(report)


def _cost_rows(report: Report) -> list[tuple[str, GroupCost | None, GroupCost | None]]:
    old = {c.node_group: c for c in report.cost_old}
    new = {c.node_group: c for c in report.cost_new}
    return [
        (name, old.get(name), new.get(name)) for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)
    ]


def _size_deltas(a: GroupCost | None, b: GroupCost | None) -> tuple[str, str]:
    """The monthly cost change of one node group at minSize and at maxSize (a group that is new or gone costs 0)."""
    return (
        _delta(a.monthly(a.idle_size) if a else 0.0, b.monthly(b.idle_size) if b else 0.0),
        _delta(a.monthly(a.max_size) if a else 0.0, b.monthly(b.max_size) if b else 0.0),
    )


def _size(c: GroupCost | None) -> str:
    if c is None:
        return "-"
    pool = f", warm pool {c.warm_pool} {'running' if c.warm_pool_running else 'stopped'}" if c.warm_pool else ""
    reserved = f", {c.reserved} reserved" if c.reserved else ""
    headroom = f", headroom {c.headroom}" if c.headroom else ""
    return f"{c.instance_type} x {c.min_size}..{c.max_size} ({c.gpus_per_node} GPUs/node{pool}{reserved}{headroom})"


def _node_line(n: NodeImpact) -> str:
    if n.provisioner == "Karpenter":
        return f"Karpenter NodePool {n.node_group} ({n.id}) {_POOL_WORDS[n.action]}"
    kind = "GPU node group" if n.gpu else "node group"
    return f"{kind} {n.node_group} ({n.id}) {_NODE_WORDS[n.action]}"


def _stages(report: Report) -> list[tuple[str, list[Change]]]:
    names = list(report.stages) + sorted({c.stage or "(no stage)" for c in report.changes} - set(report.stages))
    return [
        (name, [c for c in report.changes if (c.stage or "(no stage)") == name])
        for name in names
        if any((c.stage or "(no stage)") == name for c in report.changes)
    ]


def _counts(changes: list[Change]) -> str:
    parts = [
        f"{sum(1 for c in changes if c.action == a)} {w}"
        for a, w in (("add", "added"), ("update", "changed"), ("replace", "replaced"), ("remove", "removed"))
    ]
    return ", ".join(p for p in parts if not p.startswith("0 "))


def _protected(report: Report) -> list[Change]:
    return [c for c in report.changes if c.protected and c.action in ("replace", "remove")]


def text(report: Report, old: str, new: str, *, old_absent: bool = False) -> str:
    env = f" (environment {report.environment})" if report.environment else ""
    out = [f"gpufleet diff {old} -> {new}{env}"]
    if old_absent:
        out.append(f"{old} does not exist: compared with an empty fleet, so every resource is added")
    if not report.changes:
        out.append("no changes")
    for c in _protected(report):
        out.append(f"!! protected resource {c.id} would be {c.action}d: `pulumi up` stops on it")
    for n in report.nodes:
        out.append(f"!! {_node_line(n)}")
        out += [f"!!     because {r}" for r in n.reasons]
    if report.work:
        out.append("running work:")
        out += [f"{'!!' if e.disruptive else '  '} {e.what} ({e.id})" for e in report.work]
    for stage, changes in _stages(report):
        out.append(f"stage {stage}: {_counts(changes)}")
        for c in changes:
            line = f"  {_SYMBOL[c.action]:>3} {c.id} ({c.type})"
            if c.action == "replace":
                line += " REPLACE"
            out.append(line)
            for path in c.paths:
                out.append(f"        {path}")
            out += [f"        replaces because {r}" for r in c.reasons]
    if report.quotas:
        out.append("GPU quota per team (Kueue counts devices; the unit of each flavor follows the values):")
        out += [
            f"  {q.team} / {q.flavor}: {q.field} {q.old or '-'} -> {q.new or '-'} {q.unit}"
            + (f" ({q.old_gpus() or '-'} -> {q.new_gpus() or '-'})" if q.in_gpus else "")
            for q in report.quotas
        ]
    rows = _all_cost_rows(report)
    if rows:
        out.append(f"cost per month ({pricing.HOURS_PER_MONTH} h), at minSize (or headroom) / maxSize:")
        for name, before, after, at_min, at_max in rows:
            out.append(f"  {name}: {before} -> {after}: min {at_min}, max {at_max}")
        out.append(f"  fleet: min {_fleet_total(report, 'min')}, max {_fleet_total(report, 'max')}")
        out.append(f"  ({LEAVES_OUT})")
    return "\n".join(out) + "\n"


def markdown(report: Report, old: str, new: str, *, old_absent: bool = False) -> str:
    """The pull request comment, laid out by gpufleet/templates/diff-comment.md.j2."""
    return render(
        "diff-comment.md.j2",
        env=report.environment or "?",
        old=old,
        new=new,
        old_absent=old_absent,
        protected=_protected(report),
        nodes=[(_node_line(n), n.reasons) for n in report.nodes],
        stops=[e for e in report.work if e.disruptive],
        restarts=[e for e in report.work if not e.disruptive],
        stages=[(stage, _counts(changes), changes) for stage, changes in _stages(report)],
        symbol=_SYMBOL,
        quotas=report.quotas,
        hours=pricing.HOURS_PER_MONTH,
        costs=_all_cost_rows(report),
        fleet_min=_fleet_total(report, "min"),
        leaves_out=LEAVES_OUT,
        fleet_max=_fleet_total(report, "max"),
    )
