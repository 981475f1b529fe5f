"""A pure behavioural model of the gates a workload passes on a real cluster (docs/architecture.md section 7).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/__init__.py.
"""
