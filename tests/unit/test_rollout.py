"""The rollout's table of stage builders is the stage list, in order."""

from gpufleet.facts import stages
from gpufleet.plan.rollout import STAGE_BUILDERS


def test_every_stage_has_one_builder_in_stage_order() -> None:
    assert tuple(name for name, _ in STAGE_BUILDERS) == stages.STAGES
