"""Issue 27: the API server's gates the fleet renders, stage `api`: Pod Security Admission on the team namespaces
and gpufleet's ValidatingAdmissionPolicies. Pod Security vectors are ported from kubernetes
staging/src/k8s.io/pod-security-admission/policy/check_*_test.go; the policies' model is held against the rendered
CEL, evaluated by cel-python."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.simulate import admission_policies, pod_security
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload

MakeModel = Callable[..., FleetModel]


def _c(name: str, **security: Any) -> dict[str, Any]:
    return {"name": name, **({"securityContext": security} if security else {})}


# (check test, pod spec, level, expected (reason, detail) list)
PSA_VECTORS = [
    (
        "check_privileged_test.go TestPrivileged privileged",
        {
            "containers": [
                _c("a"),
                _c("b"),
                _c("c", privileged=False),
                _c("d", privileged=True),
                _c("e", privileged=True),
            ]
        },
        "baseline",
        [("privileged", 'containers "d", "e" must not set securityContext.privileged=true')],
    ),
    (
        "check_hostPathVolumes_test.go TestHostPathVolumes host path volumes",
        {
            "containers": [_c("x")],
            "volumes": [{"name": "a", "hostPath": {}}, {"name": "b", "hostPath": {}}, {"name": "c", "emptyDir": {}}],
        },
        "baseline",
        [("hostPath volumes", 'volumes "a", "b"')],
    ),
    (
        "check_hostNamespaces_test.go TestHostNamespaces multiple host namespaces",
        {"containers": [_c("x")], "hostNetwork": True, "hostIPC": True, "hostPID": True},
        "baseline",
        [("host namespaces", "hostNetwork=true, hostPID=true, hostIPC=true")],
    ),
    (
        "check_capabilities_baseline_test.go TestCapabilitiesBaseline multiple containers",
        {
            "containers": [
                _c("a", capabilities={"add": ["FOO", "BAR"]}),
                _c("b", capabilities={"add": ["BAR", "BAZ"]}),
            ]
        },
        "baseline",
        [
            (
                "non-default capabilities",
                'containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add',
            )
        ],
    ),
    (
        "baseline allows what it does not name",
        {"containers": [_c("a", capabilities={"add": ["NET_RAW"]})]},
        "baseline",
        [("non-default capabilities", 'container "a" must not include "NET_RAW" in securityContext.capabilities.add')],
    ),
    (
        "check_procMount.go: only Default",
        {"containers": [_c("a", procMount="Unmasked"), _c("b", procMount="Default")]},
        "baseline",
        [("procMount", 'container "a" must not set securityContext.procMount to "Unmasked"')],
    ),
    (
        "check_seLinuxOptions.go: a type outside the container types, with a user",
        {
            "securityContext": {"seLinuxOptions": {"type": "spc_t"}},
            "containers": [
                _c("a", seLinuxOptions={"type": "bar", "user": "me"}),
                _c("b", seLinuxOptions={"type": "container_t"}),
            ],
        },
        "baseline",
        [
            (
                "seLinuxOptions",
                'pod and container "a" set forbidden securityContext.seLinuxOptions: types "bar", "spc_t"; user may'
                " not be set",
            )
        ],
    ),
    (
        "check_seccompProfile_baseline.go: Unconfined set explicitly",
        {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [_c("a")]},
        "baseline",
        [("seccompProfile", 'pod must not set securityContext.seccompProfile.type to "Unconfined"')],
    ),
    ("a plain pod passes baseline", {"containers": [_c("a")]}, "baseline", []),
    ("privileged allows everything", {"containers": [_c("a", privileged=True)], "hostPID": True}, "privileged", []),
    (
        "restricted (check_allowPrivilegeEscalation.go, check_capabilities_restricted.go, check_runAsNonRoot.go,"
        " check_seccompProfile_restricted.go), in check ID order",
        {"containers": [_c("a")]},
        "restricted",
        [
            (
                "allowPrivilegeEscalation != false",
                'container "a" must set securityContext.allowPrivilegeEscalation=false',
            ),
            ("unrestricted capabilities", 'container "a" must set securityContext.capabilities.drop=["ALL"]'),
            ("runAsNonRoot != true", 'pod or container "a" must set securityContext.runAsNonRoot=true'),
            (
                "seccompProfile",
                'pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
            ),
        ],
    ),
    (
        "restricted passes a hardened pod",
        {
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [_c("a", allowPrivilegeEscalation=False, capabilities={"drop": ["ALL"]})],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
        },
        "restricted",
        [],
    ),
]


@pytest.mark.parametrize(("case", "spec", "level", "expected"), PSA_VECTORS, ids=[v[0] for v in PSA_VECTORS])
def test_pod_security_checks(case: str, spec: dict[str, Any], level: str, expected: list[tuple[str, str]]) -> None:
    assert pod_security.violations(level, spec) == expected


def _gpu_pod(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}, **spec.pop("container", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"nodeSelector": {"gpufleet.io/node-group": "notebooks"}, "containers": [container], **spec},
    }


def test_team_namespaces_enforce_their_level_from_the_plan(make_model: MakeModel) -> None:
    levels = make_model().pod_security
    assert {ns: levels[ns] for ns in ("vision", "language", "speech")} == dict.fromkeys(
        ("vision", "language", "speech"), ("baseline", "v1.35")
    )


def test_a_privileged_hostpath_pod_is_refused_in_a_team_namespace(make_model: MakeModel) -> None:
    """The issue's case: a privileged pod with a hostPath volume runs in the model; at baseline the API server
    refuses it (PodSecurity is checked before Kueue sees the pod)."""
    model = make_model()
    obj = _gpu_pod(
        "vision",
        "debug",
        container={"securityContext": {"privileged": True}},
        volumes=[{"name": "host", "hostPath": {"path": "/"}}],
    )
    verdict = explain(model, workload(obj))
    (reason,) = verdict.reasons
    assert (verdict.runs, reason.stage) == (False, "api")
    # privileged runs among the baseline checks, hostPathVolumes among the overlapping ones after them (registry.go)
    assert reason.message == (
        'pods "debug" are forbidden: violates PodSecurity "baseline:v1.35": privileged (container "c" must not set'
        ' securityContext.privileged=true), hostPath volumes (volume "host")'
    )
    assert reason.fix == (
        "remove what Pod Security baseline forbids from pod set main; namespace vision enforces baseline"
        " (teams[vision].podSecurity)"
    )
    # outside the team namespaces (no enforce label: privileged) the same pod is admitted
    obj["metadata"]["namespace"] = "default"
    obj["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert explain(model, workload(obj)).runs


def test_a_deployments_pods_are_refused_at_creation(make_model: MakeModel) -> None:
    model = make_model()
    pod = _gpu_pod("vision", "x", hostNetwork=True)
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "server", "namespace": "vision"},
        "spec": {"replicas": 2, "template": {"spec": pod["spec"]}},
    }
    verdict = explain(model, workload(obj))
    assert verdict.reasons[0].stage == "api"
    assert verdict.reasons[0].message == (
        'the Deployment\'s pods are forbidden: violates PodSecurity "baseline:v1.35": host namespaces'
        " (hostNetwork=true) (the Deployment is created; its controller fails to create them)"
    )
    assert verdict.json()["pods"] == {"total": 2, "admitted": 0}


def test_visible_devices_without_a_gpu_is_denied_by_gpufleets_policy(make_model: MakeModel) -> None:
    """The issue's case: NVIDIA_VISIBLE_DEVICES=all without a GPU limit passed the model; the fleet's own
    ValidatingAdmissionPolicy denies the pod."""
    model = make_model()
    obj = _gpu_pod("vision", "sneaky", container={"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]})
    obj["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    verdict = explain(model, workload(obj))
    (reason,) = verdict.reasons
    assert (verdict.runs, reason.stage) == (False, "api")
    assert reason.message.startswith(
        'pods "sneaky" are denied by ValidatingAdmissionPolicy gpufleet-visible-devices-need-gpu: a container sets'
        " NVIDIA_VISIBLE_DEVICES without a nvidia.com/gpu limit"
    )
    # with the GPU it asks for, it runs
    assert explain(
        model, workload(_gpu_pod("vision", "ok", container={"env": obj["spec"]["containers"][0]["env"]}))
    ).runs


def test_the_queue_name_policy_refuses_at_stage_api(make_model: MakeModel) -> None:
    """gpufleet-require-queue-name denies a Job of a team namespace that names no queue. Kueue's mutating webhook
    fills the `default` LocalQueue first (jobframework/defaults.go), so this needs a namespace without one."""
    model = make_model()
    assert model.kueue is not None
    local = {k: v for k, v in model.kueue.local_queues.items() if k != ("vision", "default")}
    model = dataclasses.replace(model, kueue=dataclasses.replace(model.kueue, local_queues=local))
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "vision"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    (reason,) = explain(model, workload(obj)).reasons
    assert reason.stage == "api"
    assert reason.message.startswith("denied by ValidatingAdmissionPolicy gpufleet-require-queue-name: ")


celpy = pytest.importorskip("celpy", reason="cel-python (test extra) evaluates the rendered CEL")


def _cel_denies(policy: dict[str, Any], pod: dict[str, Any]) -> int | None:
    """The index of the first validation of the rendered policy whose CEL is false for `pod`, or None."""
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(pod)}
    for index, validation in enumerate(policy["spec"]["validations"]):
        program = env.program(env.compile(validation["expression"]))
        if not bool(program.evaluate(activation)):
            return index
    return None


ENV = "NVIDIA_VISIBLE_DEVICES"
VISIBLE_DEVICES_PODS = [
    {"containers": [{"name": "c"}]},
    {"containers": [{"name": "c", "env": [{"name": ENV, "value": "all"}]}]},
    {"containers": [{"name": "c", "env": [{"name": ENV, "value": "void"}]}]},
    {"containers": [{"name": "c", "env": [{"name": ENV, "value": "none"}]}]},
    {"containers": [{"name": "c", "env": [{"name": ENV, "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}]},
    {
        "containers": [
            {"name": "c", "env": [{"name": ENV, "value": "0"}], "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ]
    },
    {
        "containers": [
            {"name": "c", "env": [{"name": ENV, "value": "0"}], "resources": {"limits": {"nvidia.com/gpu": "0"}}}
        ]
    },
    {"containers": [{"name": "c", "env": [{"name": ENV, "value": "all"}], "resources": {"limits": {"cpu": "1"}}}]},
    {
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        "initContainers": [{"name": "i", "env": [{"name": ENV, "value": "all"}]}],
    },
    # issue 31: envFrom may set it
    {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "m"}}]}]},
    {"containers": [{"name": "c", "envFrom": [{"prefix": "NVIDIA_", "secretRef": {"name": "s"}}]}]},
    {"containers": [{"name": "c", "envFrom": [{"prefix": "APP_", "configMapRef": {"name": "m"}}]}]},
    {
        "containers": [
            {"name": "c", "envFrom": [{"configMapRef": {"name": "m"}}], "env": [{"name": ENV, "value": "void"}]}
        ]
    },
]


@pytest.mark.parametrize("spec", VISIBLE_DEVICES_PODS)
def test_the_visible_devices_model_agrees_with_the_rendered_cel(make_model: MakeModel, spec: dict[str, Any]) -> None:
    plan = make_model().plan
    (policy,) = (
        r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if (r.args.get("object") or {}).get("metadata", {}).get("name") == admission_policies.VISIBLE_DEVICES
        and r.args["object"]["kind"] == "ValidatingAdmissionPolicy"
    )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    assert admission_policies.visible_devices_refusal(spec) == _cel_denies(policy, pod)


QUEUE_NAME_JOBS = [
    ({}, None),
    ({"kueue.x-k8s.io/queue-name": "vision"}, None),
    ({"kueue.x-k8s.io/queue-name": ""}, None),
    ({}, ("jobset.x-k8s.io/v1alpha2", "JobSet", True)),
    ({}, ("batch/v1", "CronJob", True)),
    ({}, ("jobset.x-k8s.io/v1alpha2", "JobSet", False)),
]


@pytest.mark.parametrize(("labels", "owner"), QUEUE_NAME_JOBS)
def test_the_queue_name_model_agrees_with_the_rendered_cel(
    make_model: MakeModel, labels: dict[str, str], owner: tuple[str, str, bool] | None
) -> None:
    """The model's reading of gpufleet-require-queue-name (kinds, namespaces, the managed-parent exemption) against
    the rendered policy's CEL on CREATE, in a team namespace without a `default` LocalQueue (so no webhook fills the
    name): a Job a CronJob controls is not exempt; the model had exempted any owner."""
    model = make_model()
    assert model.kueue is not None
    local = {k: v for k, v in model.kueue.local_queues.items() if k != ("vision", "default")}
    model = dataclasses.replace(model, kueue=dataclasses.replace(model.kueue, local_queues=local))
    meta: dict[str, Any] = {"name": "j", "namespace": "vision", "labels": labels}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": "p", "uid": "u", "controller": owner[2]}
        ]
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    (policy,) = (
        r.args["object"]
        for s in model.plan.included()
        for r in s.content.resources
        if (r.args.get("object") or {}).get("metadata", {}).get("name") == "gpufleet-require-queue-name"
        and r.args["object"]["kind"] == "ValidatingAdmissionPolicy"
    )
    env = celpy.Environment()
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(obj),
        "oldObject": celpy.json_to_cel(None),
        "request": celpy.json_to_cel({"operation": "CREATE"}),
    }

    def run(expression: str) -> bool:
        return bool(env.program(env.compile(expression)).evaluate(activation))

    spec = policy["spec"]
    matched = all(run(c["expression"]) for c in spec["matchConditions"])
    activation["variables"] = celpy.celtypes.MapType(
        {
            celpy.celtypes.StringType(v["name"]): env.program(env.compile(v["expression"])).evaluate(activation)
            for v in spec["variables"]
        }
    )
    cel_denies = matched and not all(run(v["expression"]) for v in spec["validations"])
    verdict = explain(model, workload(obj))
    model_denies = bool(verdict.reasons) and "gpufleet-require-queue-name" in verdict.reasons[0].message
    assert model_denies == cel_denies


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "JobSet"])
def test_a_gpu_in_requests_without_limits_is_refused_at_create(make_model: MakeModel, kind: str) -> None:
    """issue 41 item 14: an extended resource in requests without limits is invalid (the API server's validation,
    before admission); the model placed such a pod as if it asked for the GPU."""
    model = make_model()
    pod = _gpu_pod("vision", "debug", container={"resources": {"requests": {"nvidia.com/gpu": 1}}})
    obj: dict[str, Any] = pod
    if kind == "Deployment":
        obj = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "debug", "namespace": "vision"},
            "spec": {"replicas": 1, "template": {"spec": pod["spec"]}},
        }
    elif kind == "JobSet":
        obj = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "debug", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
            "spec": {
                "replicatedJobs": [
                    {"name": "w", "replicas": 1, "template": {"spec": {"template": {"spec": pod["spec"]}}}}
                ]
            },
        }
    verdict = explain(model, workload(obj))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert reason.stage == "api"
    path = "spec" if kind == "Pod" else "spec.template.spec"
    detail = (
        f"{path}.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
    )
    why = "nvidia.com/gpu is in container c's requests without a limit"
    if kind == "JobSet":
        assert reason.message.startswith(f"the JobSet's pods are invalid: {detail} ({why})"), reason.message
    else:
        assert reason.message == f'{kind} "debug" is invalid: {detail} ({why}): the API server refuses it'
    assert reason.fix == "set nvidia.com/gpu in the container's limits (a limit alone sets the request to it)"
    # with the limit (the request may stay, equal to it) the same pod is valid
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": 1}
    assert all(r.message.find("non overcommitable") < 0 for r in explain(model, workload(obj)).reasons)


def test_a_gpu_request_other_than_its_limit_is_refused_at_create(make_model: MakeModel) -> None:
    """kubernetes pkg/apis/core/validation ValidateResourceRequirements: "For non overcommitable resources, not only
    requests can't exceed limits, they also can't be lower, i.e. must be equal" (issue 41 item 13 meets it through
    a TrainJob's merged resources)."""
    pod = _gpu_pod(
        "vision", "debug", container={"resources": {"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 1}}}
    )
    (reason,) = explain(make_model(), workload(pod)).reasons
    assert (reason.stage, reason.message) == (
        "api",
        'Pod "debug" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be equal to'
        " nvidia.com/gpu limit of 1 (container c requests 2 nvidia.com/gpu with a limit of 1): the API server refuses"
        " it",
    )


def test_a_cpu_or_memory_request_above_its_limit_is_refused_at_create(make_model: MakeModel) -> None:
    """validateResourceRequirements, kubernetes v1.35.4 pkg/apis/core/validation/validation.go: a request above its
    limit is invalid for every resource ("must be less than or equal to cpu limit of 100m", the message the box's
    API server gives); below it is valid for cpu, memory and ephemeral-storage."""
    model = make_model()
    for resource, request, limit in (
        ("cpu", "2", "100m"),
        ("memory", "8Gi", "4Gi"),
        ("ephemeral-storage", "2Gi", "1Gi"),
    ):
        pod = _gpu_pod(
            "vision", "debug", container={"resources": {"requests": {resource: request}, "limits": {resource: limit}}}
        )
        (reason,) = explain(model, workload(pod)).reasons
        assert (reason.stage, reason.message, reason.fix) == (
            "api",
            f'Pod "debug" is invalid: spec.containers[0].resources.requests: Invalid value: "{request}": must be less'
            f" than or equal to {resource} limit of {limit} (container c requests {request} {resource} with a limit"
            f" of {limit}): the API server refuses it",
            f"raise the container's {resource} limit to its request or above (or lower the request)",
        )
        pod = _gpu_pod(
            "vision", "debug", container={"resources": {"requests": {resource: limit}, "limits": {resource: request}}}
        )
        assert not any(r.stage == "api" for r in explain(model, workload(pod)).reasons)
