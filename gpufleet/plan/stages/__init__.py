"""The stages: one module per stage of gpufleet.facts.stages, each with `build(ctx) -> StageContent`, run in stage
order by gpufleet.plan.rollout.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/plan/stages/__init__.py.
"""
