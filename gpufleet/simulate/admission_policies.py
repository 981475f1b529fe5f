"""gpufleet's own ValidatingAdmissionPolicies as the API server applies them to a workload's pods.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/admission_policies.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.kueue_admission import namespace_labels, selector_matches
from gpufleet.simulate.nodes import NodeModel
from gpufleet.simulate.scheduling import tolerates
from gpufleet.simulate.workload import PodSet
from gpufleet.spec.names import GPU_RESOURCE, LABEL_NODE_GROUP, LABEL_WORKLOAD_CLASS, MIG_RESOURCE_PREFIX

VISIBLE_DEVICES = "gpufleet-visible-devices-need-gpu"
SERVING_READINESS = "gpufleet-serving-readiness"
_NO_DEVICES = ("", "void", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundPolicy:
    name: str
    resources: frozenset[str]  # resourceRules resources matched on CREATE
    namespace_selector: Mapping[str, Any]
    messages: tuple[str, ...]  # each validation's message, in order
    actions: tuple[str, ...] = ("Deny",)  # the binding's validationActions


def bound_policies(plan: RolloutPlan) -> tuple[BoundPolicy, ...]:
    """One entry per binding that denies or warns (a policy may have several, one per validationActions)."""
    policies: dict[str, Mapping[str, Any]] = {}
    bindings: list[Mapping[str, Any]] = []
    for stage in plan.included():
        for res in stage.content.resources:
            obj: Any = res.args.get("object")
            if not isinstance(obj, Mapping) or not str(obj.get("apiVersion", "")).startswith("admissionregistration"):
                continue
            if obj.get("kind") == "ValidatingAdmissionPolicy":
                policies[obj["metadata"]["name"]] = obj
            elif obj.get("kind") == "ValidatingAdmissionPolicyBinding":
                bindings.append(obj)
    out = []
    for binding in bindings:
        name = binding["spec"]["policyName"]
        policy = policies.get(name)
        actions = tuple(binding["spec"].get("validationActions", []))
        if policy is None or not {"Deny", "Warn"} & set(actions):
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
                actions=actions,
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
        if (
            "Deny" not in policy.actions
            or "pods" not in policy.resources
            or not selector_matches(policy.namespace_selector, namespace_labels(namespace))
        ):
            continue
        if policy.name == VISIBLE_DEVICES:
            index = visible_devices_refusal(spec)
            if index is not None:
                return policy.name, policy.messages[index]
    return None


# --- gpufleet-serving-readiness -----------------------------------------------------------------------------------

# Kinds the policy judges, as resourceRules resources; and the controllers whose children it judges at the parent.
_SERVING_RESOURCES = {
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "LeaderWorkerSet": "leaderworkersets",
    "Pod": "pods",
}
_WORKLOAD_CONTROLLERS = frozenset(
    {
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("", "Pod"),
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingTargets:
    """What places a pod template on an Inference group, from the model's nodes and the spec."""

    groups: frozenset[str]
    taints: tuple[Mapping[str, str], ...]  # on Inference nodes and on no other node
    namespaces: frozenset[str]  # team namespaces whose every quota is on an Inference group


def serving_targets(plan: RolloutPlan, nodes: Mapping[str, NodeModel]) -> ServingTargets:
    inference = {n.group for n in nodes.values() if n.labels.get(LABEL_WORKLOAD_CLASS) == "Inference"}
    elsewhere = {
        (t["key"], t.get("value") or "", t["effect"])
        for n in nodes.values()
        if n.group not in inference
        for t in n.taints
    }
    taints = {
        (t["key"], t.get("value") or "", t["effect"]): t
        for n in nodes.values()
        if n.group in inference
        for t in n.taints
        if (t["key"], t.get("value") or "", t["effect"]) not in elsewhere
    }
    fleet = plan.fleet
    return ServingTargets(
        groups=frozenset(inference),
        taints=tuple(taints.values()),
        namespaces=frozenset(
            t.namespace for t in fleet.teams if t.quotas and all(q.node_group in inference for q in t.quotas)
        ),
    )


def _gpu_quantity(value: Any) -> bool:
    try:
        return float(str(value)) != 0
    except ValueError:
        return True  # a quantity with a suffix ("1k"): not zero


def _requests_gpus(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources") or {}
    return any(
        (str(k) == GPU_RESOURCE or str(k).startswith(MIG_RESOURCE_PREFIX)) and _gpu_quantity(v)
        for side in ("limits", "requests")
        for k, v in (resources.get(side) or {}).items()
    )


def _placement(targets: ServingTargets, namespace: str, pod_set: PodSet) -> str:
    """What places the pod template on an Inference group ('' when nothing does): its nodeSelector or a required node
    affinity term naming one, else (its selection naming no other group) a toleration by key of a taint only Inference
    nodes carry, else its namespace (the rendered policy's order, gpufleet/data/admission)."""
    pod = pod_set.pod
    selector = pod.node_selector
    reasons = []
    if selector.get(LABEL_NODE_GROUP) in targets.groups:
        reasons.append(f"nodeSelector {LABEL_NODE_GROUP}={selector[LABEL_NODE_GROUP]}")
    if selector.get(LABEL_WORKLOAD_CLASS) == "Inference":
        reasons.append(f"nodeSelector {LABEL_WORKLOAD_CLASS}=Inference")
    terms = [term.get("matchExpressions") or [] for term in pod.required_terms]

    def names(e: Mapping[str, Any], inference: bool) -> bool:
        values = [str(v) for v in e.get("values") or []]
        if e.get("operator") != "In" or "values" not in e:
            return False
        if e.get("key") == LABEL_NODE_GROUP:
            return bool(targets.groups & set(values)) == inference
        return e.get("key") == LABEL_WORKLOAD_CLASS and ("Inference" in values) == inference

    for term in terms:
        if any(names(e, True) for e in term):
            rendered = ", ".join(
                f"{e.get('key')} {e.get('operator')}"
                + (f" {','.join(str(v) for v in e['values'])}" if "values" in e else "")
                for e in term
            )
            reasons.append(f"required node affinity {rendered}")
    elsewhere = (
        (LABEL_NODE_GROUP in selector and selector[LABEL_NODE_GROUP] not in targets.groups)
        or (LABEL_WORKLOAD_CLASS in selector and selector[LABEL_WORKLOAD_CLASS] != "Inference")
        or (bool(terms) and all(any(names(e, False) for e in term) for term in terms))
    )
    if not elsewhere:
        reasons += [
            f"toleration of {taint['key']}={taint.get('value') or ''}:{taint['effect']}"
            for taint in targets.taints
            if any(t.get("key") and tolerates(t, taint) for t in pod.tolerations)
        ]
        if namespace in targets.namespaces:
            reasons.append(f"namespace {namespace}, whose team has quota only on Inference groups")
    return reasons[0] if reasons else ""


def unprobed(targets: ServingTargets, kind: str, namespace: str, pod_sets: tuple[PodSet, ...]) -> list[tuple[str, str]]:
    """(what placed it, container) for each container gpufleet-serving-readiness refuses: requesting GPUs, no
    readinessProbe, in a pod template that lands on an Inference group (a LeaderWorkerSet's prefixed by the template
    they are in)."""
    out = []
    for ps in pod_sets:
        because = _placement(targets, namespace, ps)
        if not because:
            continue
        prefix = "" if kind != "LeaderWorkerSet" else "leaderTemplate" if ps.name == "leader" else "workerTemplate"
        out += [
            (
                f"{prefix}: {because}" if prefix else because,
                f"{prefix} {c.get('name')}" if prefix else str(c.get("name")),
            )
            for c in ps.pod.raw.get("containers") or []
            if isinstance(c, Mapping) and _requests_gpus(c) and "readinessProbe" not in c
        ]
    return out


def serving_readiness(
    policies: tuple[BoundPolicy, ...],
    targets: ServingTargets,
    *,
    kind: str,
    name: str,
    namespace: str,
    controllers: tuple[tuple[str, str, str], ...],
    pod_sets: tuple[PodSet, ...],
) -> tuple[str, str] | None:
    """(validationAction Deny or Warn, message) when gpufleet-serving-readiness fails the object's creation."""
    resource = _SERVING_RESOURCES.get(kind)
    if resource is None:
        return None
    for api_version, controller, _ in controllers:
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        if (group, controller) in _WORKLOAD_CONTROLLERS:
            return None
    for policy in policies:
        if policy.name != SERVING_READINESS or resource not in policy.resources:
            continue
        if not selector_matches(policy.namespace_selector, namespace_labels(namespace)):
            continue
        found = unprobed(targets, kind, namespace, pod_sets)
        if not found:
            return None
        placed = "; ".join(dict.fromkeys(because for because, _ in found))
        message = (
            f"{kind} {name} lands on an Inference node group ({placed}) and its GPU container"
            f" {', '.join(c for _, c in found)} has no"
            " readinessProbe: a replica would take traffic before its model answers. Add a readinessProbe that sends"
            " one inference (docs/inference.md), or ask a cluster admin to set teams[].servingReadinessProbe"
        )
        return ("Deny" if "Deny" in policy.actions else "Warn"), message
    return None
