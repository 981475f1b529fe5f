"""`gpufleet synth`: validate, plan, record the Pulumi program under mocks, write the tree (all or nothing)."""

from __future__ import annotations

from gpufleet.collector import rare_collections
from gpufleet.model.check import Contradictions, canonical_rows, contradictions, will_it_run
from gpufleet.model.explain import fleet_model
from gpufleet.plan import RolloutPlan
from gpufleet.report import plan_markdown
from gpufleet.rollout import build_plan
from gpufleet.spec import Fleet
from gpufleet.tree import Tree, build_tree


@rare_collections()
def synth_tree(fleet: Fleet, environment: str) -> tuple[RolloutPlan, Tree]:
    """The tree for one environment. Imports the Pulumi layer only here, when synth actually runs.

    Raises Contradictions (before anything is recorded) when a workload gpufleet renders, or the canonical workload
    of a node group, would not run on this fleet."""
    from gpufleet.components.synth import record

    plan = build_plan(fleet, environment)
    model = fleet_model(plan)
    rows = canonical_rows(model)
    issues = contradictions(model, rows)
    if issues:
        raise Contradictions(issues)
    return plan, build_tree(plan, record(plan), plan_markdown(plan, will_it_run(rows)))
