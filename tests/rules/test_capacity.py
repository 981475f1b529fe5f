"""The rules of gpufleet/rules/capacity.py (capacity and headroom) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import ODCR, ODCR_GROUP, Patch, at, build, found, group

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # headroom
    pytest.param("headroom", [group(headroom={"nodes": 4})], [], id="headroom/at-max-size"),
    pytest.param("headroom", [group(headroom={"nodes": 0})], [], id="headroom/off"),
    pytest.param(
        "headroom", [group(provisioner="Karpenter", headroom={"nodes": 1})], [], id="headroom/karpenter-without-ca"
    ),
    pytest.param(
        "headroom",
        [group(headroom={"nodes": 5})],
        [("nodeGroups[0].headroom.nodes", "a headroom of 5 node(s) is larger than the group's maxSize 4")],
        id="headroom/above-max-size",
    ),
    pytest.param(
        "headroom",
        [at("cluster", "autoscaler", value="None"), group(headroom={"nodes": 1})],
        [
            (
                "nodeGroups[0].headroom.nodes",
                "a headroom of 1 node(s) on a group of minSize 0 that nothing scales up (cluster.autoscaler is None):"
                " the placeholders beyond minSize stay Pending and keep no node warm",
            )
        ],
        id="headroom/nothing-scales-up",
    ),
    pytest.param(
        "headroom",
        [at("cluster", "autoscaler", value="None"), group(headroom={"nodes": 1}, scaling={"minSize": 1, "maxSize": 4})],
        [],
        id="headroom/within-min-size-without-ca",
    ),
    pytest.param(
        "headroom",
        [
            group(
                instanceType="p5.48xlarge",
                workloadClass="Training",
                fabric="EFA",
                zone="use1-az4",
                subnetIds=["subnet-0aa"],
                scaling={"minSize": 2, "maxSize": 2},
                headroom={"nodes": 1},
            ),
        ],
        [
            (
                "nodeGroups[0].headroom",
                "headroom on a topology-aware group (placement Preferred): Kueue TAS counts the group's nodes as its"
                " own and would find the placeholders' GPUs taken",
            )
        ],
        id="headroom/tas",
    ),
    pytest.param(
        "headroom",
        [
            group(headroom={"nodes": 1}),
            at("admission", "priorities", value=[{"name": "serving", "value": -10, "preemptible": False}]),
        ],
        [
            (
                "admission.priorities[0].value",
                "priority serving (-10) does not rank above the headroom placeholders (-10): its pods cannot preempt"
                " them, so the warm nodes are never theirs",
            )
        ],
        id="headroom/serving-not-above-placeholders",
    ),
    pytest.param(
        "headroom",
        [
            group(instanceType="g6e.12xlarge", workloadClass="Inference", headroom={"nodes": 1}),
            at("workloads", "inferenceReplicaGpus", value={"l4": 8}),
        ],
        [
            (
                "nodeGroups[0].headroom.nodes",
                "a serving replica of 8 GPUs takes 2 nodes of g6e.12xlarge (workloads.inferenceReplicaGpus.l4): a"
                " headroom of 1 node(s) keeps 0 whole replica(s) warm, and the next replica's other node(s) start"
                " cold",
            )
        ],
        id="headroom/part-of-a-multi-node-replica",
    ),
    pytest.param(
        "headroom",
        [
            group(instanceType="g6e.12xlarge", workloadClass="Inference", headroom={"nodes": 2}),
            at("workloads", "inferenceReplicaGpus", value={"l4": 8}),
        ],
        [],
        id="headroom/whole-multi-node-replicas",
    ),
    pytest.param(
        "headroom",
        [at("admission", "priorities", value=[{"name": "serving", "value": -10, "preemptible": False}])],
        [],
        id="headroom/low-serving-without-headroom",
    ),
    # a reservation that caps the pool: maxSize beyond it fails unless the fallback goes on past Reserved
    pytest.param(
        "capacity",
        [
            group(
                provisioner="Karpenter",
                capacity={"fallback": ["Reserved", "OnDemand"], "reservation": {"id": ODCR, "instanceCount": 2}},
            )
        ],
        [],
        id="capacity/karpenter-fallback-past-reservation",
    ),
    pytest.param(
        "capacity",
        [group(provisioner="Karpenter", capacity={"reservation": {"tags": {"team": "ml"}, "instanceCount": 2}})],
        [
            (
                "nodeGroups[0].capacity.reservation.instanceCount",
                "maxSize 4 is more than the 2 instance(s) reserved: launches into a full targeted reservation fail",
            )
        ],
        id="capacity/karpenter-tags-reserved-only",
    ),
    pytest.param(
        "capacity",
        [
            group(
                provisioner="Karpenter",
                capacity={"reservation": {"id": ODCR, "tags": {"team": "ml"}, "instanceCount": 4}},
            )
        ],
        [("nodeGroups[0].capacity.reservation", "reservation names exactly one of id or tags; it names id and tags")],
        id="capacity/karpenter-id-and-tags",
    ),
    # capacity
    pytest.param(
        "capacity",
        [group(capacity={"type": "CapacityBlock", "reservationId": "cr-0123456789abcdef0"})],
        [],
        id="capacity/block",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"type": "CapacityBlock"})],
        [
            (
                "nodeGroups[0].capacity.type",
                "CapacityBlock needs reservationId: the capacity reservation (cr-...) of the purchased Capacity Block",
            )
        ],
        id="capacity/block-without-reservation",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"type": "Spot", "reservationId": "cr-0123456789abcdef0"})],
        [
            (
                "nodeGroups[0].capacity.reservationId",
                (
                    "reservationId is only used with capacity type CapacityBlock; Spot Instances do not launch into"
                    " capacity reservations"
                ),
            )
        ],
        id="capacity/reservation-on-spot",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"reservationId": "cr-0123456789abcdef0"})],
        [
            (
                "nodeGroups[0].capacity.reservationId",
                (
                    "reservationId names a Capacity Block (type CapacityBlock); an On-Demand Capacity Reservation"
                    " (ODCR) is capacity.reservation"
                ),
            )
        ],
        id="capacity/reservation-id-on-on-demand",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"reservation": {"id": ODCR, "instanceCount": 4}}, scaling={"minSize": 4, "maxSize": 4})],
        [],
        id="capacity/odcr-targeted",
    ),
    pytest.param(
        "capacity",
        [
            group(
                capacity={"reservation": {"resourceGroupArn": ODCR_GROUP, "instanceCount": 2}},
                scaling={"minSize": 2, "maxSize": 8},
            )
        ],
        [],
        id="capacity/odcr-group-may-exceed-its-count",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"reservation": {"open": True, "instanceCount": 1}}, scaling={"minSize": 1, "maxSize": 4})],
        [],
        id="capacity/odcr-open",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"reservation": {"id": ODCR, "instanceCount": 4}})],
        [
            (
                "nodeGroups[0].capacity.reservation.instanceCount",
                (
                    "4 reserved instance(s) are billed around the clock whether they run or not; minSize 0 keeps 0 of"
                    " them running"
                ),
            )
        ],
        id="capacity/odcr-idle-reserved",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"reservation": {"id": ODCR, "instanceCount": 2}}, scaling={"minSize": 2, "maxSize": 4})],
        [
            (
                "nodeGroups[0].capacity.reservation.instanceCount",
                "maxSize 4 is more than the 2 instance(s) reserved: launches into a full targeted reservation fail",
            )
        ],
        id="capacity/odcr-targeted-above-count",
    ),
    pytest.param(
        "capacity",
        [
            group(
                capacity={"reservation": {"id": ODCR, "open": True, "instanceCount": 4}},
                scaling={"minSize": 4, "maxSize": 4},
            )
        ],
        [
            (
                "nodeGroups[0].capacity.reservation",
                "reservation names exactly one of id, resourceGroupArn or open; it names id and open",
            )
        ],
        id="capacity/odcr-two-targets",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"reservation": {"instanceCount": 4}}, scaling={"minSize": 4, "maxSize": 4})],
        [
            (
                "nodeGroups[0].capacity.reservation",
                "reservation names exactly one of id, resourceGroupArn or open; it names none of them",
            )
        ],
        id="capacity/odcr-no-target",
    ),
    pytest.param(
        "capacity",
        [
            group(
                capacity={
                    "reservation": {
                        "resourceGroupArn": ODCR_GROUP.replace("us-east-1", "us-west-2"),
                        "instanceCount": 1,
                    }
                },
                scaling={"minSize": 1, "maxSize": 4},
            )
        ],
        [
            (
                "nodeGroups[0].capacity.reservation.resourceGroupArn",
                (
                    "the Capacity Reservation group is in us-west-2, the cluster in us-east-1: a launch template"
                    " targets a group of its own region"
                ),
            )
        ],
        id="capacity/odcr-group-other-region",
    ),
    pytest.param(
        "capacity",
        [group(capacity={"type": "Spot", "reservation": {"id": ODCR, "instanceCount": 1}})],
        [
            (
                "nodeGroups[0].capacity.reservation",
                (
                    "reservation is an On-Demand Capacity Reservation (ODCR): it is used only with capacity type"
                    " OnDemand, not Spot"
                ),
            )
        ],
        id="capacity/odcr-on-spot",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
