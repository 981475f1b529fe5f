"""Capacity reservation checks.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/reservations.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.preflight.clients import ApiError, call, paginate
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec import defaults
from gpufleet.spec.fleet import CapacityType, Fabric, NodeGroup


def _describe(ctx: Context, reservation_id: str) -> Mapping[str, Any] | None:
    try:
        found = call(
            ctx.clients.capacity_reservations, "describe_capacity_reservations", CapacityReservationIds=[reservation_id]
        )
    except ApiError as exc:
        if exc.code.startswith("InvalidCapacityReservationId"):  # .NotFound, .Malformed
            return None
        raise
    reservations = found.get("CapacityReservations", [])
    return reservations[0] if reservations else None


def _placement(ctx: Context, group: NodeGroup, rid: str, r: Mapping[str, Any]) -> Iterator[AccountFinding]:
    """Where the reservation sits: instance type, platform, tenancy, zone (shared by Capacity Blocks and ODCRs)."""
    field = "reservationId" if group.capacity_type is CapacityType.CAPACITY_BLOCK else "reservation.id"
    if r.get("InstanceType") != group.instance_type:
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} is for {r.get('InstanceType')}, the group runs {group.instance_type}",
            hint=(
                f"set instanceType to {r.get('InstanceType')}, or capacity.{field} to a reservation of"
                f" {group.instance_type}"
            ),
        )
    platform = str(r.get("InstancePlatform", "Linux/UNIX"))
    if not platform.startswith("Linux/UNIX"):
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} is for platform {platform}; EKS nodes run Linux/UNIX",
            hint="use a Linux/UNIX reservation",
        )
    tenancy = str(r.get("Tenancy", "default"))
    if tenancy != "default":
        # Instances match a reservation of their own tenancy (capacity-reservations-launch.html); the launch
        # template sets none, so nodes run with default tenancy.
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} is for {tenancy} tenancy; the group's nodes run with default tenancy",
            hint="use a reservation with default tenancy",
        )
    zone = str(r.get("AvailabilityZoneId", ""))
    if group.zone is not None and zone != group.zone:
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=(
                f"reservation {rid} is in {ctx.zone_label(zone)}, the group is pinned to {ctx.zone_label(group.zone)}"
            ),
            hint=f"set zone to {zone} and subnetIds to a subnet there",
        )
    elif group.zone is None:
        outside = sorted(ctx.group_subnet_zones(group) - {zone})
        if outside:
            yield AccountFinding(
                severity="error",
                node_group=group.name,
                message=(
                    f"reservation {rid} is in {ctx.zone_label(zone)}, but the group's subnets reach"
                    f" {', '.join(ctx.zone_label(z) for z in outside)}"
                ),
                hint=(
                    f"set zone: {zone} and subnetIds to the subnet in that zone (the nodes launch only in the"
                    " reservation's zone)"
                ),
            )


def _capacity_block(ctx: Context, group: NodeGroup, rid: str, r: Mapping[str, Any]) -> Iterator[AccountFinding]:
    state = str(r.get("State", ""))
    if state == "scheduled":
        yield AccountFinding(
            severity="warning",
            node_group=group.name,
            message=(
                f"Capacity Block {rid} is scheduled, not active yet: nodes launch from"
                f" {r.get('StartDate', 'its start date')}"
            ),
            hint="nothing to do before it starts; keep desiredSize 0 until then to avoid launch errors",
        )
    elif state != "active":
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} is {state}, not active",
            hint="buy a new Capacity Block and set capacity.reservationId to it",
        )
    kind = r.get("ReservationType", "default")
    if kind != "capacity-block":
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} is a {kind} capacity reservation, not a Capacity Block",
            hint=(
                f"for an On-Demand Capacity Reservation write capacity: {{type: OnDemand, reservation: {{id: {rid},"
                f" instanceCount: {r.get('TotalInstanceCount', 'N')}}}}}"
            ),
        )
    yield from _placement(ctx, group, rid, r)
    total = int(r.get("TotalInstanceCount", 0))
    if total < group.max_size:
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} holds {total} instance(s) but scaling.maxSize is {group.max_size}",
            hint=f"lower scaling.maxSize to {total}, or buy a Capacity Block of {group.max_size} instances",
        )


def _odcr(ctx: Context, group: NodeGroup, rid: str, count: int, r: Mapping[str, Any]) -> Iterator[AccountFinding]:
    state = str(r.get("State", ""))
    if state != "active":
        # ODCR states: active, expired, cancelled, pending, failed, scheduled, ... (DescribeCapacityReservations);
        # instances launch only into an active one (capacity-reservations-launch.html).
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=f"reservation {rid} is {state}, not active: instances launch only into an active reservation",
            hint="set capacity.reservation.id to an active On-Demand Capacity Reservation",
        )
    if r.get("ReservationType", "default") == "capacity-block":
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=(
                f"reservation {rid} is a Capacity Block, not an On-Demand Capacity Reservation: it launches only with"
                " market type capacity-block"
            ),
            hint=f"write capacity: {{type: CapacityBlock, reservationId: {rid}}}",
        )
    yield from _placement(ctx, group, rid, r)
    total = int(r.get("TotalInstanceCount", 0))
    if total < group.max_size:
        yield AccountFinding(
            severity="error",
            node_group=group.name,
            message=(
                f"reservation {rid} holds {total} instance(s) but scaling.maxSize is {group.max_size}: launches into a"
                " full targeted reservation fail"
            ),
            hint=f"lower scaling.maxSize and capacity.reservation.instanceCount to {total}, or enlarge the reservation",
        )
    elif total != count:
        yield AccountFinding(
            severity="warning",
            node_group=group.name,
            message=(
                f"reservation {rid} holds {total} instance(s), capacity.reservation.instanceCount says {count}: the"
                f" cost estimate counts {count}"
            ),
            hint=f"set capacity.reservation.instanceCount to {total}",
        )
    available = int(r.get("AvailableInstanceCount", 0))
    wanted = defaults.desired_size(group)
    if available < wanted:
        yield AccountFinding(
            severity="warning",
            node_group=group.name,
            message=(
                f"reservation {rid} has {available} of {total} instance(s) free; the group starts {wanted}: launches"
                " beyond the free ones fail until instances in it stop"
            ),
            hint=(
                "stop what else runs in the reservation, or lower scaling.desiredSize (instances of this fleet already"
                " in it are fine)"
            ),
        )
    if group.fabric is Fabric.EFA:
        yield from _placement_group(ctx, group, rid, r)


def _placement_group(ctx: Context, group: NodeGroup, rid: str, r: Mapping[str, Any]) -> Iterator[AccountFinding]:
    """An EFA group's placement group against its targeted reservation's.

    Why: docs/commands.md, "Design notes", reservations._placement_group."""
    arn = r.get("PlacementGroupArn")
    reserved = str(arn).rsplit("/", 1)[-1] if arn else None
    spec = group.placement_group
    launches = (
        "no placement group"
        if spec == "None"
        else (
            f"placement group {spec}"
            if spec is not None
            else f"its own new cluster placement group {ctx.fleet.name}-{group.name}"
        )
    )
    wanted = reserved if reserved is not None else "None"
    if (spec or f"{ctx.fleet.name}-{group.name}") == wanted:
        return
    where = f"in placement group {reserved}" if reserved else "outside any placement group"
    if reserved is not None:
        fix = f"set placementGroup: {reserved} (the reservation's)"
    else:
        fix = (
            "reserve inside a cluster placement group, as EC2 recommends (aws ec2 create-placement-group --strategy"
            " cluster, then aws ec2 create-capacity-reservation --placement-group-arn <its ARN> ...), and set"
            " placementGroup to its name; or set placementGroup: None to launch without one"
        )
    yield AccountFinding(
        severity="error",
        node_group=group.name,
        message=(
            f"reservation {rid} was created {where}, but the group launches into {launches}: an instance in a cluster"
            " placement group can use only a reservation created in it, so launches miss the reservation"
        ),
        hint=fix,
    )


def _open(ctx: Context, group: NodeGroup, count: int) -> Iterator[AccountFinding]:
    zones = {group.zone} if group.zone is not None else set(ctx.group_subnet_zones(group))
    found = paginate(
        ctx.clients.capacity_reservations,
        "describe_capacity_reservations",
        "CapacityReservations",
        Filters=[
            {"Name": "instance-type", "Values": [group.instance_type]},
            {"Name": "state", "Values": ["active"]},
            {"Name": "instance-match-criteria", "Values": ["open"]},
        ],
    )
    usable = [
        r
        for r in found
        if r.get("AvailabilityZoneId") in zones
        and str(r.get("InstancePlatform", "Linux/UNIX")).startswith("Linux/UNIX")
        and r.get("Tenancy", "default") == "default"
    ]
    total = sum(int(r.get("TotalInstanceCount", 0)) for r in usable)
    if total < count:
        yield AccountFinding(
            severity="warning",
            node_group=group.name,
            message=(
                f"the active open reservations of {group.instance_type} in"
                f" {', '.join(sorted(ctx.zone_label(z) for z in zones))} hold {total} instance(s),"
                f" capacity.reservation.instanceCount says {count}: nodes beyond them run as plain On-Demand"
            ),
            hint=f"set capacity.reservation.instanceCount to {total}, or create the open reservation",
        )


def _missing(ctx: Context, group: NodeGroup, rid: str, field: str) -> AccountFinding:
    return AccountFinding(
        severity="error",
        node_group=group.name,
        message=f"capacity reservation {rid} does not exist in {ctx.region} (or is not visible to this account)",
        hint=f"check capacity.{field} against: aws ec2 describe-capacity-reservations --region {ctx.region}",
    )


def check_reservations(ctx: Context) -> Iterator[AccountFinding]:
    for group in ctx.fleet.node_groups:
        odcr = group.reservation
        if group.capacity_type is CapacityType.CAPACITY_BLOCK and group.reservation_id is not None:
            found = _describe(ctx, group.reservation_id)
            yield from (
                _capacity_block(ctx, group, group.reservation_id, found)
                if found
                else [_missing(ctx, group, group.reservation_id, "reservationId")]
            )
        elif odcr is not None and odcr.id is not None:
            found = _describe(ctx, odcr.id)
            yield from (
                _odcr(ctx, group, odcr.id, odcr.instance_count, found)
                if found
                else [_missing(ctx, group, odcr.id, "reservation.id")]
            )
        elif odcr is not None and odcr.open:
            yield from _open(ctx, group, odcr.instance_count)
