"""The behavioural model on DRA groups (issue 43 item 5): a pod's ResourceClaims read from their templates as
Kueue v0.19.2 counts them, the node's published devices, the aligned GPU + EFA claim on the instance's PCIe layout,
and the Cluster Autoscaler's scale-up from zero; a TrainJob on the group's EFA runtime and a Deployment on its
templates run.

Kueue vectors: kubernetes-sigs/kueue pkg/dra/claims_test.go @ v0.19.2 Test_GetResourceRequests (the case names are
given with each row); layout vectors: the p4d.24xlarge ResourceSlices of kubernetes-sigs/dranet
examples/aws_eks_examples/gpu-efa @ v1.4.0 (4 PCIe roots of 2 GPUs and 1 EFA adapter)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from gpufleet.plan.manifests import workloads
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import fleet_from
from gpufleet.simulate import claims
from gpufleet.simulate.canonical import canonical
from gpufleet.simulate.self_check import canonical_rows, contradictions
from gpufleet.simulate.verdict import FleetModel, explain, fleet_model
from gpufleet.simulate.workload import workload
from tests.dra.fleets import dra_data

GPUS = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
EFAS = "efa.networking.k8s.aws.deviceclass.resource.k8s.io/devices"
MAPPED = {"test-deviceclass-1": "res-1", "test-deviceclass-2": "res-2"}


def _template(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"devices": {"requests": list(requests), **({"constraints": constraints} if constraints else {})}}


def _exact(name: str, device_class: str, count: int | None = None, **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, **extra}
    if count is not None:
        exactly |= {"allocationMode": "ExactCount", "count": count}
    return {"name": name, "exactly": exactly}


TEMPLATES = {
    ("ns1", "claim-tmpl-1"): _template(_exact("device-request", "test-deviceclass-1", 2)),
    ("ns1", "claim-tmpl-2"): _template(_exact("device-request", "test-deviceclass-2", 1)),
    ("ns1", "claim-tmpl-all"): _template(_exact("device-request", "test-deviceclass-1", allocationMode="All")),
    ("ns1", "claim-tmpl-first"): _template({"name": "req", "firstAvailable": [{"name": "a"}]}),
    ("ns1", "claim-tmpl-empty"): _template({"name": "req"}),
    ("ns1", "claim-tmpl-admin"): _template(_exact("req", "test-deviceclass-1", 1, adminAccess=True)),
    ("ns1", "claim-tmpl-constraints"): _template(
        _exact("gpu-1", "test-deviceclass-1", 1),
        _exact("gpu-2", "test-deviceclass-1", 1),
        constraints=[{"requests": ["gpu-1", "gpu-2"], "matchAttribute": "numa-node"}],
    ),
    ("ns1", "defaulted"): _template(_exact("req", "test-deviceclass-1")),
}


def _pod(*claims_: tuple[str, str]) -> dict[str, Any]:
    return {"resourceClaims": [{"name": n, "resourceClaimTemplateName": t} for n, t in claims_]}


CLAIM0 = "spec.podSets[0].template.spec.resourceClaims[0]"


@pytest.mark.parametrize(
    ("pod", "devices", "error"),
    [
        # "Single claim template with single device": the ResourceClaim beside it is not counted
        (
            {
                "resourceClaims": [
                    {"name": "req-1", "resourceClaimTemplateName": "claim-tmpl-1"},
                    {"name": "req-2", "resourceClaimName": "claim-2"},
                ]
            },
            {"test-deviceclass-1": 2},
            None,
        ),
        # "Two containers each using different claim templates"
        (
            _pod(("req-a", "claim-tmpl-1"), ("req-b", "claim-tmpl-2")),
            {"test-deviceclass-1": 2, "test-deviceclass-2": 1},
            None,
        ),
        # "Two containers sharing one claim template": one pod claim, counted once
        (_pod(("req-a", "claim-tmpl-1")), {"test-deviceclass-1": 2}, None),
        # "Device constraints are pass-through and counted correctly"
        (_pod(("req-constraints", "claim-tmpl-constraints")), {"test-deviceclass-1": 2}, None),
        # the API server's defaults: allocationMode ExactCount, count 1
        (_pod(("req", "defaulted")), {"test-deviceclass-1": 1}, None),
        # "AllocationMode All returns error"
        (
            _pod(("req-all", "claim-tmpl-all")),
            {},
            f'{CLAIM0}.devices.requests[0].exactly.allocationMode: Invalid value: "All": ResourceClaimTemplate'
            " claim-tmpl-all: AllocationMode 'All' is not supported",
        ),
        # "FirstAvailable returns error"
        (
            _pod(("req-first", "claim-tmpl-first")),
            {},
            f'{CLAIM0}.devices.requests[0]: Invalid value: "null": ResourceClaimTemplate claim-tmpl-first:'
            " FirstAvailable device selection is not supported",
        ),
        # "Exactly and FirstAvailable are nil returns error"
        (
            _pod(("req-empty", "claim-tmpl-empty")),
            {},
            f'{CLAIM0}.devices.requests[0]: Invalid value: "null": ResourceClaimTemplate claim-tmpl-empty: Exactly'
            " must be set if FirstAvailable is nil",
        ),
        # "AdminAccess returns error"
        (
            _pod(("req-admin", "claim-tmpl-admin")),
            {},
            f'{CLAIM0}.devices.requests[0].exactly.adminAccess: Invalid value: "null": ResourceClaimTemplate'
            " claim-tmpl-admin: AdminAccess is not supported",
        ),
        # a template the namespace does not hold: getClaimSpec's error
        (
            _pod(("req", "absent")),
            {},
            f"{CLAIM0}: Internal error: failed to get claim spec for ResourceClaimTemplate absent in podset main:"
            ' resourceclaimtemplates.resource.k8s.io "absent" not found',
        ),
    ],
)
def test_kueue_counts_a_pods_claims_by_device_class(
    pod: dict[str, Any], devices: dict[str, int], error: str | None
) -> None:
    read = claims.read(TEMPLATES, "ns1", pod, pod_set=0, pod_set_name="main", mappings=MAPPED)
    assert read.kueue_error == error
    if error is None:
        assert dict(read.devices) == devices


def test_an_unmapped_device_class_makes_the_workload_inadmissible() -> None:
    # "Unmapped DeviceClass returns error"
    read = claims.read(TEMPLATES, "ns1", _pod(("req-1", "claim-tmpl-1")), pod_set=0, pod_set_name="main", mappings={})
    assert read.kueue_error == (
        f'{CLAIM0}.resourceClaimTemplateName: Not found: "DeviceClass test-deviceclass-1 is not mapped in DRA'
        ' configuration for podset main"'
    )


P4D = "p4d.24xlarge"
PAIR = {"gpu.nvidia.com": 1, "efa.networking.k8s.aws": 1}


@pytest.mark.parametrize(
    ("instance_type", "aligned", "fits"),
    [
        (P4D, [PAIR] * 4, True),  # one EFA adapter per root: four aligned pairs
        (P4D, [PAIR] * 5, False),
        (P4D, [{"gpu.nvidia.com": 2, "efa.networking.k8s.aws": 1}] * 4, True),  # a whole root each
        (P4D, [{"gpu.nvidia.com": 1, "efa.networking.k8s.aws": 2}], False),
        ("p5.48xlarge", [PAIR] * 8, True),
        ("p5.48xlarge", [{"gpu.nvidia.com": 1, "efa.networking.k8s.aws": 4}] * 8, True),
        ("p5.48xlarge", [{"gpu.nvidia.com": 2, "efa.networking.k8s.aws": 1}], False),
    ],
)
def test_aligned_claims_on_the_pcie_layout(instance_type: str, aligned: list[dict[str, int]], fits: bool) -> None:
    named = tuple((f"c{i}", a) for i, a in enumerate(aligned))
    assert (claims.misaligned(instance_type, named) is None) is fits


def test_a_layout_gpufleet_does_not_know_is_not_judged() -> None:
    assert claims.misaligned("p5en.48xlarge", (("c0", PAIR),)) is None
    assert "not in gpufleet's table" in (claims.layout_unknown("p5en.48xlarge", (("c0", PAIR),)) or "")


# --- the verdict -----------------------------------------------------------------------------------------------


def _model(min_size: int = 1, through: str = "cost") -> FleetModel:
    data = dra_data()
    data["nodeGroups"][1]["scaling"] = {"minSize": min_size, "maxSize": 2}
    data["environments"]["dev"]["rollout"]["through"] = through
    return fleet_model(build_plan(fleet_from(data), "dev"))


@pytest.fixture(scope="module")
def model() -> FleetModel:
    return _model()


def _job(*templates: str, group: str = "h100", parallelism: int = 1, claim: dict[str, Any] | None = None) -> Any:
    pod_claims = [{"name": f"c{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    return workload(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "template": {
                    "spec": {
                        "nodeSelector": {"gpufleet.io/node-group": group},
                        "restartPolicy": "Never",
                        "resourceClaims": pod_claims + ([claim] if claim else []),
                        "containers": [
                            {
                                "name": "train",
                                "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                                "resources": {
                                    "claims": [{"name": c["name"]} for c in pod_claims],
                                    "limits": {"cpu": "8", "memory": "64Gi"},
                                },
                            }
                        ],
                    }
                },
            },
        }
    )


def test_the_nodes_publish_devices_not_extended_resources(model: FleetModel) -> None:
    h100 = model.nodes["h100"].allocatable
    assert (h100[GPUS], h100[EFAS], "nvidia.com/gpu" in h100, "vpc.amazonaws.com/efa" in h100) == (8, 32, False, False)
    assert model.nodes["l4"].allocatable["nvidia.com/gpu"] == 1 and GPUS not in model.nodes["l4"].allocatable
    # before the network stage the EFA DRA driver publishes nothing
    assert EFAS not in _model(through="admission").nodes["h100"].allocatable


@pytest.mark.parametrize(
    ("templates", "parallelism", "stage", "message"),
    [
        (["h100-gpu-8"], 1, None, None),
        (["h100-gpu-efa"] * 8, 1, None, None),
        (["h100-gpu-4", "h100-gpu-4"], 1, None, None),
        (
            ["h100-gpu-8"],
            2,
            "admission",
            "couldn't assign flavors to pod set main: flavor l4 doesn't match node affinity, insufficient quota for"
            f" {GPUS} in flavor h100, previously considered podsets requests (0) + current podset request (16) >"
            " maximum capacity (8)",
        ),
        (
            ["absent"],
            1,
            "admission",
            "the Workload is inadmissible: spec.podSets[0].template.spec.resourceClaims[0]: Internal error: failed to"
            " get claim spec for ResourceClaimTemplate absent in podset main: resourceclaimtemplates.resource.k8s.io"
            ' "absent" not found',
        ),
    ],
)
def test_a_job_that_claims_devices(
    model: FleetModel, templates: list[str], parallelism: int, stage: str | None, message: str | None
) -> None:
    verdict = explain(model, _job(*templates, parallelism=parallelism))
    assert verdict.runs is (stage is None)
    if stage is None:
        assert (verdict.node_group, verdict.flavor) == ("h100", "h100")
    else:
        assert (verdict.reasons[0].stage, verdict.reasons[0].message) == (stage, message)


def test_a_shared_resource_claim_is_inadmissible(model: FleetModel) -> None:
    verdict = explain(model, _job("h100-gpu-1", claim={"name": "shared", "resourceClaimName": "pool"}))
    assert (verdict.reasons[0].stage, verdict.reasons[0].message) == (
        "admission",
        "the Workload is inadmissible: KueueDRAIntegration feature does not support use of resource claims (a pod"
        " names a ResourceClaim)",
    )


def test_claims_on_a_device_plugin_group_cannot_be_allocated(model: FleetModel) -> None:
    # Kueue first: the device-plugin flavor holds 0 of the claimed devices
    verdict = explain(model, _job("h100-gpu-1", group="l4"))
    assert (verdict.reasons[0].stage, verdict.reasons[0].message) == (
        "admission",
        f"couldn't assign flavors to pod set main: insufficient quota for {GPUS} in flavor l4, previously considered"
        " podsets requests (0) + current podset request (1) > maximum capacity (0), flavor h100 doesn't match node"
        " affinity",
    )


def test_an_aligned_claim_the_pcie_layout_cannot_hold_is_unschedulable() -> None:
    data = dra_data()
    data["nodeGroups"][1] |= {"instanceType": "p4d.24xlarge", "scaling": {"minSize": 1, "maxSize": 2}}
    data["environments"]["dev"]["rollout"]["through"] = "cost"
    p4d = fleet_model(build_plan(fleet_from(data), "dev"))
    assert explain(p4d, _job(*["h100-gpu-efa"] * 4)).runs
    # a user's template: one GPU with two EFA interfaces on its root, where a p4d root has one
    two = _template(
        _exact("gpu", "gpu.nvidia.com", 1),
        _exact("efa", "efa.networking.k8s.aws", 2),
        constraints=[{"requests": ["gpu", "efa"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    )
    p4d = dataclasses.replace(p4d, claim_templates={**p4d.claim_templates, ("vision", "gpu-2efa"): two})
    verdict = explain(p4d, _job("gpu-2efa"))
    assert (verdict.reasons[0].stage, verdict.reasons[0].message) == (
        "scheduling",
        "cannot allocate all claims on node group h100: claim c0 asks for 2 efa.networking.k8s.aws and 1"
        " gpu.nvidia.com on one PCIe root (resource.kubernetes.io/pcieRoot); p4d.24xlarge has 4 roots of 2 GPU(s)"
        " and 1 EFA interface(s) each",
    )


def test_a_group_at_zero_nodes_is_never_scaled_up_for_claims() -> None:
    verdict = explain(_model(min_size=0), _job("h100-gpu-8"))
    reason = verdict.reasons[0]
    assert (reason.stage, reason.spec_path) == ("autoscaler", ("nodeGroups", 1, "scaling"))
    assert reason.message.startswith("node group h100 has no node (minSize 0) and the Cluster Autoscaler's template")


def test_the_efa_class_before_the_network_stage_names_it() -> None:
    verdict = explain(_model(through="admission"), _job("h100-gpu-efa"))
    assert (verdict.reasons[0].stage, verdict.reasons[0].message) == (
        "scheduling",
        "DeviceClass efa.networking.k8s.aws is created by the network stage's DRA driver, which this environment's"
        " rollout (through admission) does not deploy",
    )


def test_a_trainjob_on_the_groups_efa_runtime_and_a_deployment_on_its_templates_run(model: FleetModel) -> None:
    trainjob = workload(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
            "spec": {"runtimeRef": {"name": "gpufleet-efa-h100"}, "trainer": {"numNodes": 1}},
        }
    )
    verdict = explain(model, trainjob)
    assert (verdict.runs, verdict.node_group, verdict.reasons) == (True, "h100", ())
    deployment = workload(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "serve", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "serve"}},
                "template": {
                    "metadata": {"labels": {"app": "serve"}},
                    "spec": {
                        "nodeSelector": {"gpufleet.io/node-group": "h100"},
                        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "h100-gpu-4"}],
                        "containers": [
                            {
                                "name": "serve",
                                "image": "vllm/vllm-openai:v0.11.0",
                                "resources": {"claims": [{"name": "gpus"}], "limits": {"cpu": "8", "memory": "64Gi"}},
                            }
                        ],
                    },
                },
            },
        }
    )
    verdict = explain(model, deployment)
    assert (verdict.runs, verdict.pods_admitted, verdict.node_group) == (True, 2, "h100")
    # a third replica is beyond the team's 8 GPUs of quota
    three = copy.deepcopy(deployment)
    three = workload({**_raw(deployment), "spec": {**_raw(deployment)["spec"], "replicas": 3}})
    assert (explain(model, three).runs, explain(model, three).pods_admitted) == (False, 2)


def _raw(wl: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": wl.name, "namespace": wl.namespace, "labels": dict(wl.labels)},
        "spec": dict(wl.spec),
    }


def test_the_efa_runtime_of_a_dra_group_claims_each_gpu_with_its_efa_interface() -> None:
    fleet = fleet_from(dra_data())
    (group,) = workloads.efa_groups(fleet)
    pod = workloads.efa_runtime(fleet, group)["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]
    assert pod["resourceClaims"] == [
        {"name": f"gpu-efa-{i}", "resourceClaimTemplateName": "h100-gpu-efa"} for i in range(8)
    ]
    limits = pod["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and "vpc.amazonaws.com/efa" not in limits


def _canonical_claims(model: FleetModel, group: str) -> list[dict[str, str]]:
    claims: list[dict[str, str]] = (
        canonical(model, model.plan.fleet.node_group(group)).pod_sets[0].pod.raw.get("resourceClaims", [])
    )
    return claims


def test_the_self_check_judges_dra_groups_with_the_teams_claims(model: FleetModel) -> None:
    rows = canonical_rows(model)
    assert [(r.group.name, r.shape, r.verdict.runs) for r in rows] == [
        ("l4", "one GPU", True),
        ("h100", "full node (claims)", True),
    ]
    assert contradictions(model, rows) == []
    # A full node is every PCIe root's GPUs with their EFA interfaces, as the group's EFA runtime claims them...
    assert _canonical_claims(model, "h100") == [
        {"name": f"gpu-efa-{i}", "resourceClaimTemplateName": "h100-gpu-efa"} for i in range(8)
    ]
    limits = canonical(model, model.plan.fleet.node_group("h100")).pod_sets[0].pod.raw["containers"][0]["resources"]
    assert not [r for r in limits["limits"] if r.startswith(("nvidia.com/", "vpc.amazonaws.com/", "gpu.nvidia.com"))]
    assert limits["claims"] == [{"name": f"gpu-efa-{i}"} for i in range(8)]
    # ...and before the network stage publishes the interfaces, the node's GPUs in one claim.
    assert _canonical_claims(_model(through="admission"), "h100") == [
        {"name": "gpus", "resourceClaimTemplateName": "h100-gpu-8"}
    ]


def test_the_self_check_refuses_a_dra_group_at_zero_nodes() -> None:
    model = _model(min_size=0)
    issues = contradictions(model, canonical_rows(model))
    row = next(i for i in issues if i.message.startswith("node group h100:"))
    assert row.path == ("nodeGroups", 1, "scaling")
    assert row.message.startswith(
        "node group h100: a full node (claims) pod (its workload class's shape) would not run (autoscaler): node group"
        " h100 has no node (minSize 0)"
    )
    assert row.hint == (
        "set nodeGroups[h100].scaling.minSize to 1 or more: the autoscaler then scales the group from its running"
        " node's template up to maxSize"
    )


def test_an_inference_dra_group_claims_one_gpu_and_a_group_without_quota_has_no_row() -> None:
    data = dra_data(fabric="None")
    data["nodeGroups"][1] |= {"workloadClass": "Inference", "scaling": {"minSize": 1, "maxSize": 2}}
    data["environments"]["dev"]["rollout"]["through"] = "cost"
    inference = fleet_model(build_plan(fleet_from(data), "dev"))
    assert _canonical_claims(inference, "h100") == [{"name": "gpus", "resourceClaimTemplateName": "h100-gpu-1"}]
    assert [(r.group.name, r.shape, r.verdict.runs) for r in canonical_rows(inference)][1] == (
        "h100",
        "one GPU (claims)",
        True,
    )
    # No team has quota on it: no namespace holds its templates, so no pod can ask for its GPUs.
    data["teams"][0]["quotas"] = [q for q in data["teams"][0]["quotas"] if q["nodeGroup"] != "h100"]
    unclaimed = fleet_model(build_plan(fleet_from(data), "dev"))
    assert [r.group.name for r in canonical_rows(unclaimed)] == ["l4"]
