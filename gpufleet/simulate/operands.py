"""The DaemonSets the pinned charts run on GPU nodes, as the model sees them: where they must run and what they
tolerate, read from the Helm values gpufleet renders, with the chart's own default where a value is not set.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/operands.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.workload import Container, PodSet, PodSpec, Workload
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup
from gpufleet.spec.names import LABEL_NODE_GROUP

_EXISTS_NO_SCHEDULE = [{"operator": "Exists", "effect": "NoSchedule"}]
Targets = Callable[[Fleet, Mapping[str, Any]], Sequence[NodeGroup]]


def _get(values: Mapping[str, Any], path: str) -> Any:
    for key in path.split("."):
        if not isinstance(values, Mapping) or key not in values:
            return None
        values = values[key]
    return values


def _all(fleet: Fleet, values: Mapping[str, Any]) -> Sequence[NodeGroup]:
    return fleet.node_groups


def _efa(fleet: Fleet, values: Mapping[str, Any]) -> Sequence[NodeGroup]:
    return [g for g in fleet.node_groups if g.fabric is Fabric.EFA]


def _by_affinity(fleet: Fleet, values: Mapping[str, Any]) -> Sequence[NodeGroup]:
    terms = _get(values, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms") or []
    named = {
        v
        for t in terms
        for e in t.get("matchExpressions") or []
        if e.get("key") == LABEL_NODE_GROUP and e.get("operator") == "In"
        for v in e.get("values") or []
    }
    return [g for g in fleet.node_groups if g.name in named] if terms else fleet.node_groups


# release -> (operand name, tolerations value path, chart default tolerations, groups it must run on)
OPERANDS: Mapping[str, tuple[str, str, list[dict[str, str]], Targets]] = {
    "gpu-operator": (
        "nvidia-device-plugin-daemonset",
        "daemonsets.tolerations",
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        _all,
    ),
    "aws-efa-k8s-device-plugin": ("aws-efa-k8s-device-plugin", "tolerations", [], _efa),
    "node-problem-detector": ("node-problem-detector", "tolerations", _EXISTS_NO_SCHEDULE, _by_affinity),
    "kube-prometheus-stack": (
        "prometheus-node-exporter",
        "prometheus-node-exporter.tolerations",
        _EXISTS_NO_SCHEDULE,
        _all,
    ),
    # The Mountpoint S3 CSI node plugin: with node.tolerateAllTaints (true, values.yaml @v2.7.0) templates/node.yaml
    # renders `operator: Exists` before node.tolerations, which gpufleet never sets; the chart's node affinity keeps
    # it off Fargate and hybrid nodes only, so every group.
    "aws-mountpoint-s3-csi-driver": ("s3-csi-node", "node.tolerations", [{"operator": "Exists"}], _all),
}


def _fsx_node_tolerations(values: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """templates/node-daemonset.yaml (chart 1.17.0): `operator: Exists` alone while node.tolerateAllTaints (default
    true), else node.tolerations (default: any NoExecute for 300 s) and the driver's own startup taint."""
    if _get(values, "node.tolerateAllTaints") is not False:
        return [{"operator": "Exists"}]
    own = _get(values, "node.tolerations")
    return [
        *(own if own is not None else [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]),
        {"key": "fsx.csi.aws.com/agent-not-ready", "operator": "Exists"},
    ]


# Operands whose tolerations the chart's template derives from more than one value: release -> (name, tolerations of
# the values, groups it must run on).
DERIVED: Mapping[str, tuple[str, Callable[[Mapping[str, Any]], list[Mapping[str, Any]]], Targets]] = {
    "aws-fsx-csi-driver": ("fsx-csi-node", _fsx_node_tolerations, _all),
}


def operands(plan: RolloutPlan) -> list[Workload]:
    out = []
    for stage in plan.included():
        for res in stage.content.resources:
            release = str(res.args.get("name"))
            if res.type != "kubernetes:helm.sh/v3:Release" or (release not in OPERANDS and release not in DERIVED):
                continue
            values = res.args.get("values") or {}
            if release in DERIVED:
                name, derive, targets = DERIVED[release]
                tolerations: Any = derive(values)
            else:
                name, path, default, targets = OPERANDS[release]
                tolerations = _get(values, path)
                tolerations = default if tolerations is None else tolerations
            groups = sorted(g.name for g in targets(plan.fleet, values))
            if not groups:
                continue
            pod = PodSpec(
                containers=(Container(name=name, requests={}, limits={}),),
                required_terms=({"matchExpressions": [{"key": LABEL_NODE_GROUP, "operator": "In", "values": groups}]},),
                tolerations=tuple(tolerations),
            )
            out.append(
                Workload(
                    kind="DaemonSet",
                    namespace=str(res.args.get("namespace")),
                    name=name,
                    labels={},
                    pod_sets=(PodSet(name="main", count=1, pod=pod),),
                    api_version="apps/v1",
                )
            )
    return out
