"""Preflight of On-Demand Capacity Reservations (moto 5.2.5 has no DescribeCapacityReservations: Stubber).

The fixture fleet's `h100` group (p5.48xlarge, EFA, pinned to use1-az4, maxSize 2) is given a reservation; the
Stubber answers DescribeCapacityReservations with the exact parameters gpufleet must send.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gpufleet.commands.preflight import preflight
from gpufleet.preflight.clients import Clients
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.preflight.reservations import check_reservations
from gpufleet.spec.fleet import Fleet, Reservation
from tests.preflight.support import RESERVATION, World, all_clients, fleet_of, only, reservation, stubbed, with_group

ODCR = "cr-0a1b2c3d4e5f60718"
OPEN_FILTERS = [
    {"Name": "instance-type", "Values": ["p5.48xlarge"]},
    {"Name": "state", "Values": ["active"]},
    {"Name": "instance-match-criteria", "Values": ["open"]},
]


PG_ARN = "arn:aws:ec2:us-east-1:111122223333:placement-group/hpc"


def odcr(**changes: Any) -> dict[str, Any]:
    """An active targeted ODCR of two p5.48xlarge in use1-az4, both free, made in cluster placement group hpc, with
    `changes` applied."""
    return reservation(
        **{"CapacityReservationId": ODCR, "ReservationType": "default", "PlacementGroupArn": PG_ARN, **changes}
    )


def fleet(world: World, *, min_size: int = 2, placement_group: str | None = "hpc", **target: Any) -> Fleet:
    r = Reservation(
        id=target.get("id"),
        resource_group_arn=target.get("resource_group_arn"),
        open=target.get("open", False),
        instance_count=target.get("count", 2),
    )
    return with_group(
        only(fleet_of(world), "h100"),
        "h100",
        reservation=r,
        min_size=min_size,
        warm_pool=None,
        placement_group=placement_group,
    )


def run(world: World, fleet: Fleet, client: Any) -> list[AccountFinding]:
    clients = Clients(
        ec2=world.ec2, service_quotas=stubbed("service-quotas")[0], ssm=stubbed("ssm")[0], reservations=client
    )
    return list(check_reservations(Context(fleet, clients)))


def by_id(*answer: dict[str, Any], error: str | None = None, rid: str = ODCR) -> tuple[Any, Any]:
    client, stub = stubbed("ec2")
    params = {"CapacityReservationIds": [rid]}
    if error is not None:
        stub.add_client_error("describe_capacity_reservations", error, http_status_code=400, expected_params=params)
    else:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": list(answer)}, params)
    return client, stub


def test_a_targeted_reservation_that_fits_passes(world: World) -> None:
    client, stub = by_id(odcr())
    assert run(world, fleet(world, id=ODCR), client) == []
    stub.assert_no_pending_responses()


def test_a_missing_targeted_reservation_is_blocking(world: World) -> None:
    client, _ = by_id(error="InvalidCapacityReservationId.NotFound")
    (finding,) = run(world, fleet(world, id=ODCR), client)
    assert finding.blocking and finding.node_group == "h100"
    assert (
        finding.message
        == f"capacity reservation {ODCR} does not exist in us-east-1 (or is not visible to this account)"
    )
    assert (
        finding.hint
        == "check capacity.reservation.id against: aws ec2 describe-capacity-reservations --region us-east-1"
    )


@pytest.mark.parametrize(
    ("changes", "what", "fix"),
    [
        (
            {"State": "cancelled"},
            f"reservation {ODCR} is cancelled, not active: instances launch only into an active reservation",
            "set capacity.reservation.id to an active On-Demand Capacity Reservation",
        ),
        (
            {"ReservationType": "capacity-block"},
            (
                f"reservation {ODCR} is a Capacity Block, not an On-Demand Capacity Reservation: it launches only with"
                " market type capacity-block"
            ),
            f"write capacity: {{type: CapacityBlock, reservationId: {ODCR}}}",
        ),
        (
            {"InstanceType": "p5en.48xlarge"},
            f"reservation {ODCR} is for p5en.48xlarge, the group runs p5.48xlarge",
            "set instanceType to p5en.48xlarge, or capacity.reservation.id to a reservation of p5.48xlarge",
        ),
        (
            {"Tenancy": "dedicated"},
            f"reservation {ODCR} is for dedicated tenancy; the group's nodes run with default tenancy",
            "use a reservation with default tenancy",
        ),
        (
            {"AvailabilityZoneId": "use1-az6", "AvailabilityZone": "us-east-1a"},
            f"reservation {ODCR} is in use1-az6 (us-east-1a), the group is pinned to use1-az4 (us-east-1d)",
            "set zone to use1-az6 and subnetIds to a subnet there",
        ),
        (
            {"TotalInstanceCount": 1, "AvailableInstanceCount": 1},
            (
                f"reservation {ODCR} holds 1 instance(s) but scaling.maxSize is 2: launches into a full targeted"
                " reservation fail"
            ),
            "lower scaling.maxSize and capacity.reservation.instanceCount to 1, or enlarge the reservation",
        ),
    ],
    ids=["not-active", "capacity-block", "instance-type", "tenancy", "zone", "too-small"],
)
def test_a_targeted_reservation_that_does_not_fit_is_blocking(
    world: World, changes: dict[str, Any], what: str, fix: str
) -> None:
    client, _ = by_id(odcr(**changes))
    (finding,) = [f for f in run(world, fleet(world, id=ODCR), client) if f.blocking]
    assert (finding.node_group, finding.message, finding.hint) == ("h100", what, fix)


def test_a_capacity_block_group_given_an_odcr_says_how_to_write_one(world: World) -> None:
    client, _ = by_id(reservation(ReservationType="default", TotalInstanceCount=2), rid=RESERVATION)
    (finding,) = run(world, only(fleet_of(world), "cb"), client)
    assert (
        finding.blocking
        and finding.message == f"reservation {RESERVATION} is a default capacity reservation, not a Capacity Block"
    )
    assert (
        finding.hint
        == f"for an On-Demand Capacity Reservation write capacity: {{type: OnDemand, reservation: {{id: {RESERVATION},"
        " instanceCount: 2}}"
    )


@pytest.mark.parametrize(
    ("changes", "what", "fix"),
    [
        (
            {"TotalInstanceCount": 4, "AvailableInstanceCount": 4},
            (
                f"reservation {ODCR} holds 4 instance(s), capacity.reservation.instanceCount says 2: the cost estimate"
                " counts 2"
            ),
            "set capacity.reservation.instanceCount to 4",
        ),
        (
            {"AvailableInstanceCount": 1},
            (
                f"reservation {ODCR} has 1 of 2 instance(s) free; the group starts 2: launches beyond the free ones"
                " fail until instances in it stop"
            ),
            (
                "stop what else runs in the reservation, or lower scaling.desiredSize (instances of this fleet already"
                " in it are fine)"
            ),
        ),
    ],
    ids=["count-differs", "fewer-free-than-desired"],
)
def test_what_a_targeted_reservation_only_warns_about(
    world: World, changes: dict[str, Any], what: str, fix: str
) -> None:
    client, _ = by_id(odcr(**changes))
    (finding,) = run(world, fleet(world, id=ODCR), client)
    assert (finding.blocking, finding.message, finding.hint) == (False, what, fix)


OUTSIDE_FIX = (
    "reserve inside a cluster placement group, as EC2 recommends (aws ec2 create-placement-group --strategy cluster,"
    " then aws ec2 create-capacity-reservation --placement-group-arn <its ARN> ...), and set placementGroup to its"
    " name; or set placementGroup: None to launch without one"
)


@pytest.mark.parametrize(
    ("reserved", "spec", "launches", "fix"),
    [
        (PG_ARN, "hpc", None, None),
        (None, "None", None, None),
        # The issue 29 item 15 case: before, gpufleet put the group into its own new placement group and only warned,
        # advising a reservation without a placement group (the opposite of EC2's advice).
        (PG_ARN, None, "its own new cluster placement group probe-h100", "set placementGroup: hpc (the reservation's)"),
        (PG_ARN, "other", "placement group other", "set placementGroup: hpc (the reservation's)"),
        (PG_ARN, "None", "no placement group", "set placementGroup: hpc (the reservation's)"),
        (None, None, "its own new cluster placement group probe-h100", OUTSIDE_FIX),
        (None, "hpc", "placement group hpc", OUTSIDE_FIX),
    ],
)
def test_the_group_launches_into_its_reservations_placement_group(
    world: World, reserved: str | None, spec: str | None, launches: str | None, fix: str | None
) -> None:
    answer = odcr(PlacementGroupArn=reserved)
    if reserved is None:
        del answer["PlacementGroupArn"]
    client, _ = by_id(answer)
    found = run(world, fleet(world, id=ODCR, placement_group=spec), client)
    if launches is None:
        assert found == []
        return
    (finding,) = found
    where = "in placement group hpc" if reserved else "outside any placement group"
    assert (finding.blocking, finding.message, finding.hint) == (
        True,
        f"reservation {ODCR} was created {where}, but the group launches into {launches}: an instance in a cluster"
        " placement group can use only a reservation created in it, so launches miss the reservation",
        fix,
    )


def open_client(*answer: dict[str, Any]) -> tuple[Any, Any]:
    client, stub = stubbed("ec2")
    stub.add_response(
        "describe_capacity_reservations", {"CapacityReservations": list(answer)}, {"Filters": OPEN_FILTERS}
    )
    return client, stub


def test_open_reservations_in_the_zone_that_hold_the_count_pass(world: World) -> None:
    client, stub = open_client(
        odcr(InstanceMatchCriteria="open", TotalInstanceCount=1),
        odcr(CapacityReservationId="cr-0ffffffffffffffff", InstanceMatchCriteria="open", TotalInstanceCount=1),
    )
    assert run(world, fleet(world, open=True), client) == []
    stub.assert_no_pending_responses()


def test_open_reservations_elsewhere_do_not_count(world: World) -> None:
    client, _ = open_client(
        odcr(InstanceMatchCriteria="open", AvailabilityZoneId="use1-az6", AvailabilityZone="us-east-1a")
    )
    (finding,) = run(world, fleet(world, open=True), client)
    assert not finding.blocking
    assert (
        finding.message == "the active open reservations of p5.48xlarge in use1-az4 (us-east-1d) hold 0 instance(s),"
        " capacity.reservation.instanceCount says 2: nodes beyond them run as plain On-Demand"
    )


def test_a_reservation_group_is_not_read(world: World) -> None:
    client, stub = stubbed("ec2")  # any call would fail: no response is queued
    assert (
        run(
            world, fleet(world, resource_group_arn="arn:aws:resource-groups:us-east-1:111122223333:group/odcrs"), client
        )
        == []
    )
    stub.assert_no_pending_responses()


def test_an_aws_error_on_the_reservation_call_is_a_finding(world: World) -> None:
    """The whole run turns an unexpected API error into one blocking finding naming the call."""
    client, _ = by_id(error="UnauthorizedOperation")
    clients, _ = all_clients(world)
    findings = preflight(fleet(world, id=ODCR), dataclasses.replace(clients, reservations=client))
    denied = [f for f in findings if "DescribeCapacityReservations" in f.message]
    assert len(denied) == 1 and denied[0].blocking, [f.render() for f in findings]
