"""ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) of the admission stage, as plain dicts.

1. `gpufleet-require-queue-name`: in team namespaces, a Job, and each custom job kind the fleet installs (JobSet,
   TrainJob, LeaderWorkerSet), must carry a non-empty `kueue.x-k8s.io/queue-name` label, so every batch workload goes
   through Kueue's all-or-nothing admission. Exempt: objects whose controller is a Kueue-managed parent (a JobSet's
   Jobs, a TrainJob's JobSet): Kueue admits the parent as one workload. On UPDATE only removing the label is
   rejected, so objects created before the policy can still be updated and finalized.
2. `gpufleet-visible-devices-need-gpu`: a container that sets NVIDIA_VISIBLE_DEVICES to anything that selects
   devices (a value other than "", "void" or "none", or a valueFrom the policy cannot see) must have a
   non-zero `nvidia.com/gpu` limit. Without it, the NVIDIA runtime would hand it GPUs the scheduler never
   allocated (nvidia-container-toolkit internal/config/image/devices.go: "", "void" mean no devices, "none"
   means driver only). Applies everywhere except the system namespaces whose daemons must see every GPU.
   An `envFrom` the policy cannot read counts as setting it unless `env` names the variable (env wins) or the
   entry's prefix rules it out. This is defence in depth: the runtime setting the foundation stage applies is the
   actual fix, since an image's own ENV (CUDA images set NVIDIA_VISIBLE_DEVICES=all) is invisible here.

CEL follows Kubernetes' admission CEL: `object`, `oldObject`, `request`, `variables`; `has()` guards every
optional field (a missing field is an error, and an error with failurePolicy Fail denies the request).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpufleet.plan.manifests import kueue
from gpufleet.spec.names import LABEL_MANAGED_BY, LABEL_QUEUE_NAME

API = "admissionregistration.k8s.io/v1"
QUEUE_NAME_POLICY = "gpufleet-require-queue-name"
VISIBLE_DEVICES_POLICY = "gpufleet-visible-devices-need-gpu"

# Kueue integrations whose objects own Jobs or JobSets that Kueue does not admit separately (a JobSet's Jobs, a
# TrainJob's JobSet). A LeaderWorkerSet owns StatefulSets, which the policy does not match.
PARENT_FRAMEWORKS = (kueue.JOBSET_FRAMEWORK, kueue.TRAINJOB_FRAMEWORK)


def _label_of(obj: str) -> str:
    return (
        f"has({obj}.metadata.labels) && '{LABEL_QUEUE_NAME}' in {obj}.metadata.labels ?"
        f" {obj}.metadata.labels['{LABEL_QUEUE_NAME}'] : ''"
    )


def _managed_parent(installed: Iterable[str]) -> str:
    parents = [kueue.RESOURCES[f] for f in installed if f in PARENT_FRAMEWORKS]
    kinds = " || ".join(f"(r.apiVersion.startsWith('{group}/') && r.kind == '{kind}')" for group, _, kind in parents)
    return (
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) &&"
        f" r.controller && ({kinds}))"
    )


def queue_name_policy(installed: Iterable[str]) -> dict[str, Any]:
    """`installed`: the Kueue integrations of the custom job kinds the fleet installs (kueue.installed_frameworks)."""
    installed = tuple(installed)
    rule = {"operations": ["CREATE", "UPDATE"]}
    custom = [
        {"apiGroups": [group], "apiVersions": ["*"], "resources": [plural], **rule}
        for group, plural, _ in (kueue.RESOURCES[f] for f in installed)
    ]
    kinds = ["Jobs"] + [f"{kueue.RESOURCES[f][2]}s" for f in installed]
    conditions = []
    if any(f in PARENT_FRAMEWORKS for f in installed):
        conditions.append(
            {"name": "not-created-by-a-kueue-managed-parent", "expression": f"!({_managed_parent(installed)})"}
        )
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": QUEUE_NAME_POLICY, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"], **rule},
                    *custom,
                ]
            },
            "matchConditions": [
                *conditions,
                # On UPDATE, judge only objects that had a queue name: removing it would take a running
                # workload out of Kueue's accounting; objects created before the policy stay updatable.
                {
                    "name": "create-or-had-a-queue-name",
                    "expression": f"request.operation == 'CREATE' || ({_label_of('oldObject')}) != ''",
                },
            ],
            "variables": [{"name": "queueName", "expression": _label_of("object")}],
            "validations": [
                {
                    "expression": "variables.queueName != ''",
                    "message": (
                        f"{_listed(kinds)} in team namespaces must set the label {LABEL_QUEUE_NAME} to the team's "
                        "LocalQueue: GPU work is admitted all-or-nothing through Kueue"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    }


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _requests_gpu(c: str) -> str:
    limits = f"{c}.resources.limits"
    return (
        f"has({c}.resources) && has({limits}) && 'nvidia.com/gpu' in {limits} && string({limits}['nvidia.com/gpu'])"
        " != '0'"
    )


def _selects_devices(c: str) -> str:
    """The container sets NVIDIA_VISIBLE_DEVICES to something that selects devices: in `env` (which wins over
    `envFrom`: "Values defined by an Env with a duplicate key will take precedence", core/v1 Container.envFrom), or,
    when `env` does not name it, possibly through `envFrom`: a ConfigMap or Secret this policy cannot read may hold
    the key, unless the entry's prefix rules it out (the variable is prefix + key)."""
    named = f"has({c}.env) && {c}.env.exists(e, e.name == 'NVIDIA_VISIBLE_DEVICES')"
    return (
        f"({named}) ? {c}.env.exists(e, e.name == 'NVIDIA_VISIBLE_DEVICES' && "
        "(has(e.valueFrom) || (has(e.value) && !(e.value in ['', 'void', 'none'])))) : "
        f"(has({c}.envFrom) && {c}.envFrom.exists(f, !has(f.prefix) || 'NVIDIA_VISIBLE_DEVICES'.startsWith(f.prefix)))"
    )


def container_check(c: str = "c", *, can_request: bool = True) -> str:
    """The per-container predicate: sets no device-selecting NVIDIA_VISIBLE_DEVICES, or requests a GPU."""
    if not can_request:  # ephemeral containers have no resources
        return f"!({_selects_devices(c)})"
    return f"!({_selects_devices(c)}) || ({_requests_gpu(c)})"


def visible_devices_policy() -> dict[str, Any]:
    message = (
        "a container sets NVIDIA_VISIBLE_DEVICES without a nvidia.com/gpu limit: it would see GPUs the scheduler "
        "did not give it. Request nvidia.com/gpu, or set the variable to void (an envFrom whose ConfigMap or Secret"
        " may hold it counts as setting it: add env NVIDIA_VISIBLE_DEVICES=void, which envFrom cannot override, or"
        " give the envFrom a prefix)"
    )
    validations = [
        {
            "expression": f"object.spec.containers.all(c, {container_check()})",
            "message": message,
            "reason": "Forbidden",
        },
        {
            "expression": f"!has(object.spec.initContainers) || object.spec.initContainers.all(c, {container_check()})",
            "message": message.replace("a container", "an init container"),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c,"
                f" {container_check(can_request=False)})"
            ),
            "message": (
                "an ephemeral container cannot request GPUs, so it may not set NVIDIA_VISIBLE_DEVICES (other than void"
                " or none)"
            ),
            "reason": "Forbidden",
        },
    ]
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": VISIBLE_DEVICES_POLICY, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
                    # `kubectl debug` adds ephemeral containers through this subresource.
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["pods/ephemeralcontainers"],
                    },
                ]
            },
            "validations": validations,
        },
    }


def binding(policy: str, namespace_selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": namespace_selector},
        },
    }


def namespaces_in(names: Iterable[str]) -> dict[str, Any]:
    return {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(set(names))}]
    }


def namespaces_not_in(names: Iterable[str]) -> dict[str, Any]:
    return {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": sorted(set(names))}]
    }
