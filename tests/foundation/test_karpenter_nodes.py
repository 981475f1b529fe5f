"""The shape of a Karpenter group's nodes: an ordered capacity fallback (Karpenter tries reserved, then Spot, then
On-Demand within one NodePool), reservations selected by tags, and what the model makes of them. Every NodePool and
EC2NodeClass validates against the pinned Karpenter 1.14.1 CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.simulate.nodes import node_model
from tests.foundation.test_karpenter import _deployed, _object, mixed, mixed_spec

__all__ = ["mixed"]  # the fixture, shared
from tests.upstream import require_shared, validate_object

TAGS = {"ai-on-eks": "true"}
# notebooks (g5.xlarge, one A10G) may also get the larger one-A10G sizes
FLEXIBLE = ["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge"]


def nodes_spec() -> dict[str, Any]:
    """The mixed fleet, with l40s falling back from reservations selected by tag to Spot and On-Demand (ai-on-eks's
    GPU pools), and a100-mig from Spot to On-Demand."""
    data = mixed_spec()
    groups = {g["name"]: g for g in data["nodeGroups"]}
    groups["l40s"]["capacity"] = {
        "fallback": ["Reserved", "Spot", "OnDemand"],
        "reservation": {"tags": TAGS, "instanceCount": 2},
    }
    groups["a100-mig"]["capacity"] = {"fallback": ["Spot", "OnDemand"]}
    groups["notebooks"]["instanceTypes"] = FLEXIBLE
    return data


def plan_of(data: dict[str, Any], tmp: Path) -> RolloutPlan:
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return build_plan(load_fleet(str(path), "prod").environments["prod"], "prod")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> RolloutPlan:
    return plan_of(nodes_spec(), tmp_path_factory.mktemp("karpenter-nodes"))


def _requirements(plan: RolloutPlan, name: str) -> dict[str, list[str]]:
    spec = _object(plan, "NodePool", name)["spec"]["template"]["spec"]
    return {r["key"]: r["values"] for r in spec["requirements"]}


def test_fallback_is_the_pools_capacity_types_in_karpenters_order(nodes: RolloutPlan) -> None:
    assert _requirements(nodes, "l40s")["karpenter.sh/capacity-type"] == ["reserved", "spot", "on-demand"]
    assert _requirements(nodes, "a100-mig")["karpenter.sh/capacity-type"] == ["spot", "on-demand"]
    # a reservation without fallback stays reserved only
    assert _requirements(nodes, "br")["karpenter.sh/capacity-type"] == ["reserved"]


def test_reservations_selected_by_tags(nodes: RolloutPlan) -> None:
    assert _object(nodes, "EC2NodeClass", "l40s")["spec"]["capacityReservationSelectorTerms"] == [{"tags": TAGS}]
    assert "capacityReservationSelectorTerms" not in _object(nodes, "EC2NodeClass", "a100-mig")["spec"]


@pytest.mark.parametrize("kind", ["NodePool", "EC2NodeClass"])
@pytest.mark.parametrize("name", ["l40s", "a100-mig", "notebooks"])
def test_fallback_pools_validate_against_the_pinned_crds(nodes: RolloutPlan, kind: str, name: str) -> None:
    require_shared()
    assert validate_object(_deployed(_object(nodes, kind, name))) == []


def test_the_model_lets_a_fallback_pool_grow_past_its_reservation(nodes: RolloutPlan) -> None:
    """Once the 2 reserved instances are taken, l40s goes on with Spot and On-Demand: the reservation caps neither
    maxSize (rule capacity) nor the model's scale-up; a pool reserved only stays capped by it."""
    fleet = nodes.fleet
    l40s = node_model(nodes, fleet.node_group("l40s"))
    assert l40s.reserved is None and l40s.max_size == 12
    assert l40s.labels["karpenter.sh/capacity-type"] == "reserved"  # the first Karpenter tries
    assert node_model(nodes, fleet.node_group("a100-mig")).labels["karpenter.sh/capacity-type"] == "spot"
    assert node_model(nodes, fleet.node_group("br")).reserved == 2


def test_instance_types_of_one_gpu_are_the_pools_requirement(nodes: RolloutPlan) -> None:
    assert _requirements(nodes, "notebooks")["node.kubernetes.io/instance-type"] == FLEXIBLE
    # one A10G on every type: the GPU limit is still maxSize nodes
    assert _object(nodes, "NodePool", "notebooks")["spec"]["limits"] == {"nvidia.com/gpu": "20"}  # maxSize 20 x 1


def _cluster_queue(plan: RolloutPlan, team: str) -> dict[str, Any]:
    return _object(plan, "ClusterQueue", team)


def test_quotas_and_the_model_use_the_reference_shape(nodes: RolloutPlan, mixed: RolloutPlan) -> None:
    """The Kueue quota on notebooks and the modelled node are those of instanceType g5.xlarge, the smallest type the
    pool may launch: the flexible pool promises no more CPU or memory per GPU than every one of its nodes has."""
    for team in ("vision", "language", "speech"):
        flexible = [f for f in _cluster_queue(nodes, team)["spec"]["resourceGroups"][0]["flavors"]]
        single = [f for f in _cluster_queue(mixed, team)["spec"]["resourceGroups"][0]["flavors"]]
        assert [f for f in flexible if f["name"] == "notebooks"] == [f for f in single if f["name"] == "notebooks"]
    group = nodes.fleet.node_group("notebooks")
    assert node_model(nodes, group).allocatable == node_model(mixed, mixed.fleet.node_group("notebooks")).allocatable
