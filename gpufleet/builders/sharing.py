"""Stage: sharing (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("sharing")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
