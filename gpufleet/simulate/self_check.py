"""The fleet against itself: every workload gpufleet renders and one canonical workload per node group go through
the model; one that would not run on the nodes it targets is an error of the spec, positioned at the field to
change (synth refuses the fleet).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/self_check.py."""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.base.errors import Issue, Path
from gpufleet.base.render import render
from gpufleet.simulate.canonical import canonical, claims_team, rendered, shape
from gpufleet.simulate.controllers import overlaid
from gpufleet.simulate.verdict import ASSUMPTION, SYSTEM_GROUP, FleetModel, Reason, Verdict, explain
from gpufleet.simulate.workload import Workload
from gpufleet.spec.devices import device_managing
from gpufleet.spec.fleet import NodeGroup


@dataclass(frozen=True, slots=True)
class Row:
    group: NodeGroup
    shape: str
    verdict: Verdict


class Contradictions(Exception):
    """The fleet contradicts itself; `issues` say where."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__("; ".join(i.message for i in issues))
        self.issues = issues


def canonical_rows(model: FleetModel) -> list[Row]:
    """The canonical workload of each group.

    Why: docs/explain-model.md, "Design notes", self_check.canonical_rows."""
    return [
        Row(g, shape(g) + (" (claims)" if device_managing(g).claims else ""), explain(model, canonical(model, g)))
        for g in model.plan.fleet.node_groups
        if not device_managing(g).claims or claims_team(model, g) is not None
    ]


def _path(model: FleetModel, verdict: Verdict, group: str | None) -> Path:
    reason = verdict.reasons[0]
    if reason.spec_path is not None:
        return reason.spec_path
    # No node group: a controller that needs the untainted nodes (cluster.systemNodes in mode Create).
    return model.paths.get(f"nodeGroup:{group}", ()) if group else ("cluster",)


def _overlaid(model: FleetModel, wl: Workload, reason: Reason) -> tuple[Path, str] | None:
    """(the overlay key, a hint) when the spec's Helm values overlay placed the chart controller where it cannot
    run: the error belongs at the overlay's nodeSelector (or tolerations), not at the node group it names."""
    placed = overlaid(model.plan, wl) if reason.stage == "scheduling" else None
    if placed is None:
        return None
    component, selector, tolerations = placed
    key = selector or tolerations
    assert key is not None
    values = f"helm.{component}.values"
    path: Path = ("helm", component, "values", *key.split("."))
    groups = ", ".join([SYSTEM_GROUP] * model.system_nodes + sorted(model.nodes))
    if reason.message.startswith("node(s) had untolerated taint"):
        taint = reason.message.split("{", 1)[1].split(":", 1)[0]
        hint = (
            f"remove {values}.{key} (gpufleet places the controller on the untainted system nodes), or tolerate"
            f" {taint} in {values}.{tolerations or key.rsplit('.', 1)[0] + '.tolerations'}"
            if selector
            else f"tolerate {taint} in {values}.{key}, or remove it"
        )
    else:
        hint = (
            f"select a node group that exists in {values}.{key} (gpufleet.io/node-group: one of {groups}), or remove it"
        )
    return path, hint


def contradictions(model: FleetModel, rows: list[Row]) -> list[Issue]:
    issues = []
    for wl in rendered(model):
        verdict = explain(model, wl)
        if not verdict.runs:
            group = next((ps.pod.node_selector.get("gpufleet.io/node-group") for ps in wl.pod_sets), None)
            reason = verdict.reasons[0]
            message = (
                f"gpufleet's own {wl.kind} {wl.namespace}/{wl.name} would not run ({reason.stage}): {reason.message}"
            )
            at_overlay = _overlaid(model, wl, reason)
            if at_overlay is not None:
                issues.append(Issue(path=at_overlay[0], at_key=True, message=message, hint=at_overlay[1]))
                continue
            issues.append(Issue(path=_path(model, verdict, group), message=message, hint=reason.fix))
    for row in rows:
        if not row.verdict.runs:
            reason = row.verdict.reasons[0]
            message = (
                f"node group {row.group.name}: a {row.shape} pod (its workload class's shape) would not run"
                f" ({reason.stage}): {reason.message}"
            )
            issues.append(Issue(path=_path(model, row.verdict, row.group.name), message=message, hint=reason.fix))
    return issues


def will_it_run(rows: list[Row]) -> str:
    """plan.md's section (gpufleet/templates/plan-will-it-run.md.j2): the canonical workload of each group, where it
    runs or what stops it."""
    assumption = rows[0].verdict.assumes if rows else ASSUMPTION
    return render("plan-will-it-run.md.j2", assumption=assumption, rows=rows)
