"""Fleet -> RolloutPlan: the stage builders as one ordered table, run in stage order; each stage's resources
are ordered by their references and the whole plan is checked (gpufleet.plan.parts.check_order)."""

from __future__ import annotations

from gpufleet.facts import stages
from gpufleet.plan.builders import cluster_roles
from gpufleet.plan.parts import BuildContext, Builder, RolloutPlan, StageContent, StagePlan, check_order, ordered
from gpufleet.plan.stages import admission, cost, foundation, health, network, sharing, storage, telemetry
from gpufleet.spec.fleet import Fleet

# The builder of each stage, in rollout order (the same order as gpufleet.facts.stages.STAGES; a test holds them equal).
STAGE_BUILDERS: tuple[tuple[stages.StageName, Builder], ...] = (
    ("foundation", foundation.build),
    ("telemetry", telemetry.build),
    ("admission", admission.build),
    ("sharing", sharing.build),
    ("network", network.build),
    ("storage", storage.build),
    ("health", health.build),
    ("cost", cost.build),
)


def build_plan(fleet: Fleet, environment: str) -> RolloutPlan:
    """The staged plan of `fleet` (already merged for `environment`)."""
    through = fleet.environment(environment).through
    ctx = BuildContext(fleet=fleet, environment=environment, through=through)
    built = []
    role = cluster_roles.of(fleet)
    for name, build in STAGE_BUILDERS:
        # A stage the cluster's role has nothing of (a MultiKueue manager's GPU stages) is empty, and says why.
        content = build(ctx) if role.builds(name) else StageContent(notes=(role.skipped_note(name),))
        content = StageContent(
            resources=ordered(content.resources), gates=content.gates, warnings=content.warnings, notes=content.notes
        )
        built.append(
            StagePlan(index=stages.index(name), name=name, included=stages.included(name, through), content=content)
        )
    plan = RolloutPlan(fleet=fleet, environment=environment, through=through, stages=tuple(built))
    problems = check_order(plan)
    if problems:  # a bug in a builder, not a user error
        raise AssertionError("inconsistent plan: " + "; ".join(problems))
    return plan
