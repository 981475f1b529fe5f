"""The rollout plan: what it is made of (parts), the manifests (pure Kubernetes and AWS objects), the builders the
stages share (seams and shared resources), the stages, the rollout in stage order and its review (plan.md)."""
