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


ON_H100_AFFINITY = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpufleet.io/node-group", "operator": "In", "values": ["h100"]}]}
                ]
            }
        }
    }
}
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
        deployment(pod_spec(nodeSelector={"kubernetes.io/arch": "amd64"}, **TOLERATE)),  # names no other group
        deployment(pod_spec(), ns="ads"),  # every quota of ads is on serve: Kueue can only put it there
        deployment(pod_spec(container(probe=False, gpus=None) | {"name": "proxy"}, container(), **ON_SERVE)),
        deployment(pod_spec(container(resource="nvidia.com/mig-1g.10gb", gpus="1"), **ON_SERVE)),
        of_kind("StatefulSet", pod_spec(**AFFINITY)),
        of_kind("ReplicaSet", pod_spec(**ON_SERVE)),
        pod(pod_spec(**TOLERATE), labels=dict(QUEUE)),
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
        "toleration-with-another-selector",
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
        _probed(pod(pod_spec(**TOLERATE), labels=dict(QUEUE))),
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
        # placement, not intent (issue 41 item 8): a serving priority, a keyless toleration of every taint, Kueue's
        # serving priority label, on a Training group or naming no group
        deployment(pod_spec(priorityClassName="serving", nodeSelector={"gpufleet.io/node-group": "h100"})),
        deployment(pod_spec(priorityClassName="serving")),
        deployment(pod_spec(tolerations=[{"operator": "Exists"}], nodeSelector={"gpufleet.io/node-group": "h100"})),
        deployment(pod_spec(tolerations=[{"operator": "Exists"}])),
        deployment(pod_spec(), labels={"kueue.x-k8s.io/priority-class": "serving"}),
        pod(pod_spec(priorityClassName="serving", nodeSelector={"gpufleet.io/node-group": "h100"}), labels=dict(QUEUE)),
        # the serving toleration on a pod its selection keeps off Inference groups
        deployment(pod_spec(nodeSelector={"gpufleet.io/node-group": "h100"}, **TOLERATE)),
        deployment(pod_spec(nodeSelector={"gpufleet.io/workload-class": "Training"}, **TOLERATE)),
        deployment(pod_spec(**TOLERATE, **ON_H100_AFFINITY)),
        # a team with other quotas that names nothing: Kueue may give it any flavor, judged when it does (below)
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
        "serving-class-on-training",
        "serving-class-alone",
        "toleration-all-on-training",
        "toleration-all-alone",
        "kueue-serving-label",
        "bare-pod-serving-class-on-training",
        "serving-toleration-on-training",
        "serving-toleration-training-class",
        "serving-toleration-training-affinity",
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


TAIL = (
    " has no readinessProbe: a replica would take traffic before its model answers. Add a readinessProbe that sends one"
    " inference (docs/inference.md), or ask a cluster admin to set teams[].servingReadinessProbe"
)


@pytest.mark.parametrize(
    ("obj", "said"),
    [
        (
            lws(pod_spec(container(), **ON_SERVE), pod_spec(container(), **TOLERATE)),
            "LeaderWorkerSet llm lands on an Inference node group (leaderTemplate: nodeSelector"
            " gpufleet.io/node-group=serve; workerTemplate: toleration of gpufleet.io/serving=true:NoSchedule) and its"
            " GPU container leaderTemplate server, workerTemplate server",
        ),
        (
            deployment(pod_spec(**AFFINITY)),
            "Deployment llm lands on an Inference node group (required node affinity gpufleet.io/node-group In"
            " h100,serve) and its GPU container server",
        ),
        (
            deployment(pod_spec(nodeSelector={"gpufleet.io/workload-class": "Inference"})),
            "Deployment llm lands on an Inference node group (nodeSelector gpufleet.io/workload-class=Inference) and"
            " its GPU container server",
        ),
        (
            deployment(pod_spec(), ns="ads"),
            "Deployment llm lands on an Inference node group (namespace ads, whose team has quota only on Inference"
            " groups) and its GPU container server",
        ),
    ],
    ids=["lws-selector-and-toleration", "affinity", "workload-class", "namespace"],
)
def test_the_message_says_what_placed_it_and_names_the_containers(
    plan: RolloutPlan, obj: dict[str, Any], said: str
) -> None:
    assert message(_policy(plan), Request(obj, obj["metadata"]["namespace"])) == said + TAIL


KUEUE = ("system:serviceaccounts", "system:serviceaccounts:kueue-system", "system:authenticated")


def _gated_pod(**spec: Any) -> dict[str, Any]:
    """A Deployment's pod as Kueue's pod webhook leaves it: gated, naming no node group (ownerReferences: its
    ReplicaSet)."""
    return pod(
        pod_spec(schedulingGates=[{"name": "kueue.x-k8s.io/admission"}], **spec),
        labels=dict(QUEUE),
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}],
    )


def _admitted_by_kueue(gated: dict[str, Any], flavor: str, tolerations: list[dict[str, str]]) -> dict[str, Any]:
    """The pod after Kueue admits its workload to `flavor` (kueue v0.19.2 pod_controller.go prepare, podset.Merge):
    the flavor's nodeLabels merged into nodeSelector, its tolerations appended, the admission gate removed."""
    new = copy.deepcopy(gated)
    spec = new["spec"]
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), "gpufleet.io/node-group": flavor}
    spec["tolerations"] = [*spec.get("tolerations", []), *tolerations]
    del spec["schedulingGates"]
    return new


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def test_a_pod_kueue_places_on_an_inference_flavor_is_judged_when_kueue_ungates_it(plan: RolloutPlan) -> None:
    """issue 41 item 8: a serving Deployment naming no group, in a team with Training and Inference quota, is admitted
    (Kueue may give it either flavor); its gated pod too (judged at its parent); Kueue's patch that puts it on the
    Inference flavor is refused, the one that puts it on the Training flavor is not."""
    gated = _gated_pod()
    _admitted(plan, Request(deployment(pod_spec()), "vision"))
    _admitted(plan, Request(gated, "vision", groups=KUEUE))
    serve_tolerations = [dict(GPU_TOLERATION), dict(TOLERATE["tolerations"][0])]
    on_serve = _admitted_by_kueue(gated, "serve", serve_tolerations)
    _refused(plan, Request(on_serve, "vision", groups=KUEUE, old=gated))
    assert message(_policy(plan), Request(on_serve, "vision", groups=KUEUE, old=gated)) == (
        "Pod p lands on an Inference node group (nodeSelector gpufleet.io/node-group=serve) and its GPU container"
        " server" + TAIL
    )
    _admitted(plan, Request(_admitted_by_kueue(gated, "h100", [dict(GPU_TOLERATION)]), "vision", old=gated))
    probed = _probed(gated)
    _admitted(plan, Request(_admitted_by_kueue(probed, "serve", serve_tolerations), "vision", old=probed))


def test_a_bound_pod_stays_updatable(plan: RolloutPlan) -> None:
    """Once bound (spec.nodeName) an update cannot move a pod: a label change of an unprobed pod already on serve (it
    ran before the policy) passes."""
    old = pod(pod_spec(nodeName="ip-10-0-0-1", **ON_SERVE), labels=dict(QUEUE))
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["app"] = "llm"
    _admitted(plan, Request(new, "vision", old=old))


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
    assert variables["inferenceOnlyNamespaces"] == '["ads"]'


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
