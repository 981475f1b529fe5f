"""`gpufleet-serving-readiness`: a serving workload on an Inference node group has a readiness probe on every
container that requests GPUs (docs/inference.md "Readiness that means ready"), as a ValidatingAdmissionPolicy bound
to the team namespaces in the mode the spec says (admission.servingReadinessProbe, teams[].servingReadinessProbe):
Deny refuses the request, Warn admits it with a warning to the client and an audit annotation, Off leaves the
namespace out of both bindings.

Why: a replica without a readiness probe is added to its Service's endpoints as soon as its containers start
(core/v1 Container.readinessProbe: "If not specified, the container is considered ready"), so a scale-up sends
requests to a server that is still loading its weights, and a rolling update removes a working replica for one
that answers nothing. The recipes in docs/inference.md probe with a one-token inference.

What is judged: Deployments, StatefulSets, ReplicaSets and LeaderWorkerSets (its leaderTemplate and workerTemplate;
without a leaderTemplate the leader is made from the workerTemplate: lws apis/leaderworkerset/v1) on CREATE and
UPDATE, bare Pods on CREATE. An object whose controller is a workload kind (a Deployment's ReplicaSet, its pods, an
LWS's StatefulSets and their pods) is judged at its parent. A pod template lands on an Inference group when it
- selects one: nodeSelector or a required node affinity term (operator In) on gpufleet.io/node-group naming an
  Inference group, or on gpufleet.io/workload-class naming Inference (both labels are on every gpufleet node);
- tolerates a taint that only Inference groups carry (Kubernetes' Toleration.ToleratesTaint, k8s.io/api core/v1
  toleration.go: an empty effect matches every effect, an empty key with Exists every key, Exists ignores the
  value, Equal compares it);
- names a serving priority class (a non-preemptible admission.priorities class, which only teams with Inference
  quota may use): the pod spec's priorityClassName, or Kueue's label kueue.x-k8s.io/priority-class on the object or
  its template;
- or belongs to a team whose every quota is on Inference groups (Kueue can only give it an Inference flavor).
A workload in a team with other quotas that says none of this is not judged: Kueue may give it any flavor of the
team's ClusterQueue, which admission cannot foresee.

On UPDATE only containers that the change leaves unprobed and that were probed before (or new) are refused, so an
object admitted before the policy stays updatable (scaling, finalizers). CEL as in
gpufleet.plan.manifests.admission_policy: `has()` guards every optional field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.plan.manifests.admission_policy import API
from gpufleet.spec.names import (
    GPU_RESOURCE,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    LABEL_PRIORITY_CLASS,
    LABEL_WORKLOAD_CLASS,
    MIG_RESOURCE_PREFIX,
)

POLICY = "gpufleet-serving-readiness"
MODES = ("Deny", "Warn", "Off")
# validationActions per mode (admissionregistration/v1 ValidationAction): Warn also writes an audit annotation.
ACTIONS = {"Deny": ("Deny",), "Warn": ("Warn", "Audit")}
# Controllers whose children are judged at the parent: (apiVersion prefix, kind). A LeaderWorkerSet owns its leader
# StatefulSet, each leader Pod owns its group's worker StatefulSet (lws pkg/controllers).
CONTROLLERS = (
    ("apps/", "Deployment"),
    ("apps/", "ReplicaSet"),
    ("apps/", "StatefulSet"),
    ("apps/", "DaemonSet"),
    ("batch/", "Job"),
    ("leaderworkerset.x-k8s.io/", "LeaderWorkerSet"),
    ("v1", "Pod"),
)
RESOURCES = (
    ("apps", "deployments", ("CREATE", "UPDATE")),
    ("apps", "statefulsets", ("CREATE", "UPDATE")),
    ("apps", "replicasets", ("CREATE", "UPDATE")),
    ("leaderworkerset.x-k8s.io", "leaderworkersets", ("CREATE", "UPDATE")),
    ("", "pods", ("CREATE",)),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceTargets:
    """What identifies a pod template bound for an Inference group (gpufleet.plan.builders.admission computes it)."""

    groups: tuple[str, ...]  # the Inference node groups
    taints: tuple[Mapping[str, str], ...]  # taints (key, value, effect) only Inference groups carry
    classes: tuple[str, ...]  # the serving (non-preemptible) priority classes
    namespaces: tuple[str, ...]  # team namespaces whose every quota is on an Inference group


def _cel(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _requests_gpu(c: str) -> str:
    def side(field: str) -> str:
        m = f"{c}.resources.{field}"
        return (
            f"(has({m}) && {m}.exists(k, (k == '{GPU_RESOURCE}' || k.startsWith('{MIG_RESOURCE_PREFIX}')) &&"
            f" string({m}[k]) != '0'))"
        )

    return f"(has({c}.resources) && ({side('limits')} || {side('requests')}))"


def _label_in(meta_of: str, key: str, values: str) -> str:
    return (
        f"(has({meta_of}.metadata) && has({meta_of}.metadata.labels) && '{key}' in {meta_of}.metadata.labels &&"
        f" {meta_of}.metadata.labels['{key}'] in {values})"
    )


def _tolerates(t: str, taint: str) -> str:
    """k8s.io/api core/v1 toleration.go ToleratesTaint."""
    return (
        f"(!has({t}.effect) || {t}.effect == '' || {t}.effect == {taint}.effect) &&"
        f" (!has({t}.key) || {t}.key == '' || {t}.key == {taint}.key) &&"
        f" ((has({t}.operator) && {t}.operator == 'Exists') || (has({t}.value) ? {t}.value : '') == {taint}.value)"
    )


def _lands(template: str, root: str) -> str:
    """The pod template `template` (`.spec`, maybe `.metadata`) of the object `root` lands on an Inference group."""
    s = f"{template}.spec"
    req = f"{s}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    selects = (
        f"(has({s}.nodeSelector) && (('{LABEL_NODE_GROUP}' in {s}.nodeSelector &&"
        f" {s}.nodeSelector['{LABEL_NODE_GROUP}'] in variables.inferenceGroups) || ('{LABEL_WORKLOAD_CLASS}' in"
        f" {s}.nodeSelector && {s}.nodeSelector['{LABEL_WORKLOAD_CLASS}'] == 'Inference')))"
    )
    affinity = (
        f"(has({s}.affinity) && has({s}.affinity.nodeAffinity) && has({req}) && has({req}.nodeSelectorTerms) &&"
        f" {req}.nodeSelectorTerms.exists(term, has(term.matchExpressions) && term.matchExpressions.exists(e,"
        " e.operator == 'In' && has(e.values) &&"
        f" ((e.key == '{LABEL_NODE_GROUP}' && e.values.exists(v, v in variables.inferenceGroups)) ||"
        f" (e.key == '{LABEL_WORKLOAD_CLASS}' && 'Inference' in e.values)))))"
    )
    tolerates = (
        f"(has({s}.tolerations) && {s}.tolerations.exists(t, variables.inferenceTaints.exists(n,"
        f" {_tolerates('t', 'n')})))"
    )
    serving = (
        f"(has({s}.priorityClassName) && {s}.priorityClassName in variables.servingClasses) ||"
        f" {_label_in(template, LABEL_PRIORITY_CLASS, 'variables.servingClasses')} ||"
        f" {_label_in(root, LABEL_PRIORITY_CLASS, 'variables.servingClasses')}"
    )
    return f"(variables.inferenceNamespace || {selects} || {affinity} || {tolerates} || {serving})"


def _unprobed_in(template: str, root: str, prefix: str) -> str:
    """The GPU containers of `template` without a readiness probe when it lands on an Inference group, as strings."""
    return (
        f"(has({template}.spec) && {_lands(template, root)}) ? {template}.spec.containers.filter(c,"
        f" {_requests_gpu('c')} && !has(c.readinessProbe)).map(c, '{prefix}' + c.name) : []"
    )


def unprobed(root: str) -> str:
    """The CEL list of `root`'s unprobed GPU containers on an Inference group (the LWS's prefixed by template)."""
    lwt = f"{root}.spec.leaderWorkerTemplate"
    return (
        f"!has({root}.spec) ? [] : "
        f"{root}.kind == 'Pod' ? ({_unprobed_in(root, root, '')}) : "
        f"{root}.kind in ['Deployment', 'StatefulSet', 'ReplicaSet'] ? (has({root}.spec.template) ?"
        f" ({_unprobed_in(f'{root}.spec.template', root, '')}) : []) : "
        f"{root}.kind == 'LeaderWorkerSet' && has({lwt}) ?"
        f" (has({lwt}.leaderTemplate) ? ({_unprobed_in(f'{lwt}.leaderTemplate', root, 'leaderTemplate ')}) : []) +"
        f" (has({lwt}.workerTemplate) ? ({_unprobed_in(f'{lwt}.workerTemplate', root, 'workerTemplate ')}) : [])"
        " : []"
    )


def _judged_at_parent() -> str:
    kinds = " || ".join(
        f"(r.apiVersion == 'v1' && r.kind == '{kind}')"
        if prefix == "v1"
        else f"(r.apiVersion.startsWith('{prefix}') && r.kind == '{kind}')"
        for prefix, kind in CONTROLLERS
    )
    return (
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) &&"
        f" r.controller && ({kinds}))"
    )


MESSAGE = (
    "a serving workload on an Inference node group needs a readinessProbe on every container that requests GPUs:"
    " without one a replica takes traffic before its model answers. Add a readinessProbe that sends one inference"
    " (docs/inference.md), or ask a cluster admin to set teams[].servingReadinessProbe"
)


def policy(targets: InferenceTargets) -> dict[str, Any]:
    rules = [
        {"apiGroups": [group], "apiVersions": ["v1"], "operations": list(ops), "resources": [resource]}
        for group, resource, ops in RESOURCES
    ]
    # the LWS API version is v1 (leaderworkerset.x-k8s.io/v1); any served version is judged the same
    rules[3]["apiVersions"] = ["*"]
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": [{"name": "not-judged-at-its-parent", "expression": f"!({_judged_at_parent()})"}],
            "variables": [
                {"name": "inferenceGroups", "expression": _cel(sorted(targets.groups))},
                {"name": "inferenceTaints", "expression": _cel([dict(t) for t in targets.taints])},
                {"name": "servingClasses", "expression": _cel(sorted(targets.classes))},
                {
                    "name": "inferenceNamespace",
                    "expression": f"request.namespace in {_cel(sorted(targets.namespaces))}",
                },
                {"name": "unprobed", "expression": unprobed("object")},
                {
                    "name": "oldUnprobed",
                    "expression": f"request.operation == 'UPDATE' ? ({unprobed('oldObject')}) : []",
                },
            ],
            "validations": [
                {
                    "expression": "variables.unprobed.all(n, n in variables.oldUnprobed)",
                    "messageExpression": (
                        "object.kind + ' ' + request.name + ' lands on an Inference node group and its GPU container '"
                        " + variables.unprobed.filter(n, !(n in variables.oldUnprobed)).join(', ') + ' has no"
                        " readinessProbe: a replica would take traffic before its model answers. Add a readinessProbe"
                        " that sends one inference (docs/inference.md), or ask a cluster admin to set"
                        " teams[].servingReadinessProbe'"
                    ),
                    "message": MESSAGE,
                    "reason": "Invalid",
                }
            ],
        },
    }


def bindings(modes: Mapping[str, str]) -> list[dict[str, Any]]:
    """One binding per mode that some team namespace has (`modes`: namespace -> Deny | Warn | Off)."""
    out = []
    for mode, actions in ACTIONS.items():
        names = sorted(ns for ns, m in modes.items() if m == mode)
        if not names:
            continue
        out.append(
            {
                "apiVersion": API,
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": f"{POLICY}-{mode.lower()}", "labels": dict(LABEL_MANAGED_BY)},
                "spec": {
                    "policyName": POLICY,
                    "validationActions": list(actions),
                    "matchResources": {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": names}
                            ]
                        }
                    },
                },
            }
        )
    return out


def exclusive_taints(
    inference: Iterable[Sequence[Mapping[str, str]]], others: Iterable[Sequence[Mapping[str, str]]]
) -> tuple[dict[str, str], ...]:
    """The taints some Inference group carries and no other group does, in first-seen order."""
    other = {(t["key"], t.get("value", ""), t["effect"]) for taints in others for t in taints}
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for taints in inference:
        for t in taints:
            key = (t["key"], t.get("value", ""), t["effect"])
            if key not in other:
                seen.setdefault(key, {"key": key[0], "value": key[1], "effect": key[2]})
    return tuple(seen.values())
