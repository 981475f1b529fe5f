"""Kueue on DRA groups (issue 43 item 4): resources.deviceClassMappings in Kueue's Configuration name exactly the
DRA resources the ClusterQueues cover, the DRA flavor's quota is in claimed devices (0 of nvidia.com/gpu) and the
device-plugin flavors' 0 of those, TAS stays off DRA flavors, and plan.md says how the aligned claim's quota holds."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import fleet_from
from gpufleet.spec import defaults
from tests.dra.fleets import dra_data
from tests.upstream import validate_object

GPUS = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
EFAS = "efa.networking.k8s.aws.deviceclass.resource.k8s.io/devices"


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    return build_plan(fleet_from(dra_data()), "dev")


def _configuration(plan: RolloutPlan) -> dict[str, Any]:
    release = next(r for s in plan.stages for r in s.content.resources if r.id == "helm-kueue")
    loaded: dict[str, Any] = yaml.safe_load(release.args["values"]["managerConfig"]["controllerManagerConfigYaml"])
    return loaded


def _cluster_queue(plan: RolloutPlan) -> dict[str, Any]:
    return next(
        r.args["object"]
        for s in plan.stages
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == "ClusterQueue"
    )


def test_the_mappings_name_each_device_class_the_dra_group_claims(plan: RolloutPlan) -> None:
    assert _configuration(plan)["resources"]["deviceClassMappings"] == [
        {"name": GPUS, "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": EFAS, "deviceClassNames": ["efa.networking.k8s.aws"]},
    ]


def test_the_mappings_and_the_covered_resources_agree(plan: RolloutPlan) -> None:
    covered = _cluster_queue(plan)["spec"]["resourceGroups"][0]["coveredResources"]
    mapped = [m["name"] for m in _configuration(plan)["resources"]["deviceClassMappings"]]
    assert [c for c in covered if "deviceclass.resource.k8s.io" in c] == mapped


def test_the_dra_flavor_holds_claimed_devices_and_the_others_none(plan: RolloutPlan) -> None:
    flavors = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
        for f in _cluster_queue(plan)["spec"]["resourceGroups"][0]["flavors"]
    }
    assert (flavors["h100"]["nvidia.com/gpu"], flavors["h100"][GPUS], flavors["h100"][EFAS]) == (0, 8, 32)
    assert flavors["h100"]["vpc.amazonaws.com/efa"] == 0
    assert (flavors["l4"]["nvidia.com/gpu"], flavors["l4"][GPUS], flavors["l4"][EFAS]) == (4, 0, 0)


def test_the_cluster_queue_is_valid_against_the_pinned_crd(plan: RolloutPlan) -> None:
    assert validate_object(_cluster_queue(plan)) == []


def test_a_fleet_without_dra_groups_has_no_mappings() -> None:
    data = dra_data()
    data["nodeGroups"][1]["devices"] = "DevicePlugin"
    assert "deviceClassMappings" not in _configuration(build_plan(fleet_from(data), "dev"))["resources"]


def test_tas_is_not_the_default_on_a_dra_group_that_would_take_it() -> None:
    data = dra_data()
    data["nodeGroups"][1]["scaling"] = {"minSize": 2, "maxSize": 2}  # fixed size: TAS can count it
    fleet = fleet_from(data)
    assert defaults.placement(fleet, fleet.node_group("h100")) == "None"
    data["nodeGroups"][1]["devices"] = "DevicePlugin"
    data["teams"][0]["quotas"].pop(0)  # the team's only group, so nothing keeps it off TAS
    fleet = fleet_from(data)
    assert defaults.placement(fleet, fleet.node_group("h100")) == "Preferred"


def test_plan_md_says_how_teams_claim_and_how_the_aligned_claims_quota_holds(plan: RolloutPlan) -> None:
    text = plan_markdown(plan)
    assert "Node group `h100` hands out GPUs through Dynamic Resource Allocation" in text
    assert "The aligned claim (`<group>-gpu-efa`" in text
    assert "The namespace's ResourceQuota is the ceiling that does not depend on Kueue" in text
