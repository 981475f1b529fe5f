"""Stage: cost (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("cost")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
