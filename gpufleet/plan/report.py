"""plan.md: the human review of one environment's rollout (stages, what each brings, notes, gates, warnings), laid
out by gpufleet/templates/plan.md.j2."""

from __future__ import annotations

from gpufleet.base.render import render
from gpufleet.facts import stages
from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.access_table import access_values
from gpufleet.plan.before_deploy import before_you_deploy
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.pins import pins
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet, NodeGroup
from gpufleet.spec.names import group_taints


def _capacity(group: NodeGroup) -> str:
    reservation = group.reservation
    text = str(group.capacity_type)
    if group.reservation_id:
        text += f" `{group.reservation_id}`"
    if reservation is not None:
        which = reservation.id or reservation.resource_group_arn or "open"
        text += f", ODCR `{which}` ({reservation.instance_count} instances billed running or not)"
    return text


def node_group_rows(fleet: Fleet) -> list[tuple[str, str, str, str, str]]:
    """plan.md's "Node groups": each GPU group's size, capacity (with its On-Demand Capacity
    Reservation, which the cost table alone showed) and every taint its nodes carry (gpufleet.spec.names)."""
    return [
        (
            group.name,
            group.instance_type,
            f"{group.min_size}..{group.max_size}",
            _capacity(group),
            ", ".join(f"`{t['key']}={t['value']}:{t['effect']}`" for t in group_taints(group)),
        )
        for group in fleet.node_groups
    ]


def plan_markdown(plan: RolloutPlan, will_it_run: str | None = None) -> str:
    """The review page; `will_it_run` is the model's section of canonical workloads (gpufleet.simulate.self_check)."""
    # The values this environment took from computed defaults (gpufleet.spec.defaults), so a reviewer sees what the spec
    # left to gpufleet; static defaults are in docs/spec-reference.md.
    deployed = pins(plan)
    taken = defaults.applied(
        plan.fleet, tuple(s.name for s in plan.included()), {key: pin["version"] for key, pin in deployed.items()}
    )
    return render(
        "plan.md.j2",
        plan=plan,
        through_index=stages.index(plan.through),
        stage_count=len(stages.STAGES),
        what=stages.WHAT,
        versions=[(COMPONENTS[key].title, pin["version"], pin["from"]) for key, pin in deployed.items()],
        access=render("plan-access.md.j2", **access_values(plan.fleet, plan.through)),
        defaulted=[(field, value) for field, value, _ in taken],
        default_rules=[d for d in defaults.COMPUTED if any(default is d for _, _, default in taken)],
        will_it_run=will_it_run,
        before=before_you_deploy(plan),
        node_groups=node_group_rows(plan.fleet),
    )
