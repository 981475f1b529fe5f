"""Cross-field rules: `(fleet) -> Iterable[Issue]`, registered by name, all run, every issue reported.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/rules/cross_field.py.
"""

from __future__ import annotations

from gpufleet.rules import (
    access,
    ami,
    capacity,
    cluster,
    devices,
    image_pull,
    karpenter,
    network,
    node_groups,
    references,
    sharing,
    storage,
    tenancy,
    versions,
    workloads,
)
from gpufleet.rules.registry import RULES, Rule, check

# Importing a feature's module registers its rules.
FEATURES = (
    references,
    node_groups,
    ami,
    image_pull,
    capacity,
    karpenter,
    devices,
    sharing,
    tenancy,
    access,
    cluster,
    network,
    versions,
    storage,
    workloads,
)

__all__ = ["FEATURES", "RULES", "Rule", "check"]
