"""The component versions one environment deploys and where each comes from, for plan.json and plan.md.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/pins.py.
"""

from __future__ import annotations

from gpufleet.facts import stages
from gpufleet.plan.parts import RolloutPlan
from gpufleet.spec.deployed import STAGE_OF_COMPONENT, component_versions, deployed_components


def pins(plan: RolloutPlan) -> dict[str, dict[str, str]]:
    """The component versions this environment deploys, each with where it comes from: `spec` (pinned in the spec)
    or `tested` (not pinned: the release this gpufleet is tested with), so a gpufleet upgrade that bumps a default
    shows in the tree and in `gpufleet diff`."""
    return {
        key: {
            "version": component_versions(plan.fleet)[key],
            "from": "tested" if key in plan.fleet.versions.defaulted else "spec",
        }
        for key in sorted(deployed_components(plan.fleet))
        if stages.included(STAGE_OF_COMPONENT[key], plan.through)
    }
