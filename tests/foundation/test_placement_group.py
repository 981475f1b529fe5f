"""An EFA group can launch into an existing cluster placement group (its reservation's) or none (issue 29 item 15):
an instance in a cluster placement group can use only a Capacity Reservation created in it, and EC2 recommends
reserving inside the placement group (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html). Before,
every non-Capacity-Block EFA group got a new placement group of gpufleet's, which no existing reservation is in."""

from __future__ import annotations

import pytest

from gpufleet.base.errors import SpecError
from gpufleet.plan.parts import Ref
from tests.network.fleets import fleet, group, plan

PG_TYPE = "aws:ec2/placementGroup:PlacementGroup"


def _efa(placement: str | None = None, capacity: str = "") -> str:
    text = group("h100", "p5.48xlarge", "EFA")
    if placement is not None:
        text += f"    placementGroup: {placement}\n"
    return text + capacity


def _launch(placement: str | None) -> tuple[object, list[str]]:
    p = plan(fleet([_efa(placement)]))
    resources = [r for s in p.stages for r in s.content.resources]
    template = next(r for r in resources if r.id == "h100-launch-template")
    return template.args.get("placement"), [r.id for r in resources if r.type == PG_TYPE]


def test_a_named_placement_group_is_used_and_none_created() -> None:
    assert _launch("hpc-reserved") == ({"groupName": "hpc-reserved"}, [])


def test_none_launches_into_no_placement_group() -> None:
    assert _launch("None") == (None, [])


def test_omitted_gpufleet_creates_the_groups_own() -> None:
    placement, groups = _launch(None)
    assert groups == ["h100-placement-group"]
    assert placement == {"groupName": Ref("h100-placement-group", "name")}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            group("l4", "g6.xlarge") + "    placementGroup: hpc\n",
            "placementGroup has no effect on fabric None: only fabric EFA groups launch into a placement group",
        ),
        (
            _efa("hpc", "    capacity: {type: CapacityBlock, reservationId: cr-0123456789abcdef0}\n"),
            "a Capacity Block's instances are placed by EC2 (co-located in the block's UltraCluster), so it launches"
            " into no placement group",
        ),
    ],
    ids=["not-efa", "capacity-block"],
)
def test_where_a_placement_group_cannot_apply(text: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        fleet([text])
    assert [(i.path, i.message, i.hint) for i in err.value.issues] == [
        (("nodeGroups", 0, "placementGroup"), message, "remove placementGroup")
    ]
