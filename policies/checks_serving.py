"""The serving readiness rule over a stack's resources (`serving-readiness-probe`, registered in
`gpufleet.policies.rules`): a serving workload on an Inference node group gives every container that requests GPUs a
readinessProbe, the rule the admission stage's ValidatingAdmissionPolicy gpufleet-serving-readiness enforces in team
namespaces (docs/inference.md), here for the workloads a stack itself registers.

It judges placement, as the policy does (docs/inference.md, "The readiness policy"). What marks an Inference group
is read from the stack, as its nodes will be: EKS managed node groups and Karpenter NodePools labelled
gpufleet.io/workload-class: Inference (their gpufleet.io/node-group name and taints; a taint counts when no other GPU
group carries it), and the teams whose ClusterQueue has only Inference flavors. A pod template lands on an Inference
group when its selection names one (nodeSelector, or a required node affinity term with operator In, on
gpufleet.io/node-group or gpufleet.io/workload-class); when its selection names no other group, a toleration with the
key of such a taint (Kubernetes' Toleration.ToleratesTaint, k8s.io/api core/v1 toleration.go: a keyless Exists
tolerates everything and places nothing); or when it is in such a team's namespace. A priority class places nothing.

Which namespaces: where the stack binds gpufleet-serving-readiness with Deny, those (Warn and Off are the spec's
choice not to refuse); a gpufleet stack without the policy (every team Off) none; a stack with neither (not a fleet
stack) every namespace. gpufleet's own objects (label app.kubernetes.io/managed-by: gpufleet: the headroom
placeholders hold GPUs and serve nothing) and objects a workload controller owns (judged at the parent) are not
judged. Standard library and gpufleet.spec.names only, like the rest of the pack.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gpufleet.policies import checks_karpenter
from gpufleet.policies.resources import Resource, get, is_unknown
from gpufleet.spec.names import (
    GPU_RESOURCE,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    LABEL_TEAM,
    LABEL_WORKLOAD_CLASS,
    MIG_RESOURCE_PREFIX,
)
from gpufleet.tree.entries import group_name, inputs, is_gpu_node_group, labels

POLICY = "gpufleet-serving-readiness"
_MANAGED_KEY, _MANAGED_VALUE = next(iter(LABEL_MANAGED_BY.items()))
_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
_CONTROLLERS = {
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    ("", "Pod"),
}
Taint = tuple[str, str, str]


def _obj(resource: Resource) -> Mapping[str, Any]:
    return inputs(resource) if str(resource.get("type", "")).startswith("kubernetes:") else {}


def _groups(resources: Sequence[Resource]) -> list[tuple[str, bool, list[Taint]]]:
    """(name, Inference, taints in Kubernetes spelling) of every GPU node group and GPU NodePool."""
    out = []
    for r in resources:
        if is_gpu_node_group(r):
            taints = inputs(r).get("taints")
            spelled = [
                (str(t.get("key")), str(t.get("value") or ""), _EFFECT.get(str(t.get("effect")), str(t.get("effect"))))
                for t in taints or []
                if isinstance(t, Mapping)
            ]
            out.append((group_name(r), labels(r).get(LABEL_WORKLOAD_CLASS) == "Inference", spelled))
        elif checks_karpenter.is_gpu_pool(r):
            pool = checks_karpenter.pool_labels(r)
            spelled = [
                (str(t.get("key")), str(t.get("value") or ""), str(t.get("effect")))
                for t in checks_karpenter.pool_taints(r)
            ]
            name = str(pool.get(LABEL_NODE_GROUP) or checks_karpenter.name(r))
            out.append((name, pool.get(LABEL_WORKLOAD_CLASS) == "Inference", spelled))
    return out


def _inference_namespaces(resources: Sequence[Resource], groups: set[str]) -> set[str]:
    """Namespaces a ClusterQueue with only Inference flavors admits by name."""
    out = set()
    for r in resources:
        obj = _obj(r)
        if obj.get("kind") != "ClusterQueue":
            continue
        flavors = [
            str(f.get("name"))
            for rg in get(obj, "spec.resourceGroups") or []
            if isinstance(rg, Mapping)
            for f in rg.get("flavors") or []
            if isinstance(f, Mapping)
        ]
        name = (get(obj, "spec.namespaceSelector.matchLabels") or {}).get("kubernetes.io/metadata.name")
        if flavors and name and all(f in groups for f in flavors):
            out.add(str(name))
    return out


def _judged_namespaces(resources: Sequence[Resource]) -> set[str] | None:
    """The namespaces the rule judges; None: every namespace."""
    bindings = [
        _obj(r)
        for r in resources
        if _obj(r).get("kind") == "ValidatingAdmissionPolicyBinding" and get(_obj(r), "spec.policyName") == POLICY
    ]
    if not bindings:
        fleet = any(
            _obj(r).get("kind") == "Namespace" and LABEL_TEAM in (get(_obj(r), "metadata.labels") or {})
            for r in resources
        )
        return set() if fleet else None
    out: set[str] = set()
    for b in bindings:
        if "Deny" not in (get(b, "spec.validationActions") or []):
            continue
        for e in get(b, "spec.matchResources.namespaceSelector.matchExpressions") or []:
            if isinstance(e, Mapping) and e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "In":
                out.update(str(v) for v in e.get("values") or [])
    return out


def _templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(where, pod template with spec and maybe metadata) of a workload object."""
    kind, spec = obj.get("kind"), obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    if kind == "Pod":
        return [("", obj)]
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        template = spec.get("template")
        return [("", template)] if isinstance(template, Mapping) else []
    if kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate")
        if not isinstance(lwt, Mapping):
            return []
        return [
            (f"{key} ", lwt[key]) for key in ("leaderTemplate", "workerTemplate") if isinstance(lwt.get(key), Mapping)
        ]
    return []


def _tolerates(t: Mapping[str, Any], taint: Taint) -> bool:
    key, value, effect = taint
    if t.get("effect") and t.get("effect") != effect:
        return False
    if t.get("key") and t.get("key") != key:
        return False
    return t.get("operator") == "Exists" or str(t.get("value") or "") == value


def _requests_gpus(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return False
    for side in ("limits", "requests"):
        for k, v in (resources.get(side) or {}).items():
            if (str(k) == GPU_RESOURCE or str(k).startswith(MIG_RESOURCE_PREFIX)) and str(v) not in ("0", ""):
                return True
    return False


def _term_names(term: Any, groups: set[str]) -> tuple[bool, bool]:
    """(names an Inference group, names another group) of one required node selector term."""
    inference = other = False
    for e in (term.get("matchExpressions") or []) if isinstance(term, Mapping) else []:
        if not isinstance(e, Mapping) or e.get("operator") != "In":
            continue
        values = {str(v) for v in e.get("values") or []}
        if e.get("key") == LABEL_NODE_GROUP:
            inference, other = inference or bool(values & groups), other or bool(values - groups)
        elif e.get("key") == LABEL_WORKLOAD_CLASS:
            inference, other = inference or "Inference" in values, other or bool(values - {"Inference"})
    return inference, other


def _lands(template: Mapping[str, Any], groups: set[str], taints: list[Taint]) -> bool:
    raw = template.get("spec")
    spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    selector = spec.get("nodeSelector") or {}
    if selector.get(LABEL_NODE_GROUP) in groups or selector.get(LABEL_WORKLOAD_CLASS) == "Inference":
        return True
    terms = get(spec, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms") or []
    named = [_term_names(term, groups) for term in terms]
    if any(inference for inference, _ in named):
        return True
    elsewhere = bool(selector.get(LABEL_NODE_GROUP) or selector.get(LABEL_WORKLOAD_CLASS)) or (
        bool(named) and all(other for _, other in named)
    )
    if elsewhere:
        return False
    return any(
        _tolerates(t, taint)
        for t in spec.get("tolerations") or []
        if isinstance(t, Mapping) and t.get("key")
        for taint in taints
    )


def _judged_at_parent(obj: Mapping[str, Any]) -> bool:
    for ref in get(obj, "metadata.ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            api = str(ref.get("apiVersion", ""))
            if ((api.rsplit("/", 1)[0] if "/" in api else ""), ref.get("kind")) in _CONTROLLERS:
                return True
    return False


def serving_readiness_probe(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    found = _groups(resources)
    groups = {name for name, inference, _ in found if inference}
    if not groups:
        return
    elsewhere = {t for _, inference, taints in found if not inference for t in taints}
    taints = list(dict.fromkeys(t for _, inference, ts in found if inference for t in ts if t not in elsewhere))
    only_inference = _inference_namespaces(resources, groups)
    judged = _judged_namespaces(resources)
    for r in resources:
        obj = _obj(r)
        if obj.get("kind") not in ("Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet", "Pod"):
            continue
        namespace = str(get(obj, "metadata.namespace") or "default")
        if judged is not None and namespace not in judged:
            continue
        if (get(obj, "metadata.labels") or {}).get(_MANAGED_KEY) == _MANAGED_VALUE or _judged_at_parent(obj):
            continue
        unprobed = []
        for where, template in _templates(obj):
            if not (namespace in only_inference or _lands(template, groups, taints)):
                continue
            containers = get(template, "spec.containers")
            if is_unknown(containers) or not isinstance(containers, list):
                continue
            unprobed += [
                f"{where}{c.get('name')}"
                for c in containers
                if isinstance(c, Mapping) and _requests_gpus(c) and "readinessProbe" not in c
            ]
        if unprobed:
            yield (
                r,
                f"{obj.get('kind')} {namespace}/{get(obj, 'metadata.name')} lands on an Inference node group and its"
                f" GPU container {', '.join(unprobed)} has no readinessProbe: a replica would take traffic before its"
                " model answers",
            )
