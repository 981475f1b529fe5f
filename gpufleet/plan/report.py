"""plan.md: the human review of one environment's rollout, laid out by gpufleet/templates/plan.md.j2: first what a
reviewer decides on and the risks (gpufleet.plan.review_first), then the checklist, stages, what each brings, notes
and gates."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.base.render import render
from gpufleet.facts import stages
from gpufleet.facts.chart_values import dotted
from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.access_table import access_values
from gpufleet.plan.before_deploy import before_you_deploy
from gpufleet.plan.builders import provisioners
from gpufleet.plan.manifests import headroom
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.pins import pins
from gpufleet.plan.review_first import monthly_cost, risks, team_gpus
from gpufleet.spec import defaults
from gpufleet.spec.fleet import NodeGroup
from gpufleet.spec.names import group_taints


def _capacity(group: NodeGroup) -> str:
    reservation = group.reservation
    text = str(group.capacity_type)
    if group.reservation_id:
        text += f" `{group.reservation_id}`"
    if reservation is not None:
        which = reservation.id or reservation.resource_group_arn or "open"
        text += f", ODCR `{which}` ({reservation.instance_count} instances billed running or not)"
    return text + provisioners.of(group).capacity(group)


def _warm(group: NodeGroup) -> str:
    """What keeps capacity ready: headroom's placeholders (warm nodes, running), and what the provisioner keeps."""
    warm = (
        [f"headroom of {group.headroom.nodes} running node(s) ({headroom.APP} placeholders)"] if group.headroom else []
    )
    return provisioners.of(group).warm(group, warm)


def _instance_types(group: NodeGroup) -> str:
    """The instance type, and the others a Karpenter pool may launch (nodeGroups[].instanceTypes: the same GPU model
    and count; the reference shape first)."""
    others = [t for t in group.instance_types if t != group.instance_type]
    return group.instance_type + (f" (or {', '.join(others)})" if others else "")


def node_group_rows(plan: RolloutPlan) -> list[tuple[str, str, str, str, str, str, str]]:
    """plan.md's "Node groups": each GPU group's provisioner (an EKS managed node group, or a Karpenter NodePool),
    size (min..max, or the NodePool's limit), capacity (with its On-Demand Capacity Reservation, which the cost table
    alone showed, and the NodePool's capacity-type requirement), what keeps capacity warm, and every taint its nodes
    carry (gpufleet.spec.names)."""
    fleet = plan.fleet
    return [
        (
            group.name,
            provisioners.of(group).provisioned_by(fleet, group),
            _instance_types(group),
            provisioners.of(group).sizes(plan, group),
            _capacity(group),
            _warm(group),
            ", ".join(f"`{t['key']}={t['value']}:{t['effect']}`" for t in group_taints(group)),
        )
        for group in fleet.node_groups
    ]


def _leaves(values: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    for key, value in values.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, path + (key,))
        else:
            yield dotted(path + (key,)), json.dumps(value, sort_keys=True)


def overlay_rows(plan: RolloutPlan, deployed: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str, str, str]]:
    """plan.md's "Helm values overlays": per chart of the spec's `helm` section, each key it sets (a map down to
    its leaves) and the value, as JSON; the chart version this environment deploys, or that it deploys none."""
    rows = []
    for key, overlay in plan.fleet.helm_values.items():
        chart = COMPONENTS[key]
        where = f"{chart.chart} {deployed[key]['version']}" if key in deployed else "not in this environment"
        rows += [(chart.title, where, path, value) for path, value in _leaves(overlay)]
    return rows


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
        node_groups=node_group_rows(plan),
        provisioner_notes=[p.note for p in provisioners.used(plan.fleet) if p.note is not None],
        overlays=overlay_rows(plan, deployed),
        cost=monthly_cost(plan.fleet),
        team_gpus=team_gpus(plan.fleet),
        risks=risks(plan),
    )
