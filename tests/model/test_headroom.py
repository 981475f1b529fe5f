"""Headroom and priorities end to end in the model behind `gpufleet explain` (issue 34 item 2): a serving pod preempts
a headroom placeholder and runs on the warm node, placeholders never take anything, batch pods (preemptionPolicy
Never) do not take warm nodes, and a batch job that absorbed spare capacity is evicted when serving needs the node.

The semantics are upstream's, read from the rendered PriorityClasses and Deployments (gpufleet.simulate.preemption):
kube-scheduler DefaultPreemption (kubernetes/kubernetes pkg/scheduler/framework/plugins/defaultpreemption
default_preemption.go: only pods of lower priority are victims, a pod with preemptionPolicy Never preempts nothing;
pkg/scheduler/framework/preemption/preemption.go pickOneNodeForPreemption: the node whose highest victim ranks lowest),
the Priority admission plugin (plugin/pkg/admission/priority/admission.go: no class and no global default is priority
0, PreemptLowerPriority) and the Cluster Autoscaler's overprovisioning (cluster-autoscaler/FAQ.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.simulate import preemption
from gpufleet.simulate.nodes import NodeModel
from gpufleet.simulate.verdict import FleetModel, explain, with_running
from gpufleet.simulate.workload import workload
from gpufleet.spec.fleet import SharingStrategy
from tests.model.conftest import EXAMPLE, group, model_of

MakeModel = Callable[..., FleetModel]
PLACEHOLDER = "Deployment gpufleet-system/headroom-l40s"


def l40s(*, headroom: int | None, max_size: int = 2, karpenter: bool = False) -> Callable[[dict[str, Any]], None]:
    """l40s from 0 to `max_size` nodes (4 x L40S each), with `headroom` warm nodes; every l40s quota fits it."""

    def edit(data: dict[str, Any]) -> None:
        g = group(data, "l40s")
        g["scaling"] = {"minSize": 0, "maxSize": max_size}
        g.pop("headroom", None)
        if headroom is not None:
            g["headroom"] = {"nodes": headroom}
        if karpenter:
            g["provisioner"] = "Karpenter"
            g["scaling"] = {"maxSize": max_size}
            data["environments"]["dev"]["overrides"]["nodeGroups"]["l40s"]["scaling"] = {"maxSize": 2}
        for team in data["teams"]:
            for quota in team["quotas"]:
                if quota["nodeGroup"] == "l40s":
                    quota["gpus"] = 4 * max_size
                    quota.pop("lendingLimit", None)

    return edit


def on_l40s(kind: str, name: str, namespace: str, pods: int, priority: str | None) -> dict[str, Any]:
    """A Deployment (replicas) or Job (parallelism) of one-node pods (4 GPUs) on l40s, of a priority class, with a
    readiness probe (the serving readiness policy asks for one on Inference groups)."""
    container = {
        "name": "main",
        "image": "vllm/vllm-openai:v0.10.2",
        "resources": {"limits": {"nvidia.com/gpu": 4}},
        "readinessProbe": {"exec": {"command": ["python3", "/probe.py"]}, "periodSeconds": 10},
    }
    spec: dict[str, Any] = {"nodeSelector": {"gpufleet.io/node-group": "l40s"}, "containers": [container]}
    if priority:
        spec["priorityClassName"] = priority
    template = {"metadata": {"labels": {"app": name}}, "spec": spec}
    meta = {"name": name, "namespace": namespace}
    if kind == "Deployment":
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": name}}, "template": template},
        }
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {**meta, "labels": {"kueue.x-k8s.io/queue-name": namespace}},
        "spec": {"parallelism": pods, "completions": pods, "template": template},
    }


SERVING = on_l40s("Deployment", "llm", "language", 1, "serving")
BATCH = on_l40s("Job", "eval", "speech", 2, "batch")


def test_the_placeholders_are_residents_of_their_group_read_from_the_plan() -> None:
    model = model_of(l40s(headroom=1))
    (placeholder,) = set(model.residents["l40s"])
    assert placeholder.owner == PLACEHOLDER and placeholder.own
    assert (placeholder.priority.value, placeholder.priority.policy) == (-10, "Never")
    assert placeholder.request["nvidia.com/gpu"] == 4
    # Priority admission: the rendered classes, and priority 0 / PreemptLowerPriority without one.
    assert model.priorities["serving"] == preemption.PodPriority(
        value=100000, policy="PreemptLowerPriority", class_name="serving"
    )
    assert model.priorities["batch"].policy == "Never"
    assert "l40s" not in model_of(l40s(headroom=None)).residents


def test_the_placeholders_are_not_managed_by_kueue_and_run() -> None:
    model = model_of(l40s(headroom=1))
    dep = next(
        r.args["object"]
        for s in model.plan.included()
        for r in s.content.resources
        if r.args.get("object", {}).get("metadata", {}).get("name") == "headroom-l40s"
    )
    verdict = explain(model, workload(dep))
    assert verdict.runs, verdict.reasons
    assert verdict.cluster_queue is None and verdict.node_group == "l40s"
    assert any("not managed by Kueue" in n for n in verdict.notes)


@pytest.mark.parametrize("karpenter", [False, True], ids=["cluster-autoscaler", "karpenter"])
def test_serving_preempts_a_placeholder_and_runs_on_the_warm_node(karpenter: bool) -> None:
    model = model_of(l40s(headroom=1, karpenter=karpenter))
    verdict = explain(model, workload(SERVING))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.flavor, verdict.node_group) == ("language", "l40s", "l40s")
    assert verdict.json()["preempts"] == [
        {"nodeGroup": "l40s", "owner": PLACEHOLDER, "priority": -10, "pods": 1, "placeholder": True}
    ]
    assert (
        f"preempts 1 placeholder pod(s) of {PLACEHOLDER} (priority gpufleet-headroom -10) on node group l40s"
        " (kube-scheduler preemption of lower-priority pods): its replacement brings up 1 new node(s)"
    ) in verdict.notes
    assert "gpufleet's headroom placeholders hold their warm nodes" in verdict.assumes


def test_without_headroom_serving_waits_for_a_new_node() -> None:
    verdict = explain(model_of(l40s(headroom=None)), workload(SERVING))
    assert verdict.runs and "preempts" not in verdict.json()


def test_batch_does_not_take_the_warm_node() -> None:
    """preemptionPolicy Never (gpufleet's preemptible classes): the batch pod cannot preempt the placeholder, and
    the group's one node is the placeholder's."""
    model = model_of(l40s(headroom=1, max_size=1))
    verdict = explain(model, workload(on_l40s("Job", "eval", "speech", 1, "batch")))
    assert not verdict.runs
    assert [r.json() for r in verdict.reasons] == [
        {
            "stage": "autoscaler",
            "message": (
                "node group l40s may grow to 1 node(s) and 1 of them hold pods it may not preempt"
                f" ({PLACEHOLDER}; its priority is batch 100, preemptionPolicy Never): 1 of 1 pod(s) of this shape"
                " find no node"
            ),
            "fix": (
                "raise nodeGroups[l40s].scaling.maxSize, or lower its headroom.nodes, or run it at a priority that"
                " may preempt them"
            ),
        }
    ]
    # The same pod serving (PreemptLowerPriority) takes that node.
    assert explain(model, workload(on_l40s("Deployment", "llm", "language", 1, "serving"))).runs


def test_a_pod_without_a_priority_class_preempts_placeholders() -> None:
    """Priority 0 and PreemptLowerPriority (the Priority admission plugin's default): the FAQ's "other pods need to
    use priority 0 or higher in order to be able to preempt overprovisioning pods"."""
    verdict = explain(
        model_of(l40s(headroom=1, max_size=1)), workload(on_l40s("Deployment", "app", "language", 1, None))
    )
    assert verdict.runs
    assert [p["owner"] for p in verdict.json()["preempts"]] == [PLACEHOLDER]


def test_replicas_beyond_the_warm_nodes_scale_up_until_max_size() -> None:
    verdict = explain(model_of(l40s(headroom=1)), workload(on_l40s("Deployment", "llm", "language", 3, "serving")))
    assert (verdict.pods_admitted, verdict.pods_total) == (2, 3)
    # Nothing it may not preempt holds a node: the group is too small, said as without headroom.
    assert verdict.reasons[0].message == "node group l40s may grow to 2 node(s); 3 pod(s) of this shape need 3"
    # The evicted placeholder has no node left to come back on.
    assert any("1 wait for a node (node group l40s is at maxSize 2)" in n for n in verdict.notes)


def test_serving_evicts_batch_that_absorbed_the_spare_capacity() -> None:
    """A batch Job holds both nodes of l40s; serving (100000, PreemptLowerPriority) evicts one of its pods, which
    then waits: the group is at maxSize (Kueue keeps the Job admitted; its pod is recreated Pending)."""
    model = model_of(l40s(headroom=None))
    batch = workload(BATCH)
    ran = explain(model, batch)
    assert ran.runs and ran.placements == ((0, "l40s", 2),)
    busy = with_running(model, batch, ran)
    verdict = explain(busy, workload(SERVING))
    assert verdict.runs, verdict.reasons
    assert verdict.json()["preempts"] == [
        {"nodeGroup": "l40s", "owner": "Job speech/eval", "priority": 100, "pods": 1, "placeholder": False}
    ]
    assert any("1 wait for a node (node group l40s is at maxSize 2)" in n for n in verdict.notes)
    assert verdict.assumes.startswith("assumes the fleet runs only the --running workloads")
    # Batch cannot take it back, nor can a pod of priority 0: neither ranks above batch.
    assert not explain(busy, workload(on_l40s("Job", "more", "speech", 1, "batch"))).runs
    assert not explain(busy, workload(on_l40s("Deployment", "app", "language", 1, None))).runs


def test_a_placeholder_goes_before_batch() -> None:
    """pickOneNodeForPreemption: of a node whose victim is a placeholder (-10) and one whose victim is a batch pod
    (100), the scheduler takes the first."""
    model = model_of(l40s(headroom=1))
    batch = workload(on_l40s("Job", "eval", "speech", 1, "batch"))
    ran = explain(model, batch)
    assert ran.runs and "preempts" not in ran.json()  # it got the second node, not the warm one
    verdict = explain(with_running(model, batch, ran), workload(SERVING))
    assert [p["owner"] for p in verdict.json()["preempts"]] == [PLACEHOLDER]


def _node(gpus: int, max_size: int = 4, min_size: int = 0) -> NodeModel:
    return NodeModel(
        group="g",
        instance_type="x",
        labels={},
        taints=(),
        allocatable={"nvidia.com/gpu": gpus},
        numa_nodes=(0,),
        per_numa={},
        topology_policy="none",
        topology_scope="container",
        cpu_manager_policy="none",
        sharing=SharingStrategy.EXCLUSIVE,
        fail_requests_greater_than_one=False,
        mig_strategy=None,
        min_size=min_size,
        max_size=max_size,
        reserved=None,
        template={},
    )


def _pod(owner: str, value: int, gpus: int, policy: str = "PreemptLowerPriority") -> preemption.Resident:
    return preemption.Resident(
        owner=owner,
        priority=preemption.PodPriority(value=value, policy=policy, class_name=owner),
        request={"nvidia.com/gpu": gpus},
        own=False,
    )


def test_victims_are_reprieved_from_the_highest_priority_down() -> None:
    """SelectVictimsOnNode: with a 2-GPU pod to place on a 4-GPU node holding two 2-GPU pods of priority 1 and 2,
    only the priority-1 pod is evicted."""
    low, mid = _pod("low", 1, 2), _pod("mid", 2, 2)
    out = preemption.schedule(
        _node(4, max_size=1),
        (low, mid),
        {"nvidia.com/gpu": 2},
        1,
        preemption.PodPriority(value=10, policy="PreemptLowerPriority", class_name="x"),
        scalable=True,
    )
    assert out.placed == 1 and dict(out.preempted) == {low: 1}


def test_equal_priority_is_never_a_victim_and_never_pods_preempt_nothing() -> None:
    same = _pod("same", 10, 4)
    for arriving in (
        preemption.PodPriority(value=10, policy="PreemptLowerPriority", class_name="x"),
        preemption.PodPriority(value=1000, policy="Never", class_name="x"),
    ):
        out = preemption.schedule(_node(4, max_size=1), (same,), {"nvidia.com/gpu": 4}, 1, arriving, scalable=True)
        assert out.placed == 0 and not out.preempted and out.held == 1


def test_explain_running_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(yaml.safe_dump(EXAMPLE))
    l40s(headroom=None)(data)
    spec = tmp_path / "fleet.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    (tmp_path / "batch.yaml").write_text(yaml.safe_dump(BATCH))
    (tmp_path / "serving.yaml").write_text(yaml.safe_dump(SERVING))
    args = [
        "explain",
        str(spec),
        "--env",
        "prod",
        "--running",
        str(tmp_path / "batch.yaml"),
        str(tmp_path / "serving.yaml"),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Deployment language/llm: runs, through ClusterQueue language, flavor l40s, on node group l40s" in out
    assert "note: preempts 1 pod(s) of Job speech/eval (priority batch 100) on node group l40s" in out
    assert main([*args, "--format", "json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["workloads"]
    assert only["preempts"][0]["owner"] == "Job speech/eval"
    # A --running workload that would not run itself is a usage error.
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(on_l40s("Job", "big", "speech", 3, "batch")))
    bad = [
        "explain",
        str(spec),
        "--env",
        "prod",
        "--running",
        str(tmp_path / "big.yaml"),
        str(tmp_path / "serving.yaml"),
    ]
    assert main(bad) == 2
    assert capsys.readouterr().err == (
        "gpufleet explain: error: --running: Job speech/big would not run on this fleet itself: node group l40s may"
        " grow to 2 node(s); 3 pod(s) of this shape need 3\n"
    )


def test_the_pod_sets_of_one_workload_meet_the_nodes_the_earlier_ones_took() -> None:
    """The example fleet with l40s headroom 1 (minSize 2) and its multi-node LWS (a leader and a worker of 4 GPUs
    each): the leader takes the free node, so the worker preempts the placeholder on the other."""
    model = model_of(lambda data: group(data, "l40s").update(headroom={"nodes": 1}))
    (lws,) = [
        workload(d)
        for d in yaml.safe_load_all(
            (Path(__file__).parents[2] / "docs" / "examples" / "lws-inference.yaml").read_text()
        )
        if d and d.get("kind") == "LeaderWorkerSet"
    ]
    verdict = explain(model, lws)
    assert verdict.runs, verdict.reasons
    assert [(p["owner"], p["pods"]) for p in verdict.json()["preempts"]] == [(PLACEHOLDER, 1)]


def test_fewer_negative_victims_win_over_a_lower_raw_sum() -> None:
    """A 2-GPU pod: node 1 holds two 1-GPU placeholders (-10 each), node 2 one 2-GPU placeholder (-10). Both have the
    same highest victim; upstream sums priority + MaxInt32 + 1, so node 2 (one victim) wins, where a raw sum (-20 <
    -10) would pick node 1."""
    small = _pod("small", -10, 1)
    big = _pod("big", -10, 2)
    # settled by priority then order: node 1 takes both small ones, node 2 the big one
    out = preemption.schedule(
        _node(2, max_size=2, min_size=2),
        (small, small, big),
        {"nvidia.com/gpu": 2},
        1,
        preemption.PodPriority(value=100000, policy="PreemptLowerPriority", class_name="serving"),
        scalable=False,
    )
    assert out.placed == 1 and dict(out.preempted) == {big: 1}


def test_the_example_keeps_one_multi_node_replica_warm() -> None:
    """The example fleet: l40s keeps 2 warm nodes (one 8-GPU replica); its LWS's leader and worker each preempt one."""
    (lws,) = [
        workload(d)
        for d in yaml.safe_load_all(
            (Path(__file__).parents[2] / "docs" / "examples" / "lws-inference.yaml").read_text()
        )
        if d and d.get("kind") == "LeaderWorkerSet"
    ]
    verdict = explain(model_of(), lws)
    assert verdict.runs, verdict.reasons
    assert sum(p["pods"] for p in verdict.json()["preempts"] if p["owner"] == PLACEHOLDER) == 2
