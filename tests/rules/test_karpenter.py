"""The rules of gpufleet/rules/karpenter.py (provisioner Karpenter) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import ODCR, ODCR_GROUP, Patch, build, found, group

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # karpenter
    pytest.param("karpenter", [group(provisioner="Karpenter")], [], id="karpenter/plain"),
    pytest.param("karpenter", [group(warmPool={"minSize": 1})], [], id="karpenter/managed-warm-pool"),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", warmPool={"minSize": 1})],
        [
            (
                "nodeGroups[0].warmPool",
                "a Karpenter group cannot have a warm pool: warm pools belong to the Auto Scaling group of a managed"
                " node group, and Karpenter launches instances without one",
            )
        ],
        id="karpenter/warm-pool",
    ),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", scaling={"minSize": 1, "maxSize": 4, "desiredSize": 2})],
        [
            (
                "nodeGroups[0].scaling.desiredSize",
                "desiredSize is a managed node group's initial size; Karpenter creates nodes only for pending pods",
            ),
            (
                "nodeGroups[0].scaling.minSize",
                "minSize 1: a Karpenter NodePool keeps no minimum of nodes; it creates them for pending pods and"
                " removes them when empty",
            ),
        ],
        id="karpenter/sizes",
    ),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", update={"maxUnavailablePercentage": 25})],
        [
            (
                "nodeGroups[0].update.maxUnavailablePercentage",
                "update.maxUnavailablePercentage is a managed node group's update config; Karpenter replaces drifted"
                " nodes under its NodePool's disruption budget",
            )
        ],
        id="karpenter/update",
    ),
    pytest.param(
        "karpenter",
        [
            group(
                provisioner="Karpenter", capacity={"reservation": {"resourceGroupArn": ODCR_GROUP, "instanceCount": 4}}
            )
        ],
        [
            (
                "nodeGroups[0].capacity.reservation.resourceGroupArn",
                "Karpenter selects capacity reservations by id or tags (capacityReservationSelectorTerms), not by a"
                " Capacity Reservation group",
            )
        ],
        id="karpenter/reservation-group",
    ),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", capacity={"reservation": {"open": True, "instanceCount": 4}})],
        [
            (
                "nodeGroups[0].capacity.reservation.open",
                "Karpenter launches into a capacity reservation only when its EC2NodeClass selects it; open matching"
                " of any reservation is not available",
            )
        ],
        id="karpenter/reservation-open",
    ),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", capacity={"reservation": {"id": ODCR, "instanceCount": 4}})],
        [],
        id="karpenter/reservation-id",
    ),
    # capacity.fallback (Karpenter's order: reserved, spot, on-demand) and reservations selected by tags
    pytest.param(
        "karpenter",
        [
            group(
                provisioner="Karpenter",
                capacity={
                    "fallback": ["Reserved", "Spot", "OnDemand"],
                    "reservation": {"tags": {"ai-on-eks": "true"}, "instanceCount": 2},
                },
            )
        ],
        [],
        id="karpenter/fallback",
    ),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", capacity={"fallback": ["OnDemand", "Spot"]})],
        [
            (
                "nodeGroups[0].capacity.fallback",
                "[OnDemand, Spot]: within one NodePool Karpenter always tries reserved capacity first, then Spot, then"
                " On-Demand, whatever order the list has",
            )
        ],
        id="karpenter/fallback-order",
    ),
    pytest.param(
        "karpenter",
        [group(provisioner="Karpenter", capacity={"type": "Spot", "fallback": ["Reserved", "OnDemand"]})],
        [
            (
                "nodeGroups[0].capacity.type",
                "capacity.type Spot beside fallback: fallback names the capacity types itself",
            ),
            ("nodeGroups[0].capacity.fallback", "Reserved needs the capacity reservation the pool launches into first"),
        ],
        id="karpenter/fallback-type-and-no-reservation",
    ),
    pytest.param(
        "karpenter",
        [
            group(
                provisioner="Karpenter",
                capacity={"fallback": ["Spot", "OnDemand"], "reservation": {"id": ODCR, "instanceCount": 4}},
            )
        ],
        [
            (
                "nodeGroups[0].capacity.reservation",
                "the reservation is never used: fallback [Spot, OnDemand] has no Reserved, so Karpenter launches no"
                " reserved capacity",
            )
        ],
        id="karpenter/fallback-unused-reservation",
    ),
    pytest.param(
        "karpenter",
        [
            group(
                capacity={"fallback": ["Spot", "OnDemand"], "reservation": {"tags": {"team": "ml"}, "instanceCount": 1}}
            )
        ],
        [
            (
                "nodeGroups[0].capacity.fallback",
                "fallback is a Karpenter NodePool's list of capacity types; a managed node group launches one capacity"
                " type",
            ),
            (
                "nodeGroups[0].capacity.reservation.tags",
                "a managed node group's launch template targets a reservation by id or Capacity Reservation group;"
                " only Karpenter selects reservations by tags",
            ),
        ],
        id="karpenter/fallback-and-tags-on-a-managed-group",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
