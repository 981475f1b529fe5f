"""gpufleet policies: pure predicates (rules.py) and the Pulumi CrossGuard pack that wraps them (__main__.py)."""
