"""The serving readiness policy (gpufleet.plan.manifests.readiness_policy) as the API server applies it: its rendered
CEL evaluated with cel-python (tests/admission/vap.py) on planted requests. A serving workload on an Inference group
whose GPU container has no readinessProbe is denied (Deny) or admitted with a warning (Warn); without the policy the
same request passes every other rendered policy, and the legitimate requests beside it pass."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.plan.manifests import readiness_policy as rp
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from tests.admission.conftest import build_fleet
from tests.admission.vap import JOB_CONTROLLER, TEAM_MEMBER, Request, denied_by, message, policies, warned_by

QUEUE = {"kueue.x-k8s.io/queue-name": "vision"}
PROBE = {"exec": {"command": ["python3", "-c", "ping"]}, "periodSeconds": 15}
SERVING_TAINT = {"key": "gpufleet.io/serving", "value": "true", "effect": "NoSchedule"}


def serving_group(data: dict[str, Any]) -> None:
    """An Inference group `serve` (tainted gpufleet.io/serving), vision with quota on it, ads with quota only there."""
    data["nodeGroups"].append(
        {
            "name": "serve",
            "instanceType": "g6e.12xlarge",
            "workloadClass": "Inference",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
            "scaling": {"minSize": 0, "maxSize": 4},
            "taints": [dict(SERVING_TAINT)],
        }
    )
    data["teams"][0]["quotas"].append({"nodeGroup": "serve", "gpus": 8})
    data["teams"][2]["quotas"] = [{"nodeGroup": "serve", "gpus": 4}]
    data["cost"]["gpuHourUsd"]["serve"] = 2.0


def _plan(*edits: Any) -> RolloutPlan:
    return build_plan(build_fleet(serving_group, *edits), "prod")


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    return _plan()


def container(*, gpus: Any = 4, probe: bool = False, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    c: dict[str, Any] = {"name": "server", "image": "vllm/vllm-openai:v0.10.2"}
    if gpus is not None:
        c["resources"] = {"limits": {resource: gpus}}
    if probe:
        c["readinessProbe"] = copy.deepcopy(PROBE)
    return c


def pod_spec(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"containers": list(containers) or [container()], **fields}


ON_SERVE = {"nodeSelector": {"gpufleet.io/node-group": "serve"}}


def deployment(spec: dict[str, Any] | None = None, ns: str = "vision", **meta: Any) -> dict[str, Any]:
    labels = {**QUEUE, **meta.pop("labels", {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm", "namespace": ns, "labels": labels, **meta},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {}}, "spec": spec or pod_spec(**ON_SERVE)}},
    }


def of_kind(kind: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    obj = deployment(spec, **meta)
    obj["kind"] = kind
    return obj


def pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "vision", **meta}, "spec": spec}


def lws(leader: dict[str, Any] | None, worker: dict[str, Any]) -> dict[str, Any]:
    lwt: dict[str, Any] = {"size": 2, "workerTemplate": {"spec": worker}}
    if leader is not None:
        lwt["leaderTemplate"] = {"metadata": {"labels": {"role": "leader"}}, "spec": leader}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "llm", "namespace": "vision", "labels": dict(QUEUE)},
        "spec": {"replicas": 1, "leaderWorkerTemplate": lwt},
    }


def _refused(plan: RolloutPlan, request: Request) -> None:
    assert denied_by(plan, request, without=[rp.POLICY]) == [], "another policy refuses it: the plant is wrong"
    assert denied_by(plan, request) == [rp.POLICY]


def _admitted(plan: RolloutPlan, request: Request) -> None:
    assert denied_by(plan, request) == []
    assert warned_by(plan, request) == []


def _policy(plan: RolloutPlan) -> dict[str, Any]:
    return next(p for p, _ in policies(plan) if p["metadata"]["name"] == rp.POLICY)


TOLERATE = {
    "tolerations": [{"key": "gpufleet.io/serving", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
}
AFFINITY = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "gpufleet.io/node-group", "operator": "In", "values": ["h100", "serve"]}
                        ]
                    }
                ]
            }
        }
    }
}


@pytest.mark.parametrize(
    "obj",
    [
        deployment(),
        deployment(pod_spec(nodeSelector={"gpufleet.io/workload-class": "Inference"})),
        deployment(pod_spec(**AFFINITY)),
        deployment(pod_spec(**TOLERATE)),
        deployment(pod_spec(tolerations=[{"key": "gpufleet.io/serving", "operator": "Exists"}])),
        deployment(pod_spec(tolerations=[{"operator": "Exists"}])),  # tolerates every taint
        deployment(pod_spec(priorityClassName="serving")),
        deployment(pod_spec(), labels={"kueue.x-k8s.io/priority-class": "serving"}),
        deployment(pod_spec(), ns="ads"),  # every quota of ads is on serve: Kueue can only put it there
        deployment(pod_spec(container(probe=False, gpus=None) | {"name": "proxy"}, container(), **ON_SERVE)),
        deployment(pod_spec(container(resource="nvidia.com/mig-1g.10gb", gpus="1"), **ON_SERVE)),
        of_kind("StatefulSet", pod_spec(**AFFINITY)),
        of_kind("ReplicaSet", pod_spec(**ON_SERVE)),
        pod(pod_spec(priorityClassName="serving"), labels=dict(QUEUE)),
        lws(pod_spec(container(), **ON_SERVE), pod_spec(container(probe=True), **ON_SERVE)),
        lws(pod_spec(container(probe=True), **ON_SERVE), pod_spec(container(), **ON_SERVE)),
        lws(None, pod_spec(**TOLERATE)),
    ],
    ids=[
        "node-group",
        "workload-class",
        "affinity",
        "toleration",
        "toleration-exists",
        "toleration-all",
        "priority-class",
        "kueue-priority-label",
        "inference-only-team",
        "second-container",
        "mig-slice",
        "statefulset",
        "replicaset",
        "bare-pod",
        "lws-leader",
        "lws-worker",
        "lws-without-leader-template",
    ],
)
def test_a_serving_workload_without_a_readiness_probe_is_refused(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    _refused(plan, Request(obj, obj["metadata"]["namespace"]))
    # from a controller too (a GitOps agent, a CI deployer): the policy judges the object, not who sends it
    _refused(plan, Request(obj, obj["metadata"]["namespace"], groups=JOB_CONTROLLER))


def _probed(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    specs = (
        [obj["spec"]]
        if obj["kind"] == "Pod"
        else [t["spec"] for k, t in obj["spec"]["leaderWorkerTemplate"].items() if k != "size"]
        if obj["kind"] == "LeaderWorkerSet"
        else [obj["spec"]["template"]["spec"]]
    )
    for spec in specs:
        for c in spec["containers"]:
            c["readinessProbe"] = copy.deepcopy(PROBE)
    return obj


@pytest.mark.parametrize(
    "obj",
    [
        _probed(deployment()),
        _probed(of_kind("StatefulSet", pod_spec(**AFFINITY))),
        _probed(pod(pod_spec(priorityClassName="serving"), labels=dict(QUEUE))),
        _probed(lws(pod_spec(**ON_SERVE), pod_spec(**ON_SERVE))),
        # only containers that request GPUs need it
        deployment(pod_spec(container(gpus=None) | {"name": "proxy"}, container(probe=True), **ON_SERVE)),
        deployment(pod_spec(container(gpus=0), **ON_SERVE)),
        # not an Inference group: a Training group, the GPU taint every group carries, a taint's other value or effect
        deployment(pod_spec(nodeSelector={"gpufleet.io/node-group": "h100"})),
        deployment(pod_spec(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])),
        deployment(pod_spec(tolerations=[{"key": "gpufleet.io/serving", "operator": "Equal", "value": "false"}])),
        deployment(pod_spec(tolerations=[{"key": "gpufleet.io/serving", "operator": "Exists", "effect": "NoExecute"}])),
        deployment(pod_spec(priorityClassName="training")),
        # a team with other quotas that names nothing: Kueue may give it any flavor (documented)
        deployment(pod_spec()),
        # judged at the parent: a Deployment's ReplicaSet and pods, an LWS's StatefulSets
        of_kind(
            "ReplicaSet",
            pod_spec(**ON_SERVE),
            ownerReferences=[
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm", "uid": "u", "controller": True}
            ],
        ),
        pod(
            pod_spec(**ON_SERVE),
            ownerReferences=[
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}
            ],
        ),
        of_kind(
            "StatefulSet",
            pod_spec(**ON_SERVE),
            ownerReferences=[
                {
                    "apiVersion": "leaderworkerset.x-k8s.io/v1",
                    "kind": "LeaderWorkerSet",
                    "name": "llm",
                    "uid": "u",
                    "controller": True,
                }
            ],
        ),
        of_kind(
            "StatefulSet",
            pod_spec(**ON_SERVE),
            ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "llm-0", "uid": "u", "controller": True}],
        ),
    ],
    ids=[
        "deployment",
        "statefulset",
        "bare-pod",
        "lws",
        "cpu-sidecar",
        "zero-gpus",
        "training-group",
        "gpu-taint-only",
        "other-taint-value",
        "other-taint-effect",
        "preemptible-class",
        "no-hint",
        "deployments-replicaset",
        "replicasets-pod",
        "lws-leader-statefulset",
        "lws-worker-statefulset",
    ],
)
def test_probed_or_not_serving_passes(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    # a controller creates the owned objects (a team member may not: gpufleet-no-owner-spoofing)
    groups = JOB_CONTROLLER if "ownerReferences" in obj["metadata"] else TEAM_MEMBER
    _admitted(plan, Request(obj, obj["metadata"]["namespace"], groups=groups))


def test_the_message_names_the_containers(plan: RolloutPlan) -> None:
    obj = lws(pod_spec(container(), **ON_SERVE), pod_spec(container(), **ON_SERVE))
    assert message(_policy(plan), Request(obj, "vision")) == (
        "LeaderWorkerSet llm lands on an Inference node group and its GPU container leaderTemplate server,"
        " workerTemplate server has no readinessProbe: a replica would take traffic before its model answers. Add a"
        " readinessProbe that sends one inference (docs/inference.md), or ask a cluster admin to set"
        " teams[].servingReadinessProbe"
    )


def test_an_update_is_refused_only_for_what_it_breaks(plan: RolloutPlan) -> None:
    probed = _probed(deployment())
    unprobed = deployment()
    # removing the probe
    _refused(plan, Request(unprobed, "vision", old=probed))
    # an object admitted before the policy stays updatable (scale, labels, finalizers)
    scaled = copy.deepcopy(unprobed)
    scaled["spec"]["replicas"] = 3
    _admitted(plan, Request(scaled, "vision", old=unprobed))
    # but may not add another unprobed GPU container
    more = copy.deepcopy(unprobed)
    more["spec"]["template"]["spec"]["containers"].append(container() | {"name": "second"})
    assert denied_by(plan, Request(more, "vision", old=unprobed)) == [rp.POLICY]


def test_warn_admits_with_a_warning_and_off_does_not_check() -> None:
    def modes(data: dict[str, Any]) -> None:
        data["admission"]["servingReadinessProbe"] = "Warn"
        data["teams"][2]["servingReadinessProbe"] = "Off"
        data["teams"][0]["servingReadinessProbe"] = "Deny"

    plan = _plan(modes)
    bound = {b["metadata"]["name"]: b["spec"] for p, b in policies(plan) if p["metadata"]["name"] == rp.POLICY}
    assert {name: (s["validationActions"], s["matchResources"]["namespaceSelector"]) for name, s in bound.items()} == {
        "gpufleet-serving-readiness-deny": (
            ["Deny"],
            {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["vision"]}]},
        ),
        "gpufleet-serving-readiness-warn": (
            ["Warn", "Audit"],
            {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["speech-ml"]}]},
        ),
    }
    assert denied_by(plan, Request(deployment(), "vision")) == [rp.POLICY]
    speech = deployment(ns="speech-ml", labels={"kueue.x-k8s.io/queue-name": "speech"})
    assert denied_by(plan, Request(speech, "speech-ml")) == []
    assert warned_by(plan, Request(speech, "speech-ml")) == [rp.POLICY]
    _admitted(plan, Request(deployment(pod_spec(), ns="ads"), "ads"))


def test_rendered_only_where_something_is_checked() -> None:
    def off(data: dict[str, Any]) -> None:
        data["admission"]["servingReadinessProbe"] = "Off"

    assert rp.POLICY not in [p["metadata"]["name"] for p, _ in policies(_plan(off))]
    without_inference = build_plan(build_fleet(), "prod")
    assert rp.POLICY not in [p["metadata"]["name"] for p, _ in policies(without_inference)]


def test_only_the_taints_no_other_group_carries_mark_inference(plan: RolloutPlan) -> None:
    variables = {v["name"]: v["expression"] for v in _policy(plan)["spec"]["variables"]}
    assert variables["inferenceTaints"] == '[{"effect": "NoSchedule", "key": "gpufleet.io/serving", "value": "true"}]'
    assert variables["inferenceGroups"] == '["serve"]'
    assert variables["servingClasses"] == '["serving"]'
    assert variables["inferenceNamespace"] == 'request.namespace in ["ads"]'


def test_plan_md_says_what_the_policy_does_per_namespace() -> None:
    def modes(data: dict[str, Any]) -> None:
        data["teams"][1]["servingReadinessProbe"] = "Warn"
        data["teams"][2]["servingReadinessProbe"] = "Off"

    (admission,) = (s for s in _plan(modes).included() if s.name == "admission")
    (note,) = (n for n in admission.content.notes if n.startswith("Serving readiness"))
    assert note == (
        "Serving readiness (ValidatingAdmissionPolicy `gpufleet-serving-readiness`, docs/inference.md): a Deployment,"
        " StatefulSet, ReplicaSet, LeaderWorkerSet or bare Pod bound for Inference group serve whose GPU containers lack a"
        " readinessProbe is refused in `vision`; admitted with a warning in `speech-ml`; not checked in `ads`"
        " (admission.servingReadinessProbe, teams[].servingReadinessProbe)."
    )
    without_inference = build_plan(build_fleet(), "prod")
    (admission,) = (s for s in without_inference.included() if s.name == "admission")
    assert not any(n.startswith("Serving readiness") for n in admission.content.notes)
