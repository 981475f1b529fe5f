"""Health (stage 7): what the foundation stage wires into each managed node group.

Interface used by gpufleet/builders/foundation.py (only when the health stage is included):
- node_repair_config(fleet, group) -> the `node_repair_config` argument of aws.eks.NodeGroup (snake_case keys,
  pulumi-aws 7.x), or None to leave auto repair off.
"""

from __future__ import annotations

from typing import Any

from gpufleet.spec import Fleet, NodeGroup


def node_repair_config(fleet: Fleet, group: NodeGroup) -> dict[str, Any] | None:
    return None
