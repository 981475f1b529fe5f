"""Rules on how a node group buys capacity (Capacity Blocks, On-Demand Capacity Reservations, Spot) and on the
headroom placeholders that keep its nodes warm.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/rules/capacity.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue, Path
from gpufleet.facts import catalog
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec import defaults
from gpufleet.spec.fleet import CapacityType, Fleet, NodeGroup, falls_back
from gpufleet.spec.names import HEADROOM_PRIORITY
from gpufleet.spec.provisioning import provisioning, scaled_by


@rule("capacity")
def _capacity(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        if group.capacity_type is CapacityType.CAPACITY_BLOCK and group.reservation_id is None:
            yield Issue(
                path=path + ("capacity", "type"),
                message=(
                    "CapacityBlock needs reservationId: the capacity reservation (cr-...) of the purchased Capacity"
                    " Block"
                ),
                hint="add capacity.reservationId, e.g. reservationId: cr-0123456789abcdef0",
            )
        if group.capacity_type is CapacityType.ON_DEMAND and group.reservation_id is not None:
            # The Capacity Block field on an OnDemand group: it is an ODCR (preflight tells a Capacity Block
            # apart by its ReservationType when the guess is wrong).
            yield Issue(
                path=path + ("capacity", "reservationId"),
                at_key=True,
                message=(
                    "reservationId names a Capacity Block (type CapacityBlock); an On-Demand Capacity Reservation"
                    " (ODCR) is capacity.reservation"
                ),
                hint=(
                    f"replace reservationId with reservation: {{id: {group.reservation_id}, instanceCount: <instances"
                    " reserved>}"
                ),
            )
        elif group.capacity_type is CapacityType.SPOT and group.reservation_id is not None:
            yield Issue(
                path=path + ("capacity", "reservationId"),
                at_key=True,
                message=(
                    "reservationId is only used with capacity type CapacityBlock; Spot Instances do not launch into"
                    " capacity reservations"
                ),
                hint="remove reservationId",
            )
        if group.reservation is not None:
            yield from _reservation(fleet, path + ("capacity", "reservation"), group)


def _reservation(fleet: Fleet, path: Path, group: NodeGroup) -> Iterator[Issue]:
    r = group.reservation
    assert r is not None
    if group.capacity_type is not CapacityType.ON_DEMAND:
        yield Issue(
            path=path,
            at_key=True,
            message=(
                "reservation is an On-Demand Capacity Reservation (ODCR): it is used only with capacity type OnDemand,"
                f" not {group.capacity_type}"
            ),
            hint="remove reservation",
        )
        return
    # Karpenter selects reservations by id or tags (EC2NodeClass capacityReservationSelectorTerms), a launch
    # template targets one by id, Capacity Reservation group or open matching.
    karpenter = not provisioning(group).auto_scaling_group
    targets = [
        key
        for key, set_ in (
            ("id", r.id is not None),
            ("resourceGroupArn", r.resource_group_arn is not None),
            ("open", r.open),
            # tags are Karpenter's alone (rule karpenter refuses them on a managed node group)
            ("tags", r.tags is not None and karpenter),
        )
        if set_
    ]
    if len(targets) != 1:
        said = " and ".join(targets) if targets else "none of them"
        if karpenter:
            # rule karpenter refuses resourceGroupArn and open on a Karpenter group at their own fields
            if not (r.id is not None and r.tags is not None):
                return
            yield Issue(
                path=path,
                at_key=True,
                message=f"reservation names exactly one of id or tags; it names {said}",
                hint="keep one: id (one reservation) or tags (every reservation with those tags)",
            )
            return
        yield Issue(
            path=path,
            at_key=True,
            message=f"reservation names exactly one of id, resourceGroupArn or open; it names {said}",
            hint="keep one: id (one reservation), resourceGroupArn (a Capacity Reservation group) or open: true",
        )
        return
    if (r.id is not None or r.tags is not None) and group.max_size > r.instance_count and not falls_back(group):
        # "Specify Capacity Reservation: ...
        yield Issue(
            path=path + ("instanceCount",),
            message=(
                f"maxSize {group.max_size} is more than the {r.instance_count} instance(s) reserved: launches into a"
                " full targeted reservation fail"
            ),
            hint=f"lower scaling.maxSize to {r.instance_count}",
        )
    if r.resource_group_arn is not None and r.resource_group_arn.split(":")[3] != fleet.cluster.region:
        yield Issue(
            path=path + ("resourceGroupArn",),
            message=(
                f"the Capacity Reservation group is in {r.resource_group_arn.split(':')[3]}, the cluster in"
                f" {fleet.cluster.region}: a launch template targets a group of its own region"
            ),
            hint="use the ARN of a Capacity Reservation group in the cluster's region",
        )
    usable = min(r.instance_count, group.max_size)
    # A Karpenter pool keeps no minimum (rule karpenter): the advice to raise minSize is a managed node group's.
    if group.min_size < usable and provisioning(group).auto_scaling_group:
        yield Issue(
            path=path + ("instanceCount",),
            severity="warning",
            message=(
                f"{r.instance_count} reserved instance(s) are billed around the clock whether they run or not; minSize"
                f" {group.min_size} keeps {group.min_size} of them running"
            ),
            hint=f"set scaling.minSize to {usable}: running reserved instances costs nothing more",
        )


@rule("headroom")
def _headroom(fleet: Fleet) -> Iterator[Issue]:
    """headroom: placeholder pods that keep whole nodes free for serving.

    Why: docs/stage-1.md, "Design notes", capacity._headroom."""
    held = False
    for path, group in each_group(fleet):
        if group.headroom is None:
            continue
        held = True
        nodes = group.headroom.nodes
        if nodes > group.max_size:
            yield Issue(
                path=path + ("headroom", "nodes"),
                message=f"a headroom of {nodes} node(s) is larger than the group's maxSize {group.max_size}",
                hint=f"the placeholders hold only nodes the group may run: set headroom.nodes to {group.max_size} or"
                " less, or raise scaling.maxSize",
            )
        if scaled_by(fleet, group) is None and nodes > group.min_size:
            yield Issue(
                path=path + ("headroom", "nodes"),
                message=(
                    f"a headroom of {nodes} node(s) on a group of minSize {group.min_size} that nothing scales up"
                    " (cluster.autoscaler is None): the placeholders beyond minSize stay Pending and keep no node warm"
                ),
                hint=f"set cluster.autoscaler: Install, or headroom.nodes to at most minSize ({group.min_size})",
            )
        replica = fleet.workloads.inference_replica_gpus.get(group.name)
        info = catalog.lookup(group.instance_type)
        per = -(-replica // info.gpu_count) if replica and info and info.gpu_count else 1
        if per > 1 and nodes % per:
            yield Issue(
                path=path + ("headroom", "nodes"),
                severity="warning",
                message=(
                    f"a serving replica of {replica} GPUs takes {per} nodes of {group.instance_type}"
                    f" (workloads.inferenceReplicaGpus.{group.name}): a headroom of {nodes} node(s) keeps"
                    f" {nodes // per} whole replica(s) warm, and the next replica's other node(s) start cold"
                ),
                hint=f"set headroom.nodes to a multiple of {per}",
            )
        if defaults.placement(fleet, group) != "None":
            yield Issue(
                path=path + ("headroom",),
                at_key=True,
                message=(
                    f"headroom on a topology-aware group (placement {defaults.placement(fleet, group)}): Kueue TAS"
                    " counts the group's nodes as its own and would find the placeholders' GPUs taken"
                ),
                hint="set topology.placement: None on the group, or remove headroom",
            )
    if not held:
        return
    for i, priority in enumerate(fleet.admission.priorities):
        if not priority.preemptible and priority.value <= HEADROOM_PRIORITY:
            yield Issue(
                path=("admission", "priorities", i, "value"),
                message=(
                    f"priority {priority.name} ({priority.value}) does not rank above the headroom placeholders"
                    f" ({HEADROOM_PRIORITY}): its pods cannot preempt them, so the warm nodes are never theirs"
                ),
                hint=f"give {priority.name} a value above {HEADROOM_PRIORITY}",
            )
