"""Stage: health (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("health")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
