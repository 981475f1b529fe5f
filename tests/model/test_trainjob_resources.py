"""A TrainJob's resourcesPerNode on both sides (issue 41 item 13): Trainer v2.3.0's controller merges it over the
runtime's `node` container resources in the pods it creates (pkg/runtime/core/trainingruntime.go,
util/trainingruntime MergeResourceRequirements), while Kueue v0.19.2 computes the Workload with the Trainer library
its go.mod pins, v2.2.1, whose JobSet builder replaces them (plugins/jobset/builder.go Trainer: WithResources of
resourcesPerNode's limits and requests). So quota and pods can differ, and a GPU limit that leaves the runtime's
larger request makes pods the API server refuses (requests must equal limits for extended resources)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gpufleet.commands.explain import _text
from gpufleet.simulate.verdict import explain
from gpufleet.simulate.workload import trainjob_pod_sets, workload
from tests.model.conftest import model_of

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "training.yaml"


def _runtime(resources: dict[str, Any]) -> dict[str, Any]:
    node = {"name": "node", "image": "test:runtime", "resources": resources}
    job = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [node]}}},
        },
    }
    return {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [job]}}}


def test_upstream_vector_gpu_only_merges_into_the_pods_and_replaces_in_the_workload() -> None:
    """trainingruntime_test.go @ v2.3.0 "merged resourcesPerNode keeps runtime resources when trainjob sets gpu
    only": runtime requests cpu 1, TrainJob limits nvidia.com/gpu 4. The pods keep cpu 1 beside the GPU (and API
    defaulting requests the GPU at its limit); Kueue's Workload (v2.2.1 replaces) asks for the GPU alone."""
    runtime = _runtime({"requests": {"cpu": "1"}})
    spec = {"trainer": {"numNodes": 1, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}}}
    (pods,) = trainjob_pod_sets(spec, runtime)
    (kueue,) = trainjob_pod_sets(spec, runtime, replace_resources=True)
    assert pods.pod.raw["containers"][0]["resources"] == {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "4"}}
    assert pods.pod.request() == {"cpu": 1000, "nvidia.com/gpu": 4}
    assert kueue.pod.raw["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "4"}}
    assert kueue.pod.request() == {"nvidia.com/gpu": 4}


def test_resources_per_node_without_limits_or_requests_leaves_the_runtime_s_on_both_sides() -> None:
    runtime = _runtime({"requests": {"cpu": "1"}})
    for side in (False, True):
        (ps,) = trainjob_pod_sets({"trainer": {"resourcesPerNode": {}}}, runtime, replace_resources=side)
        assert ps.pod.request() == {"cpu": 1000}


def _example(resources: dict[str, Any] | None) -> dict[str, Any]:
    doc = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    if resources is not None:
        doc["spec"]["trainer"]["resourcesPerNode"] = resources
    return doc


def test_a_gpu_limit_below_the_runtime_s_request_makes_pods_the_api_server_refuses() -> None:
    """The example's runtime gpufleet-efa-h100 requests and limits 8 GPUs per node; a TrainJob limiting 4 merges to
    requests 8, limits 4 (refused: must be equal), while Kueue would admit a Workload of 4 GPUs per pod."""
    verdict = explain(model_of(), workload(_example({"limits": {"nvidia.com/gpu": 4}})))
    assert [r.json() for r in verdict.reasons] == [
        {
            "stage": "api",
            "message": (
                "the TrainJob's pods are invalid: spec.template.spec.containers[0].resources.requests:"
                ' Invalid value: "8": must be equal to nvidia.com/gpu limit of 4 (container node requests 8'
                " nvidia.com/gpu with a limit of 4 after Trainer merges spec.trainer.resourcesPerNode over the"
                " runtime's resources) (the TrainJob is created; its controller fails to create them)"
            ),
            "fix": (
                "set nvidia.com/gpu in spec.trainer.resourcesPerNode's requests and limits alike (Trainer keeps the"
                " runtime's value of what resourcesPerNode leaves out)"
            ),
        }
    ]
    (note,) = [n for n in verdict.notes if n.startswith("Kueue's Workload and the pods differ")]
    assert "quota per pod: node nvidia.com/gpu 4 (the pods: " in note and "nvidia.com/gpu 8" in note


def test_kueue_counts_what_resources_per_node_says_and_the_pods_ask_for_the_runtime_s_rest() -> None:
    """requests and limits of 4 GPUs: valid pods that keep the runtime's CPU, memory, EFA and huge pages, while
    Kueue's Workload counts the 4 GPUs alone; the verdict runs and says so."""
    verdict = explain(
        model_of(), workload(_example({"limits": {"nvidia.com/gpu": 4}, "requests": {"nvidia.com/gpu": 4}}))
    )
    assert verdict.runs, verdict.reasons
    (note,) = [n for n in verdict.notes if n.startswith("Kueue's Workload and the pods differ")]
    assert note.endswith("vpc.amazonaws.com/efa 32)") and "quota per pod: node nvidia.com/gpu 4 (the pods: cpu" in note
    assert "Kueue's Workload and the pods differ" in _text([verdict])
    # without resourcesPerNode both sides are the runtime's: no note
    plain = explain(model_of(), workload(_example(None)))
    assert plain.runs and not any(n.startswith("Kueue's Workload") for n in plain.notes)


def test_kueue_admits_by_its_workload_so_a_cpu_only_resources_per_node_escapes_the_gpu_quota() -> None:
    """resourcesPerNode requests cpu 1 only: the pods keep the runtime's 8 GPUs each, Kueue's Workload (replaced)
    asks for 1 CPU per pod and no GPU. 14 nodes are 112 GPUs, past vision's 64 + 32 it may borrow; Kueue admits it
    (its Workload holds no GPU quota) and the group's 16 nodes hold it: it runs, the quota does not stop it."""
    doc = _example({"requests": {"cpu": "1"}})
    doc["spec"]["trainer"]["numNodes"] = 14
    verdict = explain(model_of(), workload(doc))
    assert verdict.runs, verdict.reasons
    assert verdict.json()["pods"] == {"total": 14, "admitted": 14}
    (note,) = [n for n in verdict.notes if n.startswith("Kueue's Workload and the pods differ")]
    assert "quota per pod: node cpu 1 (the pods: cpu 1, " in note


def test_a_cpu_limit_below_the_runtime_s_request_makes_pods_the_api_server_refuses() -> None:
    """The box's differential (e2e/test_differential.py, seed 40, s013-trainjob): resourcesPerNode limits only, cpu
    100m beside 8 GPUs; Kueue's Workload (replaced) asks for 100m and is admitted, Trainer merges the limit over the
    runtime's cpu request of 189 and its JobSet's Job is refused: 'spec.template.spec.containers[0].resources.requests:
    Invalid value: "189": must be less than or equal to cpu limit of 100m'."""
    doc = _example({"limits": {"cpu": "100m", "memory": "4000Gi", "nvidia.com/gpu": 8}})
    verdict = explain(model_of(), workload(doc))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert reason.stage == "api"
    assert reason.message.startswith(
        "the TrainJob's pods are invalid: spec.template.spec.containers[0].resources.requests: Invalid value:"
        ' "189": must be less than or equal to cpu limit of 100m (container node requests 189 cpu with a limit of'
        " 100m after Trainer merges"
    ), reason.message
