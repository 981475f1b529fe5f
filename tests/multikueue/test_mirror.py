"""Workers mirror what dispatched work needs (issue 44 item 5): whatever cluster a workload lands on, it finds its
namespace, LocalQueue, priority classes and flavors' queues, the same job APIs and ClusterTrainingRuntimes (the
manager too: it creates the job first), and waitForPodsReady, so a workload whose pods cannot start in one region is
evicted there and dispatched again (kueue pkg/controller/admissionchecks/multikueue/workload.go @ v0.19.2: "Workload
evicted on worker cluster ... resetting for re-admission")."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "golden" / "cases" / "multikueue" / "fleet.yaml"
BASE: dict[str, Any] = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
STACKS = ("prod.research-manager", "prod.research-use1", "prod.research-usw2")
WORKERS = STACKS[1:]
QUEUED_KINDS = ("Namespace", "LocalQueue", "PriorityClass", "WorkloadPriorityClass", "ClusterTrainingRuntime")


def _objects(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    text = yaml.safe_dump(data, sort_keys=False)
    for stack in STACKS:
        plan = build_plan(load_fleet_text(text, stack).fleet(stack), stack)
        out[stack] = [r.args for stage in plan.stages if stage.included for r in stage.content.resources]
    return out


TEAM_NAMESPACES = {t["name"] for t in BASE["teams"]}


def _kube(args: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of `kind` (of a Namespace, the teams' only: the GPU Operator's is a worker's own)."""
    return sorted(
        (
            a["object"]
            for a in args
            if "object" in a
            and a["object"]["kind"] == kind
            and (kind != "Namespace" or a["object"]["metadata"]["name"] in TEAM_NAMESPACES)
        ),
        key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]),
    )


def _releases(args: list[dict[str, Any]]) -> dict[str, str]:
    return {a["name"]: a["version"] for a in args if "chart" in a and a["name"] != "cluster-autoscaler"}


def _kueue_config(args: list[dict[str, Any]]) -> dict[str, Any]:
    (values,) = [a["values"] for a in args if a.get("name") == "kueue"]
    loaded: dict[str, Any] = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    return loaded


def _training_on_one_worker(d: dict[str, Any]) -> None:
    d["clusters"][1]["nodeGroups"][0]["workloadClass"] = "Training"


@pytest.fixture(scope="module")
def golden() -> dict[str, list[dict[str, Any]]]:
    return _objects(copy.deepcopy(BASE))


@pytest.fixture(scope="module")
def training() -> dict[str, list[dict[str, Any]]]:
    data = copy.deepcopy(BASE)
    _training_on_one_worker(data)
    return _objects(data)


@pytest.mark.parametrize("kind", QUEUED_KINDS)
def test_every_cluster_has_the_same_namespaces_queues_priorities_and_runtimes(
    golden: dict[str, list[dict[str, Any]]], training: dict[str, list[dict[str, Any]]], kind: str
) -> None:
    for objects in (golden, training):
        rendered = {stack: _kube(objects[stack], kind) for stack in STACKS}
        assert rendered[WORKERS[0]] == rendered[WORKERS[1]] == rendered[STACKS[0]], kind
    if kind == "ClusterTrainingRuntime":
        names = [o["metadata"]["name"] for o in _kube(training[WORKERS[1]], kind)]
        assert names == ["deepspeed-distributed", "torch-distributed"]


def test_each_worker_queues_only_its_own_flavors_and_the_manager_all(golden: dict[str, list[dict[str, Any]]]) -> None:
    flavors = {s: [o["metadata"]["name"] for o in _kube(golden[s], "ResourceFlavor")] for s in STACKS}
    assert flavors == {STACKS[0]: ["l40s-use1", "l40s-usw2"], WORKERS[0]: ["l40s-use1"], WORKERS[1]: ["l40s-usw2"]}
    for stack in STACKS:
        assert [o["metadata"]["name"] for o in _kube(golden[stack], "ClusterQueue")] == ["speech", "vision"]


def test_a_training_group_on_one_worker_installs_the_job_apis_on_every_cluster(
    golden: dict[str, list[dict[str, Any]]], training: dict[str, list[dict[str, Any]]]
) -> None:
    # Batch groups only: no cluster installs a job API beyond Kueue's built-in kinds and the JobSet the spec asks for
    installed = {
        s: sorted(k for k in _releases(golden[s]) if k in ("jobset", "kubeflow-trainer", "lws")) for s in STACKS
    }
    assert installed == {s: ["jobset"] for s in STACKS}
    jobs = {s: {k: v for k, v in _releases(training[s]).items() if k in ("jobset", "kubeflow-trainer")} for s in STACKS}
    assert len(jobs[STACKS[0]]) == 2 and jobs[STACKS[0]] == jobs[WORKERS[0]] == jobs[WORKERS[1]]
    frameworks = {s: _kueue_config(training[s])["integrations"]["frameworks"] for s in STACKS}
    assert frameworks[STACKS[0]] == frameworks[WORKERS[0]] == frameworks[WORKERS[1]]
    assert {"jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"} <= set(frameworks[WORKERS[1]])


def test_wait_for_pods_ready_on_every_cluster_the_manager_waiting_at_least_as_long_as_any_worker(
    golden: dict[str, list[dict[str, Any]]],
) -> None:
    """A worker's eviction moves the workload; a manager that gave up sooner would evict it on the manager first and
    dispatch it anew without the worker's requeue backoff."""
    timeouts = {}
    for stack in STACKS:
        ready = _kueue_config(golden[stack])["waitForPodsReady"]
        assert ready["requeuingStrategy"]["backoffLimitCount"] > 0
        timeouts[stack] = int(ready["timeout"].rstrip("s"))
    assert timeouts[STACKS[0]] >= max(timeouts[w] for w in WORKERS)
