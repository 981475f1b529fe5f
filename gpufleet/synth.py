"""`gpufleet synth`: validate, plan, record the Pulumi program under mocks, write the tree (all or nothing)."""

from __future__ import annotations

from gpufleet.plan import RolloutPlan
from gpufleet.rollout import build_plan
from gpufleet.report import plan_markdown
from gpufleet.spec import Fleet
from gpufleet.tree import Tree, build_tree


def synth_tree(fleet: Fleet, environment: str) -> tuple[RolloutPlan, Tree]:
    """The tree for one environment. Imports the Pulumi layer only here, when synth actually runs."""
    from components.synth import record

    plan = build_plan(fleet, environment)
    return plan, build_tree(plan, record(plan), plan_markdown(plan))
