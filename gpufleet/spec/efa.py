"""How many EFA interfaces a node group's nodes attach: one per network card, up to the type's maximum. Each card
past the first gets an `efa-only` interface (plan/builders/node_groups.py), which needs VPC CNI 1.18.5 or later
(gpufleet.facts.addons)."""

from __future__ import annotations

from gpufleet.facts import catalog
from gpufleet.spec.fleet import Fabric, NodeGroup


def efa_interfaces(group: NodeGroup) -> int:
    """EFA interfaces to attach: one per network card, up to the type's maximum."""
    info = catalog.lookup(group.instance_type)
    if info is None:
        return 0
    return min(info.max_efa_interfaces, info.network_cards)


def efa_only_interfaces(group: NodeGroup) -> bool:
    """The group attaches EFA-only interfaces: an EFA group whose type has more than one EFA network card."""
    return group.fabric is Fabric.EFA and efa_interfaces(group) > 1
