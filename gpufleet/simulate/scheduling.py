"""kube-scheduler's filters that decide where a pod may go, and what the API server adds to the pod first.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/scheduling.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpufleet.simulate.workload import PodSpec

FILTERING_EFFECTS = ("NoSchedule", "NoExecute")
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """Toleration.ToleratesTaint."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint["effect"]:
        return False
    key = toleration.get("key") or ""
    if key and key != taint["key"]:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return False


def untolerated(
    taints: Iterable[Mapping[str, str]],
    tolerations: Sequence[Mapping[str, Any]],
    effects: Sequence[str] = FILTERING_EFFECTS,
) -> list[Mapping[str, str]]:
    return [t for t in taints if t["effect"] in effects and not any(tolerates(tol, t) for tol in tolerations)]


def is_extended(resource: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io, or not a native one."""
    if resource in _NATIVE or resource.startswith("hugepages-"):
        return False
    return "/" in resource and not resource.split("/", 1)[0].endswith("kubernetes.io")


def extended_resource_tolerations(pod: PodSpec) -> list[dict[str, str]]:
    names = sorted({r for c in pod.containers + pod.init_containers for r in c.requests if is_extended(r)})
    return [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in names]


def _expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[str(key)] in values
    if op == "NotIn":
        return not present or labels[str(key)] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[str(key)]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches_term(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One nodeSelectorTerm: its matchExpressions ANDed (matchFields is not modelled: no node names here).

    Why: docs/explain-model.md, "Design notes", scheduling.matches_term."""
    expressions = term.get("matchExpressions") or []
    if not expressions:
        return False
    return all(_expression(e, labels) for e in expressions)


def matches_node(pod: PodSpec, labels: Mapping[str, str]) -> bool:
    """nodeSelector (every pair) and required node affinity (any term)."""
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.required_terms and not any(matches_term(t, labels) for t in pod.required_terms):
        return False
    return True


def fit_request(pod: PodSpec) -> dict[str, int]:
    """What NodeResourcesFit counts against a node for one pod: its request and one of the node's `pods`."""
    return {**pod.request(), "pods": 1}


def insufficient(request: Mapping[str, int], allocatable: Mapping[str, int]) -> list[str]:
    """NodeResourcesFit: the resources the pod asks for more of than the node has (zero requests ignored)."""
    return sorted(r for r, v in request.items() if v > 0 and v > allocatable.get(r, 0))
