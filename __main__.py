"""The Pulumi program: load the spec for this stack's environment, plan it, deploy it (same path as synth)."""

import pulumi

from gpufleet.components import deploy
from gpufleet.errors import SpecError
from gpufleet.pipeline import load_fleet
from gpufleet.rollout import build_plan

environment = pulumi.get_stack()
spec = pulumi.Config("gpufleet").get("spec") or "fleet.yaml"
try:
    fleet = load_fleet(spec, environment).environments[environment]
except SpecError as error:
    # The same positioned errors as `gpufleet validate`, then a clean stop (no Python traceback).
    raise pulumi.RunError(error.render()) from None
deploy(build_plan(fleet, environment))
