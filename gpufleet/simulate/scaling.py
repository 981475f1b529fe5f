"""KEDA ScaledObjects among explain's manifests: the workload each scales, at the most replicas KEDA may give it.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/scaling.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from gpufleet.simulate.workload import Workload, WorkloadError

API_GROUP = "keda.sh"
KIND = "ScaledObject"
DEFAULT_MAX_REPLICAS = 100
DEFAULT_TARGET = ("apps", "Deployment")
# The kinds a replica count means pods of (a LeaderWorkerSet: replica groups).
SCALABLE = frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet"})


def is_scaled_object(obj: Any) -> bool:
    return (
        isinstance(obj, Mapping)
        and obj.get("kind") == KIND
        and str(obj.get("apiVersion", "")).split("/")[0] == API_GROUP
    )


def max_replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("maxReplicaCount", DEFAULT_MAX_REPLICAS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WorkloadError("spec.maxReplicaCount: must be a whole number")
    return value


def at_most(obj: Mapping[str, Any], workloads: Sequence[Workload]) -> Workload:
    """The ScaledObject's target among `workloads` with maxReplicaCount replicas (WorkloadError naming the field where
    it has no target there)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "default")
    ref = (obj.get("spec") or {}).get("scaleTargetRef")
    if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str):
        raise WorkloadError("spec.scaleTargetRef.name: missing")
    group = str(ref.get("apiVersion", "apps/v1")).rpartition("/")[0] or ""
    kind = str(ref.get("kind", DEFAULT_TARGET[1]))
    target = next(
        (
            w
            for w in workloads
            if (w.kind, w.namespace, w.name) == (kind, namespace, ref["name"])
            and w.api_version.rpartition("/")[0] == group
        ),
        None,
    )
    if target is None or kind not in SCALABLE:
        raise WorkloadError(
            f"spec.scaleTargetRef.name: {kind} {namespace}/{ref['name']} is not among the manifests given: give its"
            " manifest too, and explain judges it at the ScaledObject's maxReplicaCount"
        )
    top = max_replicas(obj)
    scaled = (name, top)
    if kind == "LeaderWorkerSet":
        return dataclasses.replace(target, groups=top, scaled_by=scaled)
    return dataclasses.replace(
        target, pod_sets=tuple(dataclasses.replace(ps, count=top) for ps in target.pod_sets), scaled_by=scaled
    )
