"""Thin Pulumi layer: turn a decided `gpufleet.plan.parts.RolloutPlan` into resources. No decisions live here.

`deploy(plan)` is what `pulumi up` runs (see __main__.py); `gpufleet.components.recording` runs the same `deploy` under
Pulumi's mock runtime to record what would be registered.
"""

from gpufleet.components.deploy import deploy

__all__ = ["deploy"]
