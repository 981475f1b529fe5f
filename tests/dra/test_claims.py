"""What teams claim on a DRA group (issue 43 item 3): ResourceClaimTemplates in each team namespace with quota on
the group, whole GPUs by count and on EFA groups a GPU with an EFA interface on one PCIe root, and a ResourceQuota on
the claims' devices; every object valid against resource.k8s.io/v1 of Kubernetes 1.34."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from gpufleet.plan.manifests import dra
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


def test_the_aligned_claim_takes_one_pcie_roots_gpu_and_efa_interfaces(plan: RolloutPlan) -> None:
    # p5.48xlarge: each root holds 1 GPU and 4 EFA interfaces (gpufleet.facts.pcie)
    aligned = next(t for t in _objects(plan, "ResourceClaimTemplate") if t["metadata"]["name"] == "h100-gpu-efa")
    devices = aligned["spec"]["spec"]["devices"]
    assert [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in devices["requests"]] == [
        ("gpu", "gpu.nvidia.com", 1),
        ("efa", "efa.networking.k8s.aws", 4),
    ]
    assert devices["constraints"] == [{"requests": ["gpu", "efa"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]


@pytest.mark.parametrize(
    ("instance_type", "share"),
    [("p5.48xlarge", (1, 4)), ("p4d.24xlarge", (2, 1)), ("p5en.48xlarge", (1, 2))],  # p5en: not in the table
)
def test_the_aligned_claim_follows_the_instances_pcie_roots(instance_type: str, share: tuple[int, int]) -> None:
    data = dra_data()
    data["nodeGroups"][1]["instanceType"] = instance_type
    group = fleet_from(data).node_group("h100")
    assert dra.root_share(group) == share


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


def test_a_team_with_dra_quota_may_read_its_templates_and_claims(plan: RolloutPlan) -> None:
    roles = {r["metadata"]["namespace"]: r for r in _objects(plan, "Role") if r["metadata"]["name"] == "gpufleet-team"}
    dra_rules = {ns: [r for r in role["rules"] if r["apiGroups"] == ["resource.k8s.io"]] for ns, role in roles.items()}
    assert dra_rules["vision"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert dra_rules["speech"] == []  # quota on the device-plugin group only


def test_the_nccl_gate_of_a_dra_group_claims_every_pcie_root() -> None:
    data = dra_data()
    data["environments"]["dev"]["rollout"]["through"] = "network"
    data["nodeGroups"][1]["scaling"] = {"minSize": 1, "maxSize": 2}
    network = next(s for s in build_plan(fleet_from(data), "dev").stages if s.name == "network")
    objects = {r.args["object"]["kind"]: r for r in network.content.resources if "object" in r.args}
    template, job = objects["ResourceClaimTemplate"], objects["Job"]
    assert template.args["object"]["metadata"] == {
        **template.args["object"]["metadata"],
        "name": "nccl-gate-h100",
        "namespace": "gpufleet-network",
    }
    assert template.args["object"]["spec"]["spec"]["devices"]["requests"][1]["exactly"]["count"] == 4
    pod = job.args["object"]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [
        {"name": f"gpu-efa-{i}", "resourceClaimTemplateName": "nccl-gate-h100"} for i in range(8)
    ]
    limits = pod["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and "vpc.amazonaws.com/efa" not in limits
    assert template.id in job.depends_on
    assert [g.name for g in network.content.gates] == ["nccl-bandwidth-h100"]
