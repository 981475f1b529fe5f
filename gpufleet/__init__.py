"""gpufleet: one validated fleet spec in, a staged GPU Kubernetes fleet on AWS EKS out.

This package is the pure core: it never imports pulumi (tests/unit/test_purity.py enforces it). Its subpackages
`components` (the Pulumi layer) and `policies` (the CrossGuard pack) are the checkout's top-level folders, linked in
so that they install under gpufleet; the core reaches the Pulumi layer only when synth runs.
"""

# The release (README "Versions and releases" says what a change of each part means; CHANGELOG.md records each).
__version__ = "0.1.0"
