"""Stage: telemetry (not built yet)."""

from gpufleet.plan import BuildContext, StageContent, builder


@builder("telemetry")
def build(ctx: BuildContext) -> StageContent:
    return StageContent()
