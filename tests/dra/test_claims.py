"""What teams claim on a DRA group (issue 43 item 3): ResourceClaimTemplates in each team namespace with quota on
the group, whole GPUs by count and on EFA groups a GPU with an EFA interface on one PCIe root, and a ResourceQuota on
the claims' devices; every object valid against resource.k8s.io/v1 of Kubernetes 1.34."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import fleet_from
from tests.dra.fleets import dra_data


def _objects(plan: RolloutPlan, kind: str) -> list[dict[str, Any]]:
    return [
        r.args["object"]
        for s in plan.stages
        if s.name == "admission"
        for r in s.content.resources
        if r.type.startswith("kubernetes:") and r.args.get("object", {}).get("kind") == kind
    ]


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    data = dra_data()
    # A second team, with quota on the device-plugin group only: it gets no DRA objects.
    data["teams"].append({"name": "speech", "quotas": [{"nodeGroup": "l4", "gpus": 1}]})
    return build_plan(fleet_from(data), "dev")


def test_the_team_with_quota_on_the_dra_group_gets_its_templates(plan: RolloutPlan) -> None:
    templates = {(t["metadata"]["namespace"], t["metadata"]["name"]) for t in _objects(plan, "ResourceClaimTemplate")}
    assert templates == {
        ("vision", "h100-gpu-1"),
        ("vision", "h100-gpu-2"),
        ("vision", "h100-gpu-4"),
        ("vision", "h100-gpu-8"),
        ("vision", "h100-gpu-efa"),
    }


def test_whole_gpus_by_count(plan: RolloutPlan) -> None:
    four = next(t for t in _objects(plan, "ResourceClaimTemplate") if t["metadata"]["name"] == "h100-gpu-4")
    assert four["spec"] == {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 4},
                    }
                ]
            }
        }
    }


def test_the_aligned_claim_puts_a_gpu_and_an_efa_interface_on_one_pcie_root(plan: RolloutPlan) -> None:
    aligned = next(t for t in _objects(plan, "ResourceClaimTemplate") if t["metadata"]["name"] == "h100-gpu-efa")
    devices = aligned["spec"]["spec"]["devices"]
    assert [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in devices["requests"]] == [
        ("gpu", "gpu.nvidia.com", 1),
        ("efa", "efa.networking.k8s.aws", 1),
    ]
    assert devices["constraints"] == [{"requests": ["gpu", "efa"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]


def test_the_quota_caps_the_claims_devices_at_the_teams_quota(plan: RolloutPlan) -> None:
    (quota,) = _objects(plan, "ResourceQuota")
    assert quota["metadata"]["namespace"] == "vision"
    # 8 GPUs of p5.48xlarge (no cohort: nothing to borrow), and the 32 EFA interfaces of that node (4 per GPU).
    assert quota["spec"]["hard"] == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "8",
        "efa.networking.k8s.aws.deviceclass.resource.k8s.io/devices": "32",
    }


def test_borrowing_in_a_cohort_raises_the_ceiling_up_to_the_group() -> None:
    data = dra_data()
    data["teams"][0]["cohort"] = "research"
    data["teams"][0]["quotas"][1] |= {"gpus": 4, "borrowingLimit": 4}
    (quota,) = _objects(build_plan(fleet_from(data), "dev"), "ResourceQuota")
    assert quota["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "8"
    del data["teams"][0]["quotas"][1]["borrowingLimit"]
    (quota,) = _objects(build_plan(fleet_from(data), "dev"), "ResourceQuota")
    assert quota["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "16"  # 2 nodes x 8


def test_every_object_is_valid_resource_k8s_io_v1_of_kubernetes_1_34(plan: RolloutPlan) -> None:
    objects = _objects(plan, "ResourceClaimTemplate") + _objects(plan, "ResourceQuota")
    for obj in objects:
        kubernetes_validate.validate(obj, "1.34", strict=True)
    # The schemas hold the field names: `exactly` is where v1 puts them (v1beta1 had them on the request itself).
    wrong = {
        **objects[0],
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, "1.34", strict=True)
