"""plan.md: the human review of one environment's rollout (stages, what each brings, notes, gates, warnings)."""

from __future__ import annotations

from gpufleet import stages
from gpufleet.access_table import access_section
from gpufleet.pins import pins_section
from gpufleet.plan import RolloutPlan


def plan_markdown(plan: RolloutPlan, will_it_run: list[str] | None = None) -> str:
    """The review page; `will_it_run` is the model's table of canonical workloads (gpufleet.model.check)."""
    fleet = plan.fleet
    lines = [
        f"# Fleet `{fleet.name}`, environment `{plan.environment}`",
        "",
        f"Cluster `{fleet.cluster.name}` ({fleet.cluster.mode}) in {fleet.cluster.region}, Kubernetes {fleet.cluster.kubernetes_version}. "
        f"Rollout through **{plan.through}** (stage {stages.index(plan.through)} of {len(stages.STAGES)}).",
        "",
        "| # | stage | included | resources | gates |",
        "|---|---|---|---|---|",
    ]
    for s in plan.stages:
        count = len([r for r in s.content.resources if not r.lookup])
        gates = ", ".join(g.name for g in s.content.gates) or "-"
        lines.append(f"| {s.index} | {s.name} | {'yes' if s.included else 'no'} | {count} | {gates} |")
    lines += [""] + pins_section(plan)
    lines += [""] + access_section(fleet, plan.through)
    for s in plan.stages:
        lines += ["", f"## {s.index}. {s.name}{'' if s.included else ' (not in this environment)'}", "", stages.WHAT[s.name] + "."]
        if s.content.notes:
            lines += [""] + list(s.content.notes)
        for gate in s.content.gates:
            lines += ["", f"**Gate `{gate.name}`**: {gate.expectation}"]
        if s.content.warnings:
            lines += [""] + [f"- warning: {w}" for w in s.content.warnings]
    if will_it_run:
        lines += [""] + will_it_run
    return "\n".join(lines) + "\n"
