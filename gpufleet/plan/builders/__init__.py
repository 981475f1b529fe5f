"""Stage builders: one module per stage, each with `build(ctx) -> StageContent`; gpufleet.plan.rollout runs them in
stage order. Builders use gpufleet.plan.manifests for the objects themselves and gpufleet.spec.names for shared
names."""
