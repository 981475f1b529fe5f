"""gpufleet's own ValidatingAdmissionPolicies as the API server applies them to a workload's pods.

The policies and their bindings are read from the plan (what is applied: match constraints, the binding's
namespaceSelector, each validation's message); what each validation's CEL decides is modelled here in Python, on its
own, so a test can hold the model against the rendered CEL evaluated by cel-python (tests/model/test_api_gates.py):
a model that called the renderer's helpers could not catch their bugs.

- `gpufleet-visible-devices-need-gpu` (pods, CREATE): a container that sets NVIDIA_VISIBLE_DEVICES to anything that
  selects devices (a valueFrom, or a value other than "", "void", "none": nvidia-container-toolkit
  internal/config/image/devices.go), or whose envFrom may set it (no env entry of that name, a prefix that allows
  it), must have a non-zero nvidia.com/gpu limit; the same for init containers.
- `gpufleet-require-queue-name` (Jobs and JobSets) is gpufleet.simulate.verdict's `_admission_policy`.

A policy this module does not know is skipped (the verdict cannot say what its CEL decides).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.kueue_admission import namespace_labels, selector_matches

VISIBLE_DEVICES = "gpufleet-visible-devices-need-gpu"
_NO_DEVICES = ("", "void", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundPolicy:
    name: str
    resources: frozenset[str]  # resourceRules resources matched on CREATE
    namespace_selector: Mapping[str, Any]
    messages: tuple[str, ...]  # each validation's message, in order


def bound_policies(plan: RolloutPlan) -> tuple[BoundPolicy, ...]:
    policies: dict[str, Mapping[str, Any]] = {}
    bindings: dict[str, Mapping[str, Any]] = {}
    for stage in plan.included():
        for res in stage.content.resources:
            obj: Any = res.args.get("object")
            if not isinstance(obj, Mapping) or not str(obj.get("apiVersion", "")).startswith("admissionregistration"):
                continue
            if obj.get("kind") == "ValidatingAdmissionPolicy":
                policies[obj["metadata"]["name"]] = obj
            elif obj.get("kind") == "ValidatingAdmissionPolicyBinding":
                bindings[obj["spec"]["policyName"]] = obj
    out = []
    for name, policy in policies.items():
        binding = bindings.get(name)
        if binding is None or "Deny" not in binding["spec"].get("validationActions", []):
            continue
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        out.append(
            BoundPolicy(
                name=name,
                resources=frozenset(
                    r for rule in rules if "CREATE" in rule.get("operations", []) for r in rule["resources"]
                ),
                namespace_selector=(binding["spec"].get("matchResources") or {}).get("namespaceSelector") or {},
                messages=tuple(v.get("message", "") for v in policy["spec"].get("validations") or []),
            )
        )
    return tuple(out)


def _selects_devices(container: Mapping[str, Any]) -> bool:
    named = [
        e for e in container.get("env") or [] if isinstance(e, Mapping) and e.get("name") == "NVIDIA_VISIBLE_DEVICES"
    ]
    if named:  # env wins over envFrom
        return any("valueFrom" in e or ("value" in e and str(e["value"]) not in _NO_DEVICES) for e in named)
    # an envFrom source may hold the key, unless its prefix rules it out
    return any(
        isinstance(f, Mapping) and "NVIDIA_VISIBLE_DEVICES".startswith(str(f.get("prefix", "")))
        for f in container.get("envFrom") or []
    )


def _requests_gpu(container: Mapping[str, Any]) -> bool:
    limits = (container.get("resources") or {}).get("limits") or {}
    return "nvidia.com/gpu" in limits and str(limits["nvidia.com/gpu"]) != "0"


def visible_devices_refusal(spec: Mapping[str, Any]) -> int | None:
    """The index of the first validation a pod spec fails (0: containers, 1: init containers), or None."""
    for index, key in enumerate(("containers", "initContainers")):
        for c in spec.get(key) or []:
            if isinstance(c, Mapping) and _selects_devices(c) and not _requests_gpu(c):
                return index
    return None


def pod_refusal(policies: tuple[BoundPolicy, ...], namespace: str, spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """(policy name, message) of the first policy that denies creating a pod of this spec in `namespace`."""
    for policy in policies:
        if "pods" not in policy.resources or not selector_matches(
            policy.namespace_selector, namespace_labels(namespace)
        ):
            continue
        if policy.name == VISIBLE_DEVICES:
            index = visible_devices_refusal(spec)
            if index is not None:
                return policy.name, policy.messages[index]
    return None
