"""Stage: admission (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("admission")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
