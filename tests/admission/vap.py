"""A model of the API server's ValidatingAdmissionPolicy admission over the policies a plan renders: a request
(object, old object, operation, namespace, the requester's groups) meets every policy whose binding selects the
namespace and whose resourceRules match the resource; matchConditions, variables and validations are CEL,
evaluated with cel-python. Used to show a hole open (the rendered policies without the fix admit a planted
manifest) and closed (with it, the request is denied)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from gpufleet.plan.parts import RolloutPlan

celpy = pytest.importorskip("celpy", reason="cel-python (test extra) evaluates CEL")

# kind -> (API group, resource) of the objects the tests plant.
RESOURCES = {
    "Pod": ("", "pods"),
    "Service": ("", "services"),
    "ConfigMap": ("", "configmaps"),
    "ServiceAccount": ("", "serviceaccounts"),
    "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
    "Job": ("batch", "jobs"),
    "CronJob": ("batch", "cronjobs"),
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "ReplicaSet": ("apps", "replicasets"),
    "DaemonSet": ("apps", "daemonsets"),
    "JobSet": ("jobset.x-k8s.io", "jobsets"),
    "PyTorchJob": ("kubeflow.org", "pytorchjobs"),
    "MPIJob": ("kubeflow.org", "mpijobs"),
    "TrainJob": ("trainer.kubeflow.org", "trainjobs"),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io", "leaderworkersets"),
    "RayCluster": ("ray.io", "rayclusters"),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "LocalQueue": ("kueue.x-k8s.io", "localqueues"),
}
TEAM_MEMBER = ("gpufleet-team-vision",)
JOB_CONTROLLER = ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")


@dataclass(frozen=True)
class Request:
    obj: Mapping[str, Any] | None  # None on DELETE
    namespace: str
    groups: Sequence[str] = TEAM_MEMBER
    old: Mapping[str, Any] | None = None
    user: str = "u"

    @property
    def operation(self) -> str:
        if self.obj is None:
            return "DELETE"
        return "CREATE" if self.old is None else "UPDATE"

    @property
    def kind(self) -> str:
        return str((self.obj or self.old or {})["kind"])


def policies(plan: RolloutPlan) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(policy, binding) of every binding of every ValidatingAdmissionPolicy the plan renders (a policy may have
    several: one per validationActions)."""
    objects = [
        r.args["object"]
        for stage in plan.included()
        for r in stage.content.resources
        if "object" in r.args and r.args["object"]["apiVersion"].startswith("admissionregistration.k8s.io/")
    ]
    bindings = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    return [
        (o, b)
        for o in objects
        if o["kind"] == "ValidatingAdmissionPolicy"
        for b in bindings
        if b["spec"]["policyName"] == o["metadata"]["name"]
    ]


def _selects(binding: Mapping[str, Any], namespace: str) -> bool:
    for e in binding["spec"]["matchResources"]["namespaceSelector"].get("matchExpressions", []):
        assert e["key"] == "kubernetes.io/metadata.name", e
        if (namespace in e["values"]) != (e["operator"] == "In"):
            return False
    return True


def _matches(policy: Mapping[str, Any], request: Request) -> bool:
    group, resource = RESOURCES[request.kind]
    return any(
        group in rule["apiGroups"] and resource in rule["resources"] and request.operation in rule["operations"]
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
    )


def _join(items: Any, separator: Any) -> Any:
    return celpy.celtypes.StringType(str(separator).join(str(x) for x in items))


# Kubernetes' CEL has the strings extension's `<list>.join(separator)` (cel-go ext.Strings); cel-python does not.
_K8S_FUNCTIONS = {"join": _join}


@functools.cache
def _program(expression: str) -> Any:
    """The compiled program of one expression: every planted request evaluates the same rendered CEL again."""
    env = celpy.Environment()
    return env.program(env.compile(expression), functions=_K8S_FUNCTIONS)


def _eval(expression: str, activation: dict[str, Any]) -> Any:
    return _program(expression).evaluate(activation)


def denies(policy: Mapping[str, Any], request: Request) -> bool:
    """Whether this policy denies the request (an evaluation error raises: on a well-formed object none of the
    expressions may error, so a deny must come from the logic, never from a missing field)."""
    return message(policy, request) is not None


def message(policy: Mapping[str, Any], request: Request) -> str | None:
    """The message the API server returns when this policy denies the request (the first failing validation's
    messageExpression, evaluated, else its message); None when it admits it."""
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(request.obj),
        "oldObject": celpy.json_to_cel(request.old),
        "request": celpy.json_to_cel(
            {
                "operation": request.operation,
                "namespace": request.namespace,
                "name": (request.obj or request.old or {})["metadata"]["name"],
                "userInfo": {"username": request.user, "groups": list(request.groups)},
            }
        ),
    }
    spec = policy["spec"]
    for condition in spec.get("matchConditions", []):
        if not bool(_eval(condition["expression"], activation)):
            return None  # not matched: the policy does not apply
    variables: dict[Any, Any] = {}
    activation["variables"] = celpy.celtypes.MapType(variables)
    for v in spec.get("variables", []):  # a variable may read the ones before it
        variables[celpy.celtypes.StringType(v["name"])] = _eval(v["expression"], activation)
        activation["variables"] = celpy.celtypes.MapType(variables)
    for v in spec["validations"]:
        if not bool(_eval(v["expression"], activation)):
            if "messageExpression" in v:
                return str(_eval(v["messageExpression"], activation))
            return str(v["message"])
    return None


def denied_by(plan: RolloutPlan, request: Request, *, without: Iterable[str] = ()) -> list[str]:
    """The rendered policies (except those named in `without`) that deny the request: a failed validation under a
    binding whose validationActions hold Deny."""
    return _failed(plan, request, "Deny", without)


def warned_by(plan: RolloutPlan, request: Request) -> list[str]:
    """The rendered policies whose failed validation the API server returns as a warning and admits (a binding with
    validationActions Warn and not Deny)."""
    return _failed(plan, request, "Warn", ())


def _failed(plan: RolloutPlan, request: Request, action: str, without: Iterable[str]) -> list[str]:
    skip = set(without)
    out = []
    for p, b in policies(plan):
        actions = b["spec"]["validationActions"]
        if action not in actions or (action == "Warn" and "Deny" in actions):
            continue
        if p["metadata"]["name"] in skip or not _selects(b, request.namespace) or not _matches(p, request):
            continue
        if denies(p, request) and p["metadata"]["name"] not in out:
            out.append(p["metadata"]["name"])
    return out
