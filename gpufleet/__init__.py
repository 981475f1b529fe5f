"""gpufleet: one validated fleet spec in, a staged GPU Kubernetes fleet on AWS EKS out.

This package is the pure core: it never imports pulumi (tests/unit/test_purity.py enforces it).
"""
