"""GPU sharing per node group (stage 4): the names and labels the foundation stage wires in.

Interface used by gpufleet/builders/foundation.py (only when the sharing stage is included):
- sharing_node_labels(group) -> node labels selecting the group's device plugin / MIG config;
- operator_sharing_values(fleet) -> GPU Operator Helm values pointing at the ConfigMaps stage 4 creates.
"""

from __future__ import annotations

from typing import Any

from gpufleet.spec import Fleet, NodeGroup


def sharing_node_labels(group: NodeGroup) -> dict[str, str]:
    return {}


def operator_sharing_values(fleet: Fleet) -> dict[str, Any]:
    return {}
