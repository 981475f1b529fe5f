"""The program `pulumi up` runs and synth records: one Stage component per included, non-empty stage."""

from __future__ import annotations

import pulumi

from gpufleet.components.factory import Registry
from gpufleet.components.stage import UrnDependency
from gpufleet.components.stage import stage as register_stage
from gpufleet.plan.parts import RolloutPlan, outputs_read


def deploy(plan: RolloutPlan) -> Registry:
    registry: Registry = {}
    previous: list[pulumi.Resource] = []
    outputs = outputs_read(plan)
    for stage in plan.included():
        if not stage.content.resources:
            continue  # an empty component's dependents would not wait for anything (pulumi/pulumi#8721)
        component = register_stage(stage, registry, after=previous, outputs=outputs)
        previous = [UrnDependency(component.ready)]
    pulumi.export("fleet", plan.fleet.name)
    pulumi.export("environment", plan.environment)
    pulumi.export("through", plan.through)
    return registry
