"""Thin Pulumi layer: turn a decided `gpufleet.plan.RolloutPlan` into resources. No decisions live here.

`deploy(plan)` is what `pulumi up` runs (see __main__.py); `components.synth` runs the same `deploy` under
Pulumi's mock runtime to record what would be registered.
"""

from components.deploy import deploy

__all__ = ["deploy"]
