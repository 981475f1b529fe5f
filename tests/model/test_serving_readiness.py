"""gpufleet-serving-readiness in `gpufleet explain` (issue 34 item 4): the model of gpufleet.simulate.admission_policies
held against the rendered policy's CEL (evaluated by cel-python, tests/admission/vap.py) on the example fleet, the
refusal under Deny and the warning under Warn, and `explain --as` reporting it for a team member."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpufleet.cli import main
from gpufleet.plan.manifests import readiness_policy as rp
from gpufleet.simulate import admission_policies
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload
from tests import fastyaml
from tests.admission.vap import JOB_CONTROLLER, Request, message, policies

MakeModel = Callable[..., FleetModel]
ROOT = Path(__file__).resolve().parents[2]
PROBE = {"httpGet": {"path": "/health", "port": 8000}}
SERVING = {"key": "gpufleet.io/serving", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def _container(probe: bool = False, gpus: Any = 4, name: str = "server") -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "vllm/vllm-openai:v0.10.2"}
    if gpus is not None:
        c["resources"] = {"limits": {"nvidia.com/gpu": gpus, "cpu": "40", "memory": "300Gi"}}
    if probe:
        c["readinessProbe"] = dict(PROBE)
    return c


def _spec(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"containers": list(containers) or [_container()], **fields}


def _deployment(spec: dict[str, Any], kind: str = "Deployment", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": "llm",
            "namespace": "language",
            "labels": {"kueue.x-k8s.io/queue-name": "language", **labels},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "llm"}},
            "template": {"metadata": {"labels": {"app": "llm"}}, "spec": spec},
        },
    }


def _lws(leader: dict[str, Any] | None, worker: dict[str, Any]) -> dict[str, Any]:
    lwt: dict[str, Any] = {"size": 2, "workerTemplate": {"spec": worker}}
    if leader is not None:
        lwt["leaderTemplate"] = {"spec": leader}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "llm", "namespace": "language", "labels": {"kueue.x-k8s.io/queue-name": "language"}},
        "spec": {"replicas": 1, "leaderWorkerTemplate": lwt},
    }


def _pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "language", **meta.pop("labels", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "language", "labels": labels, **meta},
        "spec": spec,
    }


L40S = {"nodeSelector": {"gpufleet.io/node-group": "l40s"}}
TOLERATES = {"tolerations": [dict(SERVING)]}
CASES = [
    _deployment(_spec(**L40S)),
    _deployment(_spec(_container(probe=True), **L40S)),
    _deployment(_spec(**TOLERATES)),
    _deployment(_spec(tolerations=[{"operator": "Exists"}])),
    _deployment(_spec(tolerations=[{"key": "gpufleet.io/serving", "operator": "Equal", "value": "yes"}])),
    _deployment(_spec(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])),
    _deployment(_spec(nodeSelector={"gpufleet.io/workload-class": "Inference"})),
    _deployment(_spec(nodeSelector={"gpufleet.io/node-group": "h100"})),
    _deployment(
        _spec(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "gpufleet.io/node-group", "operator": "In", "values": ["l40s"]}
                                ]
                            }
                        ]
                    }
                }
            }
        )
    ),
    _deployment(_spec(priorityClassName="serving")),
    _deployment(_spec(priorityClassName="training")),
    _deployment(_spec(), **{"kueue.x-k8s.io/priority-class": "serving"}),
    _deployment(_spec()),  # language also has h100 and notebooks quota: not judged
    _deployment(_spec(_container(gpus=None, name="proxy"), _container(), **L40S)),
    _deployment(_spec(_container(gpus="0"), **L40S)),
    _deployment(_spec(**L40S), kind="StatefulSet"),
    _pod(_spec(**L40S)),
    _pod(
        _spec(**L40S),
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}],
    ),
    _pod(
        _spec(**L40S),
        ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u", "controller": True}],
    ),
    _lws(_spec(**L40S), _spec(_container(probe=True), **L40S)),
    _lws(_spec(_container(probe=True), **L40S), _spec(**L40S)),
    _lws(None, _spec(**L40S)),
    _lws(_spec(_container(probe=True), **L40S), _spec(_container(probe=True), **L40S)),
]


def _cel_unprobed(plan: Any, obj: dict[str, Any]) -> list[str] | None:
    """What the rendered policy's CEL says: None when it admits the object, else the containers its message names."""
    (policy,) = (
        p for p, b in policies(plan) if p["metadata"]["name"] == rp.POLICY and "Deny" in b["spec"]["validationActions"]
    )
    text = message(policy, Request(obj, "language", groups=JOB_CONTROLLER))
    if text is None:
        return None
    lead = f"{obj['kind']} {obj['metadata']['name']} lands on an Inference node group ("
    assert text.startswith(lead), text
    return [text[len(lead) :].split(" has no readinessProbe")[0]]


@pytest.mark.parametrize("obj", CASES, ids=range(len(CASES)))
def test_the_model_agrees_with_the_rendered_cel(make_model: MakeModel, obj: dict[str, Any]) -> None:
    model = make_model()
    assert model.serving is not None
    wl = workload(obj)
    failed = admission_policies.serving_readiness(
        model.policies,
        model.serving,
        kind=wl.kind,
        name=wl.name,
        namespace=wl.namespace,
        controllers=wl.controllers,
        pod_sets=wl.pod_sets,
    )
    cel = _cel_unprobed(model.plan, obj)
    if cel is None:
        assert failed is None
    else:
        assert failed is not None and failed[0] == "Deny"
        found = admission_policies.unprobed(model.serving, wl.kind, wl.namespace, wl.pod_sets)
        placed = "; ".join(dict.fromkeys(because for because, _ in found))
        assert [f"{placed}) and its GPU container {', '.join(c for _, c in found)}"] == cel


def test_the_targets_come_from_the_nodes_not_the_renderer(make_model: MakeModel) -> None:
    """The model's reading of the example fleet: l40s is its Inference group; its gpufleet.io/serving taint is on no
    other group, the GPU taint on all of them; serving is the non-preemptible class; no team has only l40s quota."""
    targets = make_model().serving
    assert targets is not None
    assert (targets.groups, targets.taints, targets.namespaces) == (
        frozenset({"l40s"}),
        ({"key": "gpufleet.io/serving", "value": "true", "effect": "NoSchedule"},),
        frozenset(),
    )


def test_explain_refuses_under_deny_and_notes_under_warn(make_model: MakeModel) -> None:
    obj = _lws(_spec(_container(probe=True), **L40S), _spec(**L40S))
    (reason,) = explain(make_model(), workload(obj)).reasons
    assert reason.stage == "api"
    assert reason.message == (
        "denied by ValidatingAdmissionPolicy gpufleet-serving-readiness: LeaderWorkerSet llm lands on an Inference node"
        " group (workerTemplate: nodeSelector gpufleet.io/node-group=l40s) and its GPU container workerTemplate server has no readinessProbe: a replica would take traffic before"
        " its model answers. Add a readinessProbe that sends one inference (docs/inference.md), or ask a cluster admin"
        " to set teams[].servingReadinessProbe"
    )
    assert reason.fix == (
        "give each container that requests GPUs a readinessProbe that sends one inference (the recipes in"
        " docs/inference.md), or set teams[language].servingReadinessProbe: Warn"
    )

    def warn(data: dict[str, Any]) -> None:
        data.setdefault("admission", {})["servingReadinessProbe"] = "Warn"

    verdict = explain(make_model(warn), workload(obj))
    assert verdict.runs, verdict.reasons
    assert (
        "the API server warns (ValidatingAdmissionPolicy gpufleet-serving-readiness, Warn): LeaderWorkerSet llm lands"
        " on an Inference node group (workerTemplate: nodeSelector gpufleet.io/node-group=l40s) and its GPU container"
        " workerTemplate server has no readinessProbe"
    ) in "\n".join(verdict.notes)

    def off(data: dict[str, Any]) -> None:
        next(t for t in data["teams"] if t["name"] == "language")["servingReadinessProbe"] = "Off"

    verdict = explain(make_model(off), workload(obj))
    assert verdict.runs and not any("readinessProbe" in n for n in verdict.notes)


def test_explain_as_a_team_member_reports_the_refusal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The language team's own member submits the examples' vLLM Deployment without its readiness probe: access passes,
    the policy refuses it (exit 1); the example as written runs."""
    member = "arn:aws:sts::111122223333:assumed-role/language-researchers/alice"
    docs = list(fastyaml.load_all((ROOT / "docs/examples/vllm.yaml").read_text()))
    unprobed = copy.deepcopy(docs[0])
    del unprobed["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    path = tmp_path / "unprobed.yaml"
    path.write_text(json.dumps(unprobed))
    spec = str(ROOT / "fleet.yaml")
    assert main(["explain", spec, "--env", "prod", str(path), "--as", member, "--format", "json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)["workloads"]
    assert verdict["reasons"][0]["stage"] == "api"
    assert verdict["reasons"][0]["message"].startswith(
        "denied by ValidatingAdmissionPolicy gpufleet-serving-readiness: Deployment vllm-server lands on an Inference"
        " node group (nodeSelector gpufleet.io/node-group=l40s) and its GPU container server has no readinessProbe"
    )
    example = str(ROOT / "docs/examples/vllm.yaml")
    assert main(["explain", spec, "--env", "prod", example, "--as", member]) == 0
