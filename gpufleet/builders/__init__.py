"""Stage builders: one module per stage, each with `build(ctx) -> StageContent`; gpufleet.rollout runs them in
stage order. Builders use gpufleet.manifests for the objects themselves and gpufleet.names for shared names."""
