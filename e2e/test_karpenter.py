"""Karpenter for real (e2e.box.karpenter): each of the Karpenter golden case's pools launches a node from zero for
the largest pod gpufleet says one of its nodes takes, and the pod runs there.

The pod asks for what gpufleet's node model says a node of the group offers in the resources Karpenter must find
on an instance type or a NodeOverlay (GPUs, MIG slices and time-sliced replicas under nvidia.com/gpu, EFA
interfaces, the EFA driver's hugepages), tolerates the group's taints and selects the group's label: exactly what
the fleet promises a team. Karpenter's own scheduler decides whether any instance type of the pool, with the
pool's overlays, requirements, limits and reservations, fits it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e import summary
from e2e.box import fleet
from e2e.box.client import ApiError
from e2e.conftest import CASES
from gpufleet.simulate.nodes import NodeModel, fleet_nodes
from gpufleet.spec.names import LABEL_NODE_GROUP

SPEC = CASES / "karpenter-mixed" / "fleet.yaml"
NAMESPACE = "box-karpenter"
# Extended resources a Karpenter launch must find capacity for (the rest of the node is the model's to keep).
EXTENDED = ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "hugepages-2Mi")
LAUNCH_SECONDS = 180
# Karpenter's first launch of a run: its informers sync, the NodeOverlays are evaluated and its first batch window
# closes before it creates a NodeClaim. About 1 s on an idle machine (measured), but a CI run on two busy cores
# once passed 180 s before the gate's pods ran: the bound is generous, and the summary prints the time it took.
FIRST_LAUNCH_SECONDS = 600


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fleet.Fleet]:
    running = fleet.up(SPEC, "prod", tmp_path_factory.mktemp("karpenter"), run_karpenter=True)
    yield running
    running.stop()


def pools() -> list[NodeModel]:
    return [m for m in fleet_nodes(fleet.plan_of(SPEC, "prod")) if m.node_pool]


def probe(model: NodeModel) -> dict[str, Any]:
    wanted = {r: str(model.allocatable[r]) for r in EXTENDED if model.allocatable.get(r)}
    if "hugepages-2Mi" in wanted:
        wanted["hugepages-2Mi"] += "Mi"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"probe-{model.group}", "namespace": NAMESPACE},
        "spec": {
            "nodeSelector": {LABEL_NODE_GROUP: model.group},
            "tolerations": [
                {"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]} for t in model.taints
            ],
            "containers": [
                {
                    "name": "probe",
                    "image": "probe:1",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi", **wanted}, "limits": wanted},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


def _where(box: fleet.Fleet, name: str) -> tuple[str, dict[str, str]] | None:
    pod = box.cluster.admin.get("v1", "Pod", name, NAMESPACE)
    node = pod["spec"].get("nodeName")
    if pod["status"].get("phase") != "Running" or not node:
        return None
    return node, box.cluster.admin.get("v1", "Node", node)["metadata"]["labels"]


def _why(box: fleet.Fleet, name: str, namespace: str = NAMESPACE) -> str:
    events = box.cluster.admin.list("v1", "Event", namespace, fieldSelector=f"involvedObject.name={name}")
    return "; ".join(
        f"{e.get('source', {}).get('component') or e.get('reportingComponent')}: {e['message']}" for e in events
    )


GATES = "gpufleet-network"
# Each gate pod's phase and node as the gates fixture saw them change, and the state of a gate that did not run
# when the wait ended, for the failure message.
SEEN: list[str] = []
DIAGNOSES: dict[str, str] = {}


def _pod_state(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['name']} {pod['status'].get('phase')} on {pod['spec'].get('nodeName')}"


def _wait(done: Any, seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if got := done():
            return got
        time.sleep(2)
    return None


@pytest.fixture(scope="module")
def gates(box: fleet.Fleet) -> dict[str, list[tuple[str, str]]]:
    """The fleet's own NCCL gate Jobs on Karpenter pools: their pods are the first work Karpenter launches nodes for.
    Once they run, the box deletes the Jobs, as their completion would free the nodes (KWOK runs a pod until it is
    deleted)."""
    admin = box.cluster.admin
    groups = {m.group for m in pools()}
    jobs = [
        j for j in admin.list("batch/v1", "Job", GATES) if j["metadata"]["name"].removeprefix("nccl-gate-") in groups
    ]

    def running() -> dict[str, list[tuple[str, str]]] | None:
        out: dict[str, list[tuple[str, str]]] = {}
        for job in jobs:
            name, want = job["metadata"]["name"], job["spec"]["parallelism"]
            pods = admin.list("v1", "Pod", GATES, labelSelector=f"batch.kubernetes.io/job-name={name}")
            placed = [
                (p["metadata"]["name"], p["spec"]["nodeName"]) for p in pods if p["status"].get("phase") == "Running"
            ]
            for p in pods:
                seen = _pod_state(p)
                if seen not in SEEN:
                    SEEN.append(seen)
            if len(placed) < want:
                return None
            out[name.removeprefix("nccl-gate-")] = placed
        return out

    started = time.monotonic()
    placed = _wait(running, FIRST_LAUNCH_SECONDS) or {}
    for group, pods in placed.items():
        summary.LINES.append(
            f"karpenter: nccl-gate-{group} ran {len(pods)} pods on nodes it launched, "
            f"{time.monotonic() - started:.0f} s after Karpenter answered ready"
        )
    for job in jobs:
        name = job["metadata"]["name"]
        if name.removeprefix("nccl-gate-") not in placed:
            DIAGNOSES[name] = _diagnosis(box, name, GATES)  # before the cleanup below deletes its pods
    for job in jobs:
        admin.delete("batch/v1", "Job", job["metadata"]["name"], GATES, propagationPolicy="Foreground")
    _wait(lambda: not admin.list("v1", "Pod", GATES, labelSelector="batch.kubernetes.io/job-name"), 60)
    return {
        j["metadata"]["name"].removeprefix("nccl-gate-"): placed.get(
            j["metadata"]["name"].removeprefix("nccl-gate-"), []
        )
        for j in jobs
    }


@pytest.fixture(scope="module")
def launched(box: fleet.Fleet, gates: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]] | None]:
    admin = box.cluster.admin
    admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    models = pools()
    for model in models:
        admin.create(probe(model))
    started, out = time.monotonic(), {}

    def all_running() -> bool:
        for model in models:
            if model.group not in out and (where := _where(box, f"probe-{model.group}")):
                out[model.group] = where
                summary.LINES.append(
                    f"karpenter: probe-{model.group} ran on a node it launched, {time.monotonic() - started:.0f} s"
                )
        return len(out) == len(models)

    _wait(all_running, LAUNCH_SECONDS)
    return {m.group: out.get(m.group) for m in models}


def _karpenter_lines(box: fleet.Fleet) -> list[str]:
    """Karpenter's log less its start-up chatter: what it decided, and its errors."""
    if box.karpenter is None:
        return ["-"]
    quiet = ('"Starting EventSource"', '"Starting Controller"', '"Starting workers"', '"starting server"')
    return [line[:600] for line in box.karpenter.process.tail(2000).splitlines() if not any(q in line for q in quiet)]


def _diagnosis(box: fleet.Fleet, pod: str, namespace: str = NAMESPACE) -> str:
    claims = [c["metadata"]["name"] for c in box.cluster.admin.list("karpenter.sh/v1", "NodeClaim")]
    log = "\n".join(_karpenter_lines(box)[-12:])
    errors = box.karpenter.errors[-3:] if box.karpenter else []
    events = _why(box, pod, namespace)[-1500:]
    pods = [
        f"{_pod_state(p)}: {[(c['type'], c['status'], c.get('reason')) for c in p['status'].get('conditions', [])]}"
        for p in box.cluster.admin.list("v1", "Pod", namespace)
        if p["metadata"]["name"].startswith(pod)
    ]
    pod_events = [
        f"{e['involvedObject']['name']} {e.get('reason')}: {e['message'][:300]}"
        for e in box.cluster.admin.list("v1", "Event", namespace)
        if e["involvedObject"].get("kind") == "Pod" and e["involvedObject"]["name"].startswith(pod)
    ]
    return (
        f"events: {events}; seen: {SEEN}; pods: {pods}; pod events: {pod_events[-12:]}; nodeclaims: {claims}; "
        f"registration errors: {errors}; karpenter: {log[-6000:]}"
    )


@pytest.mark.parametrize("group", [m.group for m in pools() if m.allocatable.get("vpc.amazonaws.com/efa")])
def test_the_fleets_nccl_gate_runs_on_nodes_karpenter_launches(
    box: fleet.Fleet, gates: dict[str, Any], group: str
) -> None:
    placed = gates.get(group)
    why = "" if placed else DIAGNOSES.get(f"nccl-gate-{group}", "")
    assert placed, f"the NCCL gate of {group} did not run within {FIRST_LAUNCH_SECONDS} s: {why}"
    for _pod, node in placed:
        labels = box.cluster.admin.get("v1", "Node", node)["metadata"]["labels"]
        assert labels.get("karpenter.sh/nodepool") == group, (node, labels)


@pytest.mark.parametrize("group", [m.group for m in pools()])
def test_pool_launches_a_node_for_the_largest_pod_gpufleet_promises(
    box: fleet.Fleet, launched: dict[str, Any], group: str
) -> None:
    where = launched[group]
    if where is None:
        pytest.fail(f"no node ran probe-{group} within {LAUNCH_SECONDS} s: {_diagnosis(box, f'probe-{group}')}")
    node, labels = where
    assert labels.get(LABEL_NODE_GROUP) == group, (node, labels)
    assert labels.get("karpenter.sh/nodepool") == group, (node, labels)


def test_the_pools_ec2_node_classes_are_applied_unchanged(box: fleet.Fleet) -> None:
    try:
        classes = box.cluster.admin.list("karpenter.k8s.aws/v1", "EC2NodeClass")
    except ApiError as exc:
        pytest.fail(f"EC2NodeClass not served: {exc}")
    assert sorted(c["metadata"]["name"] for c in classes) == sorted(m.node_pool or "" for m in pools())
    assert box.report.refused == []
