"""Stage: network (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("network")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
