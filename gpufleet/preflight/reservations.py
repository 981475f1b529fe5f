"""Capacity Block checks: the reservation a CapacityBlock group names exists, is (or will become) active, is a
Capacity Block for the group's instance type in the group's zone, and holds the group's maxSize.

Capacity Blocks are "targeted Capacity Reservations in a single Availability Zone"; an instance "can't launch
in a subnet in a different Availability Zone" from the block's (EC2 User Guide, capacity-blocks-using.html and
capacity-blocks-launch.html). States: payment-pending, payment-failed, scheduled, active, expired
(capacity-blocks-view.html). An EKS managed node group may be created before the block starts; it launches
nodes once the block is active (awsdocs/amazon-eks-user-guide `latest/ug/nodes/capacity-blocks-mng.adoc`).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from gpufleet.preflight.clients import ApiError, call
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import Finding
from gpufleet.spec import CapacityType, NodeGroup


def _describe(ctx: Context, reservation_id: str) -> Mapping[str, Any] | None:
    try:
        found = call(ctx.clients.capacity_reservations, "describe_capacity_reservations", CapacityReservationIds=[reservation_id])
    except ApiError as exc:
        if exc.code.startswith("InvalidCapacityReservationId"):  # .NotFound, .Malformed
            return None
        raise
    reservations = found.get("CapacityReservations", [])
    return reservations[0] if reservations else None


def _check(ctx: Context, group: NodeGroup, rid: str, r: Mapping[str, Any]) -> Iterator[Finding]:
    state = str(r.get("State", ""))
    if state == "scheduled":
        yield Finding(
            False,
            group.name,
            f"Capacity Block {rid} is scheduled, not active yet: nodes launch from {r.get('StartDate', 'its start date')}",
            "nothing to do before it starts; keep desiredSize 0 until then to avoid launch errors",
        )
    elif state != "active":
        yield Finding(True, group.name, f"reservation {rid} is {state}, not active", "buy a new Capacity Block and set capacity.reservationId to it")
    kind = r.get("ReservationType", "default")
    if kind != "capacity-block":
        yield Finding(
            True,
            group.name,
            f"reservation {rid} is a {kind} capacity reservation, not a Capacity Block",
            "set capacity.reservationId to the cr-... of a purchased Capacity Block",
        )
    if r.get("InstanceType") != group.instance_type:
        yield Finding(
            True,
            group.name,
            f"reservation {rid} is for {r.get('InstanceType')}, the group runs {group.instance_type}",
            f"set instanceType to {r.get('InstanceType')}, or reservationId to a block of {group.instance_type}",
        )
    platform = str(r.get("InstancePlatform", "Linux/UNIX"))
    if not platform.startswith("Linux/UNIX"):
        yield Finding(True, group.name, f"reservation {rid} is for platform {platform}; EKS nodes run Linux/UNIX", "use a Linux/UNIX Capacity Block")
    zone = str(r.get("AvailabilityZoneId", ""))
    if group.zone is not None and zone != group.zone:
        yield Finding(
            True,
            group.name,
            f"reservation {rid} is in {ctx.zone_label(zone)}, the group is pinned to {ctx.zone_label(group.zone)}",
            f"set zone to {zone} and subnetIds to a subnet there",
        )
    elif group.zone is None:
        outside = sorted(ctx.group_subnet_zones(group) - {zone})
        if outside:
            yield Finding(
                True,
                group.name,
                f"reservation {rid} is in {ctx.zone_label(zone)}, but the group's subnets reach {', '.join(ctx.zone_label(z) for z in outside)}",
                f"set zone: {zone} and subnetIds to the subnet in that zone (EKS takes only subnets in the block's zone)",
            )
    total = int(r.get("TotalInstanceCount", 0))
    if total < group.max_size:
        yield Finding(
            True,
            group.name,
            f"reservation {rid} holds {total} instance(s) but scaling.maxSize is {group.max_size}",
            f"lower scaling.maxSize to {total}, or buy a Capacity Block of {group.max_size} instances",
        )


def check_reservations(ctx: Context) -> Iterator[Finding]:
    for group in ctx.fleet.node_groups:
        rid = group.reservation_id
        if group.capacity_type is not CapacityType.CAPACITY_BLOCK or rid is None:
            continue
        reservation = _describe(ctx, rid)
        if reservation is None:
            yield Finding(
                True,
                group.name,
                f"capacity reservation {rid} does not exist in {ctx.region} (or is not visible to this account)",
                f"check capacity.reservationId against: aws ec2 describe-capacity-reservations --region {ctx.region}",
            )
            continue
        yield from _check(ctx, group, rid, reservation)
