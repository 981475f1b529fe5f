"""Rules on provisioner Karpenter: what only a managed node group has, and the NodePool's capacity fallback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import assert_never

from gpufleet.base.errors import Issue, Path
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec.fleet import CapacityType, Fleet, NodeGroup
from gpufleet.spec.provisioning import provisioning

# Karpenter's own order of capacity types within one NodePool: "Prioritization is as follows: reserved, spot,
# on-demand" (aws/karpenter-provider-aws pkg/providers/instance/instance.go getCapacityType @ v1.14.1); the NodePool
# requirement karpenter.sh/capacity-type is a set, so no list order can change it.
KARPENTER_CAPACITY_ORDER = ("Reserved", "Spot", "OnDemand")


def _fallback(path: Path, group: NodeGroup) -> Iterator[Issue]:
    """capacity.fallback (Karpenter): written in Karpenter's order, beside capacity.type OnDemand, with Reserved
    exactly when a reservation is named."""
    fallback = group.capacity_fallback
    at = path + ("capacity", "fallback")
    if provisioning(group).auto_scaling_group:
        yield Issue(
            path=at,
            at_key=True,
            message=(
                "fallback is a Karpenter NodePool's list of capacity types; a managed node group launches one capacity"
                " type"
            ),
            hint="remove capacity.fallback, or use provisioner Karpenter",
        )
        return
    ordered = sorted(fallback, key=KARPENTER_CAPACITY_ORDER.index)
    if list(fallback) != ordered:
        yield Issue(
            path=at,
            message=(
                f"[{', '.join(fallback)}]: within one NodePool Karpenter always tries reserved capacity first, then"
                " Spot, then On-Demand, whatever order the list has"
            ),
            hint=(
                f"write [{', '.join(ordered)}]; to prefer On-Demand over Spot, make two groups and name the On-Demand"
                " one first in the teams' quotas (Kueue tries a ClusterQueue's flavors in order)"
            ),
        )
    if group.capacity_type is not CapacityType.ON_DEMAND:
        yield Issue(
            path=path + ("capacity", "type"),
            message=f"capacity.type {group.capacity_type} beside fallback: fallback names the capacity types itself",
            hint="remove capacity.type (OnDemand, the price basis of the estimate) and keep fallback",
        )
    if "Reserved" in fallback and group.reservation is None:
        yield Issue(
            path=at,
            message="Reserved needs the capacity reservation the pool launches into first",
            hint=(
                "add capacity.reservation: {tags: {<key>: <value>}, instanceCount: <instances reserved>} (or id:"
                " cr-... for one reservation)"
            ),
        )
    if "Reserved" not in fallback and group.reservation is not None:
        yield Issue(
            path=path + ("capacity", "reservation"),
            at_key=True,
            message=(
                f"the reservation is never used: fallback [{', '.join(fallback)}] has no Reserved, so Karpenter"
                " launches no reserved capacity"
            ),
            hint="put Reserved first in fallback, or remove reservation",
        )


@rule("karpenter")
def _karpenter(fleet: Fleet) -> Iterator[Issue]:
    """What only an EKS managed node group has, refused on a Karpenter group (provisioner: Karpenter), each at its
    own field.

    Why: docs/karpenter.md, "Design notes", karpenter._karpenter."""
    for path, group in each_group(fleet):
        if group.capacity_fallback:
            yield from _fallback(path, group)
        match group.provisioner:
            case "ManagedNodeGroup":
                yield from _launch_template_reservation(path, group)
            case "Karpenter":
                yield from _node_pool(path, group)
            case unknown:
                assert_never(unknown)


def _launch_template_reservation(path: Path, group: NodeGroup) -> Iterator[Issue]:
    r = group.reservation
    if r is not None and r.tags is not None:
        yield Issue(
            path=path + ("capacity", "reservation", "tags"),
            at_key=True,
            message=(
                "a managed node group's launch template targets a reservation by id or Capacity Reservation"
                " group; only Karpenter selects reservations by tags"
            ),
            hint="name the reservation by id, or use provisioner Karpenter",
        )


def _node_pool(path: Path, group: NodeGroup) -> Iterator[Issue]:
    if group.warm_pool is not None:
        warm = min(max(group.warm_pool.min_size, 1), group.max_size)  # what headroom keeps instead
        yield Issue(
            path=path + ("warmPool",),
            at_key=True,
            message=(
                "a Karpenter group cannot have a warm pool: warm pools belong to the Auto Scaling group of a"
                " managed node group, and Karpenter launches instances without one"
            ),
            hint=f"replace warmPool with headroom: {{nodes: {warm}}}"
            " (placeholder pods keep that many nodes running; docs/karpenter.md), or use provisioner"
            " ManagedNodeGroup",
        )
    if group.desired_size is not None:
        yield Issue(
            path=path + ("scaling", "desiredSize"),
            at_key=True,
            message=(
                "desiredSize is a managed node group's initial size; Karpenter creates nodes only for pending pods"
            ),
            hint="remove scaling.desiredSize",
        )
    if group.min_size > 0:
        yield Issue(
            path=path + ("scaling", "minSize"),
            message=(
                f"minSize {group.min_size}: a Karpenter NodePool keeps no minimum of nodes; it creates them for"
                " pending pods and removes them when empty"
            ),
            hint="set minSize to 0, or use provisioner ManagedNodeGroup for nodes that always run",
        )
    for key, value in (
        ("maxUnavailable", group.update.max_unavailable),
        ("maxUnavailablePercentage", group.update.max_unavailable_percentage),
    ):
        if value is not None:
            yield Issue(
                path=path + ("update", key),
                at_key=True,
                message=(
                    f"update.{key} is a managed node group's update config; Karpenter replaces drifted nodes"
                    " under its NodePool's disruption budget"
                ),
                hint=f"remove update.{key}",
            )
    r = group.reservation
    if r is not None and r.resource_group_arn is not None:
        yield Issue(
            path=path + ("capacity", "reservation", "resourceGroupArn"),
            at_key=True,
            message=(
                "Karpenter selects capacity reservations by id or tags (capacityReservationSelectorTerms), not by"
                " a Capacity Reservation group"
            ),
            hint="name the reservation: reservation: {id: cr-..., instanceCount: <instances reserved>}",
        )
    if r is not None and r.open:
        yield Issue(
            path=path + ("capacity", "reservation", "open"),
            at_key=True,
            message=(
                "Karpenter launches into a capacity reservation only when its EC2NodeClass selects it; open"
                " matching of any reservation is not available"
            ),
            hint="name the reservation: reservation: {id: cr-..., instanceCount: <instances reserved>}",
        )
