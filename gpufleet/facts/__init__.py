"""What gpufleet knows offline, each fact with its source: the GPU instance catalog, component versions, EKS AMI
releases, prices, the rollout stages and checkpoint arithmetic."""
