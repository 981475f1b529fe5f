"""The Pulumi program: load the spec for this stack's environment, plan it, deploy it (same path as synth)."""

import pulumi

from gpufleet.base.errors import SpecError
from gpufleet.components import deploy
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet

environment = pulumi.get_stack()
spec = pulumi.Config("gpufleet").get("spec") or "fleet.yaml"
try:
    fleet = load_fleet(spec, environment).environments[environment]
except SpecError as error:
    # The same positioned errors as `gpufleet validate`, then a clean stop (no Python traceback).
    raise pulumi.RunError(error.render()) from None
deploy(build_plan(fleet, environment))
