"""plan.md: the human review of one environment's rollout (stages, what each brings, notes, gates, warnings)."""

from __future__ import annotations

from gpufleet import defaults, stages
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
    lines += _defaults_section(plan)
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


def _defaults_section(plan: RolloutPlan) -> list[str]:
    """The values this environment took from computed defaults (gpufleet.defaults), so a reviewer sees what the
    spec left to gpufleet; static defaults are in docs/spec-reference.md."""
    taken = defaults.applied(plan.fleet, tuple(s.name for s in plan.included()))
    if not taken:
        return []
    lines = ["", "## Defaulted values", "", "| field | value |", "|---|---|"]
    lines += [f"| `{field}` | `{value}` |" for field, value, _ in taken]
    used = [d for d in defaults.COMPUTED if any(default is d for _, _, default in taken)]
    return lines + [""] + [f"- `{d.path}`: {d.rule}. Why: {d.reason}." for d in used]
