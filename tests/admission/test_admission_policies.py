"""The ValidatingAdmissionPolicies: what they match, that their CEL is well formed, and what they admit and
reject, evaluated with a small model of the API server's admission (matchConditions, variables, validations,
failurePolicy Fail)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from gpufleet.plan.manifests import admission_policy as ap
from gpufleet.plan.manifests import kueue
from gpufleet.plan.stages.admission import system_namespaces
from gpufleet.spec.fleet import Fleet

ALL_KINDS = (kueue.JOBSET_FRAMEWORK, kueue.TRAINJOB_FRAMEWORK, kueue.LWS_FRAMEWORK)
QUEUE = ap.queue_name_policy(ALL_KINDS)
DEVICES = ap.visible_devices_policy()


def _expressions(policy: dict[str, Any]) -> list[str]:
    spec = policy["spec"]
    return [c["expression"] for c in spec.get("matchConditions", []) + spec.get("variables", []) + spec["validations"]]


# ---------------------------------------------------------------------------------------------------------------
# What they match


def _rule(group: str, version: str, resource: str) -> dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": [version], "resources": [resource], "operations": ["CREATE", "UPDATE"]}


def test_queue_name_policy_matches_jobs_and_every_installed_job_kind_on_create_and_update() -> None:
    assert QUEUE["spec"]["matchConstraints"]["resourceRules"] == [
        _rule("batch", "v1", "jobs"),
        _rule("jobset.x-k8s.io", "*", "jobsets"),
        _rule("trainer.kubeflow.org", "*", "trainjobs"),
        _rule("leaderworkerset.x-k8s.io", "*", "leaderworkersets"),
    ]
    assert QUEUE["spec"]["failurePolicy"] == "Fail"
    assert QUEUE["spec"]["validations"][0]["message"].startswith(
        "Jobs, JobSets, TrainJobs and LeaderWorkerSets in team namespaces must set the label"
    )


@pytest.mark.parametrize(
    ("installed", "resources", "exempts_children"),
    [
        ((), ["jobs"], False),
        ((kueue.JOBSET_FRAMEWORK,), ["jobs", "jobsets"], True),
        ((kueue.LWS_FRAMEWORK,), ["jobs", "leaderworkersets"], False),
    ],
)
def test_queue_name_policy_follows_what_is_installed(
    installed: tuple[str, ...], resources: list[str], exempts_children: bool
) -> None:
    spec = ap.queue_name_policy(installed)["spec"]
    assert [r["resources"][0] for r in spec["matchConstraints"]["resourceRules"]] == resources
    names = [c["name"] for c in spec["matchConditions"]]
    assert ("not-created-by-a-kueue-managed-parent" in names) is exempts_children


def test_visible_devices_policy_matches_pod_creation_and_ephemeral_containers() -> None:
    assert DEVICES["spec"]["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/ephemeralcontainers"]},
    ]
    assert DEVICES["spec"]["failurePolicy"] == "Fail"


def test_bindings_scope_the_policies(fleet: Fleet) -> None:
    queue = ap.binding(ap.QUEUE_NAME_POLICY, ap.namespaces_in(t.namespace for t in fleet.teams))
    assert queue["spec"] == {
        "policyName": "gpufleet-require-queue-name",
        "validationActions": ["Deny"],
        "matchResources": {
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ads", "speech-ml", "vision"]}
                ]
            }
        },
    }
    exempt = system_namespaces(fleet)
    assert exempt == [
        "gpu-operator",
        "gpufleet-health",
        "gpufleet-network",
        "gpufleet-system",
        "kube-system",
        "kueue-system",
        "monitoring",
    ]
    devices = ap.binding(ap.VISIBLE_DEVICES_POLICY, ap.namespaces_not_in(exempt))
    assert devices["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["operator"] == "NotIn"


# ---------------------------------------------------------------------------------------------------------------
# Structure of the CEL (no CEL library needed)

ROOTS = {"object", "oldObject", "request", "variables", "has", "string", "true", "false"}


@pytest.mark.parametrize("expression", _expressions(QUEUE) + _expressions(DEVICES))
def test_cel_structure(expression: str) -> None:
    depth = 0
    for ch in re.sub(r"'[^']*'", "''", expression):  # ignore string literals
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        assert depth >= 0, expression
    assert depth == 0, f"unbalanced: {expression}"
    bare = re.sub(r"'[^']*'", "''", expression)
    # every identifier that starts a path is a CEL root of admission policies or a comprehension variable
    starts = set(re.findall(r"(?<![.\w])([A-Za-z_]\w*)(?=\s*[.(\[]|\s*(?:==|!=|&&|\|\||\?|$|\)))", bare))
    macro_vars = set(re.findall(r"\.(?:all|exists|exists_one|map|filter)\(\s*(\w+)\s*,", bare))
    assert starts <= ROOTS | macro_vars | {"in"}, starts - ROOTS - macro_vars


# ---------------------------------------------------------------------------------------------------------------
# Behaviour: a model of ValidatingAdmissionPolicy evaluation

celpy = pytest.importorskip("celpy", reason="cel-python (test extra) evaluates CEL")


def _eval(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def admit(policy: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None) -> bool:
    """True when the API server would let the request through.

    An evaluation error would deny too (failurePolicy Fail), but here it raises: on a well-formed object none
    of our expressions may error, so a deny must come from the logic, never from a missing field."""
    operation = "CREATE" if old is None else "UPDATE"
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(obj),
        "oldObject": celpy.json_to_cel(old),
        "request": celpy.json_to_cel({"operation": operation}),
    }
    spec = policy["spec"]
    for condition in spec.get("matchConditions", []):
        if not bool(_eval(condition["expression"], activation)):
            return True  # not matched: the policy does not apply
    variables = {v["name"]: _eval(v["expression"], activation) for v in spec.get("variables", [])}
    activation["variables"] = celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in variables.items()})
    return all(bool(_eval(v["expression"], activation)) for v in spec["validations"])


def job(labels: dict[str, str] | None = None, owner: tuple[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "train", "namespace": "vision"}
    if labels is not None:
        meta["labels"] = labels
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": "p", "uid": "u", "controller": True}
        ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }


@pytest.mark.parametrize(
    ("obj", "allowed"),
    [
        (job({"kueue.x-k8s.io/queue-name": "vision"}), True),
        (job(), False),
        (job({"app": "x"}), False),
        (job({"kueue.x-k8s.io/queue-name": ""}), False),
        (job(owner=("jobset.x-k8s.io/v1alpha2", "JobSet")), True),  # JobSet-owned: Kueue admits the JobSet
        # No MPI Operator is installed, so an MPIJob owner exempts nothing (an ownerReference is the creator's claim).
        (job(owner=("kubeflow.org/v2beta1", "MPIJob")), False),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {
                    "name": "tj",
                    "ownerReferences": [
                        {
                            "apiVersion": "trainer.kubeflow.org/v1alpha1",
                            "kind": "TrainJob",
                            "name": "tj",
                            "uid": "u",
                            "controller": True,
                        }
                    ],
                },
                "spec": {},
            },
            True,  # a TrainJob's JobSet: Kueue admits the TrainJob
        ),
        (
            {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t"}, "spec": {}},
            False,
        ),
        (
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": "s", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
                "spec": {},
            },
            True,
        ),
        (job(owner=("batch/v1", "CronJob")), False),  # a CronJob's Job is the workload: it needs the label
        ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"}, "spec": {}}, False),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "js", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
                "spec": {},
            },
            True,
        ),
    ],
)
def test_queue_name_on_create(obj: dict[str, Any], allowed: bool) -> None:
    assert admit(QUEUE, obj) is allowed


def test_queue_name_cannot_be_removed_but_old_unlabelled_jobs_stay_updatable() -> None:
    labelled = job({"kueue.x-k8s.io/queue-name": "vision"})
    assert admit(QUEUE, job({"app": "x"}), old=labelled) is False
    assert admit(QUEUE, labelled, old=labelled) is True
    assert admit(QUEUE, job(), old=job()) is True  # created before the policy: finalizers can still be removed


def pod(
    *containers: dict[str, Any], init: list[dict[str, Any]] | None = None, ephemeral: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    if ephemeral:
        spec["ephemeralContainers"] = ephemeral
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "vision"}, "spec": spec}


def container(env: list[dict[str, Any]] | None = None, gpus: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "i"}
    if env is not None:
        c["env"] = env
    if gpus is not None:
        c["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return c


ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


@pytest.mark.parametrize(
    ("obj", "allowed"),
    [
        (pod(container()), True),
        (pod(container(gpus="1")), True),
        (pod(container(env=[{"name": "OTHER", "value": "x"}])), True),
        (pod(container(env=ALL)), False),  # the escape: every GPU of the node, none allocated
        (pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,1"}])), False),
        (
            pod(
                container(
                    env=[
                        {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "k"}}}
                    ]
                )
            ),
            False,
        ),
        (pod(container(env=ALL, gpus="1")), True),
        (pod(container(env=ALL, gpus="0")), False),
        (
            pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])),
            True,
        ),  # the safe value for CUDA images
        (pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}])), True),
        (pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES"}])), True),  # empty: no devices
        (pod(container(gpus="1"), container(env=ALL)), False),  # the sidecar without a GPU
        (pod(container(), init=[container(env=ALL)]), False),
        (pod(container(), init=[container(env=ALL, gpus="1")]), True),
        (pod(container(), ephemeral=[{"name": "debug", "image": "i", "env": ALL}]), False),
        (pod(container(), ephemeral=[{"name": "debug", "image": "i"}]), True),
        # issue 31: a ConfigMap or Secret the policy cannot read may set it through envFrom
        (pod({**container(), "envFrom": [{"configMapRef": {"name": "m"}}]}), False),
        (pod({**container(gpus="1"), "envFrom": [{"configMapRef": {"name": "m"}}]}), True),
        (pod({**container(), "envFrom": [{"prefix": "NVIDIA_", "secretRef": {"name": "s"}}]}), False),
        (pod({**container(), "envFrom": [{"prefix": "APP_", "configMapRef": {"name": "m"}}]}), True),
        (
            pod(
                {
                    **container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]),
                    "envFrom": [{"configMapRef": {"name": "m"}}],
                }
            ),
            True,
        ),
        (pod({**container(env=ALL), "envFrom": [{"prefix": "APP_", "configMapRef": {"name": "m"}}]}), False),
        (
            pod(container(), ephemeral=[{"name": "debug", "image": "i", "envFrom": [{"configMapRef": {"name": "m"}}]}]),
            False,
        ),
    ],
)
def test_visible_devices(obj: dict[str, Any], allowed: bool) -> None:
    assert admit(DEVICES, obj) is allowed


def test_ephemeral_container_added_by_kubectl_debug_is_checked() -> None:
    before = pod(container())
    after = copy.deepcopy(before)
    after["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "i", "env": ALL}]
    assert admit(DEVICES, after, old=before) is False
