"""What the behavioural model leaves out on DRA groups (issue 43, items 5 and 3 not done): synth's self-check judges
no canonical workload of a group whose pods claim their devices (it would have refused every DRA fleet for a
`nvidia.com/gpu` request the group's nodes never advertise), and no EFA training runtime is rendered for such a
group (its pods would ask for the device plugins' resources)."""

from __future__ import annotations

from gpufleet.plan.manifests import workloads
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import fleet_from
from gpufleet.simulate.self_check import canonical_rows, contradictions
from gpufleet.simulate.verdict import CLAIMS_NOT_MODELLED, explain, fleet_model
from gpufleet.simulate.workload import workload
from tests.dra.fleets import dra_data


def test_the_self_check_judges_the_device_plugin_groups_only_and_finds_no_contradiction() -> None:
    model = fleet_model(build_plan(fleet_from(dra_data()), "dev"))
    rows = canonical_rows(model)
    assert [r.group.name for r in rows] == ["l4"]
    assert contradictions(model, rows) == []


def test_no_efa_training_runtime_for_a_dra_group() -> None:
    data = dra_data()
    assert workloads.efa_groups(fleet_from(data)) == []
    data["nodeGroups"][1]["devices"] = "DevicePlugin"
    assert [g.name for g in workloads.efa_groups(fleet_from(data))] == ["h100"]


def test_explain_says_it_does_not_judge_a_pods_claims() -> None:
    model = fleet_model(build_plan(fleet_from(dra_data()), "dev"))
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"gpufleet.io/node-group": "h100"},
                    "restartPolicy": "Never",
                    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "h100-gpu-8"}],
                    "containers": [
                        {
                            "name": "train",
                            "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                            "resources": {"claims": [{"name": "gpus"}], "limits": {"cpu": "8", "memory": "64Gi"}},
                        }
                    ],
                }
            }
        },
    }
    assert CLAIMS_NOT_MODELLED in explain(model, workload(job)).notes
