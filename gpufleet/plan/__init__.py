"""The rollout plan: what it is made of, the manifests (pure Kubernetes and AWS objects), the stage builders, the
rollout in stage order and its review (plan.md)."""
