"""The stages: one module per stage of gpufleet.facts.stages, each with `build(ctx) -> StageContent`, run in stage
order by gpufleet.plan.rollout. A stage builds from gpufleet.plan.builders (the provisioners, device managers,
cluster roles and the resources they share) and gpufleet.plan.manifests (the objects themselves)."""
