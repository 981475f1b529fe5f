"""The top of plan.md, what a reviewer decides on before reading the rest: the fleet's monthly cost (at minSize and
at maxSize) and each team's GPUs; then the risks: EKS extended support pricing, privileged images pinned by tag
only, every stage's warnings (an oversubscribed quota among them), what replaces nodes by itself, and the gates
that hold GPU nodes while they run.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/plan/review_first.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.facts import catalog, pricing, stages
from gpufleet.facts.images import IMAGES
from gpufleet.plan.parts import Gate, RolloutPlan, StagePlan
from gpufleet.plan.stages import cost
from gpufleet.spec import images
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.names import LABEL_NODE_GROUP


def monthly_cost(fleet: Fleet) -> str:
    """The fleet's USD per month at minSize and at maxSize, as the cost stage's estimate totals it."""
    at_min, at_max, unpriced = cost.fleet_monthly(fleet)
    counted = ["GPU nodes with their warm pools"]
    if fleet.cluster.mode == "Create":
        counted += ["the control plane", "system nodes"]
    counted.append("root volumes")
    if fleet.fsx_lustre is not None:
        counted.append("the FSx for Lustre file system")
    missing = f"; not counted for want of a price: {', '.join(unpriced)} (set cost.gpuHourUsd)" if unpriced else ""
    return (
        f"**Cost per month: {cost.usd(at_min)} at minSize, {cost.usd(at_max)} at maxSize** ({pricing.HOURS_PER_MONTH}"
        f" hours of {', '.join(counted[:-1])} and {counted[-1]}{missing}; the table, the Spot range and what is not"
        " counted: 8. cost)."
    )


def team_gpus(fleet: Fleet) -> list[tuple[str, str, str]]:
    """Per team: its GPUs (nominal quota), in all and per node group with the GPU model, and its cohort."""
    rows = []
    for team in fleet.teams:
        parts = []
        for quota in team.quotas:
            info = catalog.lookup(fleet.node_group(quota.node_group).instance_type)
            parts.append(f"{quota.gpus}{f' x {info.gpu_model}' if info else ''} on {quota.node_group}")
        gpus = f"**{sum(q.gpus for q in team.quotas)}**: " + ", ".join(parts) if parts else "0"
        rows.append((team.name, gpus, team.cohort or "-"))
    return rows


def _job(stage: StagePlan, gate: Gate) -> Mapping[str, Any]:
    resource = next(r for r in stage.content.resources if r.id == gate.resource)
    job: Mapping[str, Any] = resource.args.get("object") or {}
    return job


def gate_holds(plan: RolloutPlan, stage: StagePlan, gate: Gate) -> str:
    """What a gate's Job holds while it runs at rollout: how many nodes of which group, for at most how long
    (its activeDeadlineSeconds), from the Job gpufleet renders."""
    job = _job(stage, gate)
    spec = job.get("spec") or {}
    selector = (((spec.get("template") or {}).get("spec") or {}).get("nodeSelector")) or {}
    labels = (job.get("metadata") or {}).get("labels") or {}
    group = plan.fleet.node_group(str(selector.get(LABEL_NODE_GROUP) or labels.get(LABEL_NODE_GROUP)))
    deadline = spec.get("activeDeadlineSeconds")
    limit = f" for up to {int(deadline) // 60} minutes" if isinstance(deadline, int) else ""
    nodes = int(spec.get("parallelism") or 1)
    price = cost.group_monthly(plan.fleet, group)
    rate = f", {cost.usd(nodes * price.hourly)} an hour" if price is not None else ""
    what = (
        f"holds {nodes} `{group.name}` node(s) ({group.instance_type}, every GPU){limit}{rate}"
        if stage.name == "network"
        else f"plants a fault on one `{group.name}` node ({group.instance_type}), which the health loop cordons,{limit}"
    )
    launched = "it" if nodes == 1 else "them"
    scaled = f" (from 0 nodes: the autoscaler launches {launched} for it)" if group.min_size == 0 else ""
    return f"Gate `{gate.name}` ({stage.index}. {stage.name}) {what}{scaled}."


def _extended_support(fleet: Fleet) -> list[str]:
    line = cost.extended_support(fleet)
    return [line] if line else []


def _tag_only(plan: RolloutPlan) -> list[str]:
    found = images.tag_only(plan.fleet, lambda stage: stages.included(stage, plan.through))
    if not found:
        return []
    listed = "; ".join(
        f"{IMAGES[key].title} `{tagged}` ({', '.join(dict.fromkeys(e.component for e in entries))})"
        for key, tagged, entries in found
    )
    return [
        f"Privileged images pinned by tag only, which whoever controls the tag can point at another image: {listed}"
        " (pin each digest: Before you deploy)."
    ]


def _replacements(plan: RolloutPlan) -> list[str]:
    """What replaces GPU nodes without a change of the spec: EC2 reclaiming Spot capacity."""
    spot = [g.name for g in plan.fleet.node_groups if cost.spot_capacity(g) is not None]
    if not spot:
        return []
    return [
        f"Spot capacity ({', '.join(f'`{n}`' for n in spot)}): EC2 reclaims a Spot node with two minutes' notice;"
        " its pods are evicted and a replacement node starts (8. cost prices the range)."
    ]


def risks(plan: RolloutPlan) -> list[str]:
    """The risk lines, in the order of the page's sections they come from."""
    warnings = [f"**{s.name}**: {w}" for s in plan.stages for w in s.content.warnings]
    gates = [gate_holds(plan, s, g) for s in plan.stages if s.included for g in s.content.gates]
    return _extended_support(plan.fleet) + _tag_only(plan) + warnings + _replacements(plan) + gates
