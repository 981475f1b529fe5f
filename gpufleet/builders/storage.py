"""Stage: storage (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("storage")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
