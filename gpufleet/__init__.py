"""gpufleet: one validated fleet spec in, a staged GPU Kubernetes fleet on AWS EKS out.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/__init__.py.
"""

# The release (README "Versions and releases" says what a change of each part means; CHANGELOG.md records each).
__version__ = "0.1.0"
