"""The workload examples (issue 28 item 4) and upstream samples of the kinds the workload layer installs, through
`explain` on the example fleet as rendered: valid against the pinned CRDs, and the verdict Kueue and the API server
would give (a TrainJob's pods from its runtime, a LeaderWorkerSet one pod group of leader + workers per replica)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import is_workload, trainjob_pod_sets, workload
from tests import fastyaml
from tests.documented import documented
from tests.upstream import require_shared, validate_object

MakeModel = Callable[..., FleetModel]
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
GPU, EFA = "nvidia.com/gpu", "vpc.amazonaws.com/efa"


def _example(name: str) -> dict[str, Any]:
    """The example's first object (the workload; a Service or ScaledObject may follow it)."""
    out: dict[str, Any] = next(fastyaml.load_all((EXAMPLES / name).read_text()))
    return out


@pytest.mark.parametrize("name", ["training.yaml", "lws-inference.yaml", "vllm.yaml"])
def test_examples_are_valid_against_the_pinned_crds(name: str) -> None:
    assert validate_object(_example(name)) == []


def test_the_multi_node_trainjob_runs_on_the_efa_group_with_what_the_runtime_gives(make_model: MakeModel) -> None:
    model = make_model()
    obj = _example("training.yaml")
    verdict = explain(model, workload(obj))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.flavor, verdict.node_group) == ("vision", "h100", "h100")
    assert verdict.json()["pods"] == {"total": 2, "admitted": 2}
    # The pods carry the runtime's EFA shape: the TrainJob itself names no resources.
    (node,) = trainjob_pod_sets(obj["spec"], model.runtimes["gpufleet-efa-h100"])
    limits = node.pod.containers[0].limits
    assert (node.name, node.count, limits[GPU], limits[EFA], limits["hugepages-2Mi"]) == ("node", 2, 8, 32, 5120)
    assert node.pod.node_selector == {"gpufleet.io/node-group": "h100"}


def test_the_trainjob_is_stopped_where_its_runtime_does_not_exist(make_model: MakeModel) -> None:
    obj = copy.deepcopy(_example("training.yaml"))
    obj["spec"]["runtimeRef"]["name"] = "gpufleet-efa-h200"
    (reason,) = explain(make_model(), workload(obj)).reasons
    assert reason.stage == "api"
    assert reason.message == (
        'denied by the Trainer\'s webhook: ClusterTrainingRuntime "gpufleet-efa-h200" does not exist (specified'
        " clusterTrainingRuntime must be created before the TrainJob is created)"
    )
    assert reason.fix == (
        "set spec.runtimeRef.name to one of the fleet's runtimes: deepspeed-distributed, gpufleet-efa-h100,"
        " torch-distributed"
    )


def test_more_nodes_than_the_quota_holds_waits_for_quota(make_model: MakeModel) -> None:
    obj = copy.deepcopy(_example("training.yaml"))
    obj["spec"]["trainer"]["numNodes"] = 16  # 128 GPUs: vision has 64 nominal + 32 borrowable on h100
    verdict = explain(make_model(), workload(obj))
    assert not verdict.runs and verdict.reasons[0].stage == "admission"
    assert verdict.json()["pods"]["total"] == 16


def test_the_multi_node_vllm_example_with_its_service_and_scaler(make_model: MakeModel) -> None:
    """Issue 34 item 5: the LWS vLLM pattern on l40s with its leader Service and KEDA ScaledObject. The LWS and the
    Service validate against the pinned CRD and Kubernetes schema; the ScaledObject (checked against KEDA's CRD in
    tests/telemetry/test_keda_scaled_objects.py) scales the LeaderWorkerSet through the scale subresource its pinned
    CRD serves; both templates carry a readiness probe that issues an inference, and without the worker's the fleet's
    policy refuses it."""
    lws, service, scaler = fastyaml.load_all((EXAMPLES / "lws-inference.yaml").read_text())
    assert validate_object(lws) == [] and validate_object(service) == []
    crd = fastyaml.load((require_shared() / "crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml").read_text())
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    assert served["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    target = scaler["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        lws["apiVersion"],
        lws["kind"],
        lws["metadata"]["name"],
    )
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"],
        **{k: v for k, v in lwt["leaderTemplate"]["metadata"]["labels"].items() if k == "role"},
    }
    for template in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        (container,) = template["spec"]["containers"]
        assert "/v1/completions" in container["readinessProbe"]["exec"]["command"][-1]
    assert explain(make_model(), workload(lws)).runs
    unprobed = copy.deepcopy(lws)
    del unprobed["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["readinessProbe"]
    (reason,) = explain(make_model(), workload(unprobed)).reasons
    assert reason.message.startswith("denied by ValidatingAdmissionPolicy gpufleet-serving-readiness: LeaderWorkerSet")


def test_the_multi_node_lws_server_is_one_group_of_leader_and_worker(make_model: MakeModel) -> None:
    obj = _example("lws-inference.yaml")
    wl = workload(obj)
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == [("leader", 1), ("worker", 1)]
    verdict = explain(make_model(), wl)
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.node_group) == ("language", "l40s")
    assert verdict.json()["pods"] == {"total": 2, "admitted": 2}


# kueue v0.19.2 pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler_test.go TestReconciler: "should create
# prebuilt workload" (no leaderTemplate, size defaulted: pod set main of 1), "should create prebuilt workload with
# leader template" (size 3: leader 1, worker 2), "should create prebuilt workloads with leader template" (replicas 2:
# the same pod sets in each of two workloads).
@pytest.mark.parametrize(
    ("template", "replicas", "pod_sets"),
    [
        ({}, None, [("main", 1)]),
        ({"size": 3, "leaderTemplate": True}, None, [("leader", 1), ("worker", 2)]),
        ({"size": 3, "leaderTemplate": True}, 2, [("leader", 1), ("worker", 2)]),
    ],
)
def test_lws_pod_sets_as_kueue_builds_them(template: dict[str, Any], replicas: int | None, pod_sets: list[Any]) -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    lwt: dict[str, Any] = {"workerTemplate": pod}
    if "size" in template:
        lwt["size"] = template["size"]
    if template.get("leaderTemplate"):
        lwt["leaderTemplate"] = pod
    spec: dict[str, Any] = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    obj = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "l"},
        "spec": spec,
    }
    wl = workload(obj)
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == pod_sets
    assert wl.groups == (replicas or 1)


def test_lws_replicas_are_each_a_workload(make_model: MakeModel) -> None:
    """Kueue admits each replica group on its own (tests/model/test_lws_groups.py has the N-of-M cases)."""
    obj = copy.deepcopy(_example("lws-inference.yaml"))
    obj["spec"]["replicas"] = 3
    verdict = explain(make_model(), workload(obj))
    assert verdict.json()["pods"] == {"total": 6, "admitted": 6}
    assert verdict.json()["groups"] == {"total": 3, "admitted": 3}


# kubeflow/trainer v2.3.0 examples/yaml/03-kueue-integration.yaml (the fields explain reads): a TrainJob on
# torch-distributed, numNodes 3, resourcesPerNode requests cpu 2 / memory 4Gi, limits cpu 4 / memory 8Gi. The
# runtime's node container has no resources, so the merge is the TrainJob's (trainingruntime.go
# MergeResourceRequirements); the queue is the team's here.
def test_upstream_trainer_kueue_example_runs_three_cpu_nodes(make_model: MakeModel) -> None:
    obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "kueue-example", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": {
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
                "name": "torch-distributed",
            },
            "suspend": True,
            "trainer": {
                "numNodes": 3,
                "image": "python:3.11-slim",
                "command": ["python3", "-c", "print('Training started via Kueue')"],
                "resourcesPerNode": {
                    "requests": {"cpu": "2", "memory": "4Gi"},
                    "limits": {"cpu": "4", "memory": "8Gi"},
                },
            },
        },
    }
    assert validate_object(obj) == []
    model = make_model()
    (node,) = trainjob_pod_sets(obj["spec"], model.runtimes["torch-distributed"])
    assert (node.name, node.count) == ("node", 3)
    assert dict(node.pod.containers[0].requests) == {"cpu": 2000, "memory": 4096}
    verdict = explain(model, workload(obj))
    assert verdict.runs, verdict.reasons
    assert verdict.json()["pods"] == {"total": 3, "admitted": 3}


# The runtime's resources merge key by key with the TrainJob's (kubeflow/trainer v2.3.0
# pkg/util/trainingruntime/trainingruntime_test.go TestMergeResourceRequirements: an override replaces the keys it
# names and keeps the others).
def test_resources_per_node_merge_over_the_runtimes(make_model: MakeModel) -> None:
    spec = {"runtimeRef": {"name": "gpufleet-efa-h100"}, "trainer": {"resourcesPerNode": {"limits": {GPU: 4}}}}
    (node,) = trainjob_pod_sets(spec, make_model().runtimes["gpufleet-efa-h100"])
    limits = node.pod.containers[0].limits
    assert (limits[GPU], limits[EFA], node.count) == (4, 32, 2)  # numNodes from the runtime's mlPolicy


# The deepspeed-distributed runtime (MPI, runLauncherAsNode): a 3-node TrainJob is a launcher that trains plus 2 node
# pods (mpi plugin EnforceMLPolicy: node count numNodes - 1).
def test_mpi_launcher_as_node_counts(make_model: MakeModel) -> None:
    spec = {"runtimeRef": {"name": "deepspeed-distributed"}, "trainer": {"numNodes": 3}}
    sets = trainjob_pod_sets(spec, make_model().runtimes["deepspeed-distributed"])
    assert [(ps.name, ps.count) for ps in sets] == [("node", 2), ("launcher", 1)]


# kubernetes-sigs/jobset v0.12.0 site/static/examples/pytorch/cnn-mnist/mnist.yaml (the fields explain reads): one
# replicated job of parallelism 4 / completions 4, no resources; in a team namespace it takes the team's queue.
def test_upstream_jobset_sample_is_four_pods(make_model: MakeModel) -> None:
    container = {"name": "pytorch", "image": "gcr.io/k8s-staging-jobset/pytorch-mnist:latest"}
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "pytorch", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "template": {
                        "spec": {
                            "parallelism": 4,
                            "completions": 4,
                            "backoffLimit": 0,
                            "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
                        }
                    },
                }
            ]
        },
    }
    assert validate_object(obj) == []
    verdict = explain(make_model(), workload(obj))
    assert verdict.runs, verdict.reasons
    assert verdict.json()["pods"] == {"total": 4, "admitted": 4}


def test_before_the_network_stage_the_efa_runtime_waits_for_the_efa_setup(make_model: MakeModel) -> None:
    """The runtime is rendered in the admission stage; the EFA devices and huge pages its pods request come with
    the network stage (docs/workloads.md): in dev (through admission) explain names that stage."""
    verdict = explain(make_model(env="dev"), workload(_example("training.yaml")))
    (reason,) = verdict.reasons
    assert not verdict.runs and reason.stage == "scheduling"
    assert "which the network stage (stage 5) installs; environment dev rolls out through admission" in reason.message


def test_the_multi_node_example_serves_from_the_teams_weights_claim(make_model: MakeModel) -> None:
    """Both templates mount language's read-only Mountpoint claim s3-l40s at /models (pod-level credentials: the
    checkpoint-writer service account): the group runs on l40s; on a fleet without checkpoints.mountpoint the claim
    does not exist and explain says so."""
    lws = _example("lws-inference.yaml")
    for key in ("leaderTemplate", "workerTemplate"):
        spec = lws["spec"]["leaderWorkerTemplate"][key]["spec"]
        assert spec["serviceAccountName"] == "checkpoint-writer"
        assert {"name": "weights", "persistentVolumeClaim": {"claimName": "s3-l40s", "readOnly": True}} in spec[
            "volumes"
        ]
        assert {"name": "weights", "mountPath": "/models", "readOnly": True} in spec["containers"][0]["volumeMounts"]
    verdict = explain(make_model(), workload(lws))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.node_group) == ("language", "l40s")

    def without_mountpoint(data: dict[str, Any]) -> None:
        del data["checkpoints"]["mountpoint"]
        for team in data["teams"]:
            team.pop("prefetch", None)  # it reads the claims: validate refuses it without them

    (reason,) = explain(make_model(without_mountpoint), workload(lws)).reasons
    assert reason.message == 'persistentvolumeclaim "s3-l40s" not found'


def test_the_vllm_example_serves_from_the_teams_weights_claim(make_model: MakeModel) -> None:
    """docs/examples/vllm.yaml reads its model (/models/llama) from language's read-only claim s3-l40s, as the
    multi-node example does: it runs on l40s in prod; in dev (rolled out through admission) the claim does not exist
    yet and explain names the storage stage."""
    deployment = _example("vllm.yaml")
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "checkpoint-writer"
    assert {"name": "weights", "persistentVolumeClaim": {"claimName": "s3-l40s", "readOnly": True}} in spec["volumes"]
    (container,) = spec["containers"]
    assert {"name": "weights", "mountPath": "/models", "readOnly": True} in container["volumeMounts"]
    model_path = container["args"][container["args"].index("--model") + 1]
    assert model_path.startswith("/models/")
    verdict = explain(make_model(), workload(deployment))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.node_group) == ("language", "l40s")
    (reason,) = explain(make_model(env="dev"), workload(deployment)).reasons
    assert reason.message == (
        'persistentvolumeclaim "s3-l40s" not found (the storage stage creates it; this environment does not deploy it)'
    )
    assert reason.fix == "roll out through storage (environments.dev.rollout.through), where the claim is created"


def test_each_vllm_scaler_reads_its_own_servers_only() -> None:
    """docs/examples/vllm.yaml and lws-inference.yaml run vLLM in one namespace: each ScaledObject's queries select its
    own pods by name (Prometheus `=~` matches the whole label value, as re.fullmatch) and none of the other's, so
    neither scales on the other's queue. Pod names as the controllers make them: a Deployment's
    <name>-<pod-template-hash>-<5 chars>, an LWS leader <name>-<group>, a worker <name>-<group>-<index>."""
    names = {
        "vllm-server": ["vllm-server-5d8f7c9b4-x2k4p", "vllm-server-7c6b9f8d5-9qzrt"],
        "llm-multinode": ["llm-multinode-0", "llm-multinode-1"],
    }
    workers = ["llm-multinode-0-1", "llm-multinode-1-1"]  # export no metrics, must not be selected either
    scalers = [
        next(o for o in fastyaml.load_all((EXAMPLES / f).read_text()) if o["kind"] == "ScaledObject")
        for f in ("vllm.yaml", "lws-inference.yaml")
    ]
    for scaler in scalers:
        own = scaler["spec"]["scaleTargetRef"]["name"]
        for trigger in scaler["spec"]["triggers"]:
            (pattern,) = re.findall(r'pod=~"([^"]+)"', trigger["metadata"]["query"])
            for target, pods in names.items():
                assert all(bool(re.fullmatch(pattern, p)) == (target == own) for p in pods), (own, pattern, pods)
            assert not any(re.fullmatch(pattern, p) for p in workers)


DOCUMENTED_WORKLOADS = [(where, obj) for where, obj in documented() if is_workload(obj)]


@pytest.mark.parametrize(("where", "obj"), DOCUMENTED_WORKLOADS, ids=[w for w, _ in DOCUMENTED_WORKLOADS])
def test_every_documented_workload_runs_on_the_example_fleet(make_model: MakeModel, where: str, obj: Any) -> None:
    """The examples and the recipes of the docs' YAML blocks alike (issue 41 item 10): each runs, through its team's
    queue, where it says."""
    verdict = explain(make_model(), workload(obj))
    assert verdict.runs, (where, verdict.reasons)
    assert verdict.cluster_queue == obj["metadata"]["namespace"]
    assert any(w.startswith("docs/admission-and-sharing.md:") for w, _ in DOCUMENTED_WORKLOADS)
