"""The Pulumi program, as an installed package module: a fleet repository's `__main__.py` is the two lines

    from gpufleet.components.program import run
    run()

(`gpufleet init --pulumi` writes them; this checkout's __main__.py is the same). It loads the spec for this stack's
environment (config `gpufleet:spec`, default fleet.yaml), plans it and deploys it: the path `gpufleet synth` records
under mocks. A wrong spec stops with the same positioned errors as `gpufleet validate`, never a traceback.
"""

from __future__ import annotations

import pulumi

from gpufleet.base.errors import SpecError, UsageError
from gpufleet.components.deploy import deploy
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet


def run() -> None:
    environment = pulumi.get_stack()
    spec = pulumi.Config("gpufleet").get("spec") or "fleet.yaml"
    try:
        fleet = load_fleet(spec, environment).fleet(environment)
    except SpecError as error:
        raise pulumi.RunError(error.render()) from None
    except UsageError as error:  # a spec with clusters[] on a stack named for its environment only
        raise pulumi.RunError(str(error)) from None
    deploy(build_plan(fleet, environment))
