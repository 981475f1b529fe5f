"""The checks `gpufleet diagnose` runs over NCCL logs and `kubectl describe node` output."""
