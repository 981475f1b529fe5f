"""Every object of a kind a chart's CRD defines waits for that chart's release (every golden tree).

An object applied before its CustomResourceDefinition exists fails (`no matches for kind "K" in version "G/V"`),
and a Helm release that renders one fails its install the same way: Helm maps every manifest of the release to a
resource before it creates any. Across stages the order holds by itself (a stage waits for the previous stage's
readiness); within a stage the object, or the release that renders it, must depend on the release that installs
the CRD. A kind whose chart the tree does not install (an existing Prometheus) is the cluster's already.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gpufleet.facts import chart_values, stages
from tests.trees import resources
from tests.upstream import require_shared

TREES = Path(__file__).resolve().parent / "trees"
TREE_DIRS = sorted(p.parent for p in TREES.glob("*/*/plan.json"))
HELM = "kubernetes:helm.sh/v3:Release"
MONITORING = ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Prometheus", "Alertmanager", "Probe", "ScrapeConfig")

# The kinds whose CRDs each chart installs (chart name -> kinds), for the charts gpufleet releases: the Prometheus
# Operator's in kube-prometheus-stack's crds/ subchart; KEDA's keda/templates/crds/ (crds.install); kueue's, JobSet's,
# the Trainer's and LWS's charts' CRDs (../shared/crds at the pinned releases); karpenter-crd's templates/; the GPU
# Operator's deployments/gpu-operator/crds/; the Network Operator's NicClusterPolicy.
CHART_CRDS: Mapping[str, tuple[str, ...]] = {
    "kube-prometheus-stack": MONITORING,
    "keda": ("ScaledObject", "ScaledJob", "TriggerAuthentication", "ClusterTriggerAuthentication"),
    "kueue": ("ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "Topology", "WorkloadPriorityClass"),
    "jobset": ("JobSet",),
    "kubeflow-trainer": ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"),
    "lws": ("LeaderWorkerSet",),
    "karpenter-crd": ("NodePool", "EC2NodeClass", "NodeClaim", "NodeOverlay"),
    "gpu-operator": ("ClusterPolicy", "NVIDIADriver"),
    "network-operator": ("NicClusterPolicy",),
}
# The Prometheus Operator objects a chart renders, none guarded by .Capabilities (chart -> (kind, the values that
# must all be true)). kedacore/charts keda/templates/manager/servicemonitor.yaml @ keda-2.20.2: `if and
# .Values.prometheus.operator.enabled .Values.prometheus.operator.serviceMonitor.enabled` (metrics-server/ and the
# podmonitor/prometheusrules templates alike); kubernetes-sigs/kueue charts/kueue/templates/prometheus/ (`if
# .Values.enablePrometheus`); each other chart's values.yaml comment ("If true, creates a Prometheus Operator
# ServiceMonitor").
CHART_MONITORS: Mapping[str, tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]] = {
    "keda": tuple(
        (kind, (("prometheus", part, "enabled"), ("prometheus", part, key, "enabled")))
        for part in ("operator", "metricServer", "webhooks")
        for kind, key in (("ServiceMonitor", "serviceMonitor"), ("PodMonitor", "podMonitor"))
    )
    + (
        (
            "PrometheusRule",
            (("prometheus", "operator", "enabled"), ("prometheus", "operator", "prometheusRules", "enabled")),
        ),
    ),
    "kueue": (("ServiceMonitor", (("enablePrometheus",),)),),
    "gpu-operator": (("ServiceMonitor", (("dcgmExporter", "serviceMonitor", "enabled"),)),),
    "karpenter": (("ServiceMonitor", (("serviceMonitor", "enabled"),)),),
    "cluster-autoscaler": (
        ("ServiceMonitor", (("serviceMonitor", "enabled"),)),
        ("PrometheusRule", (("prometheusRule", "enabled"),)),
    ),
    "node-problem-detector": (
        ("ServiceMonitor", (("metrics", "enabled"), ("metrics", "serviceMonitor", "enabled"))),
        ("PrometheusRule", (("metrics", "enabled"), ("metrics", "prometheusRule", "enabled"))),
    ),
}


def _chart(resource: Mapping[str, Any]) -> str:
    return str(resource["inputs"].get("chart", "")).rsplit("/", 1)[-1]  # an OCI chart is named by its reference


def _get(values: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        values = values.get(key) if isinstance(values, Mapping) else None
    return values


def _merged(base: Any, override: Any) -> Any:
    if not isinstance(base, Mapping) or not isinstance(override, Mapping):
        return override if override is not None else base
    return {**base, **{k: _merged(base.get(k), v) for k, v in override.items()}}


def rendered_kinds(resource: Mapping[str, Any], shared: Path) -> set[str]:
    """The kinds of CRD-defined objects a resource creates: its own kind, or what a Helm release renders."""
    if resource["type"] != HELM:
        kind = resource["inputs"].get("kind")
        return {kind} if isinstance(kind, str) else set()
    chart = _chart(resource)
    if chart not in CHART_MONITORS:
        return set()
    found = chart_values.defaults_in(shared, chart, str(resource["inputs"]["version"]))
    defaults = found.values if isinstance(found, chart_values.ChartDefaults) else {}
    values = _merged(defaults, resource["inputs"].get("values") or {})
    return {kind for kind, paths in CHART_MONITORS[chart] if all(_get(values, p) is True for p in paths)}


def missing_crd_dependencies(entries: list[dict[str, Any]], shared: Path) -> list[str]:
    by_id = {r["id"]: r for r in entries}
    installs = {kind: r for r in entries if r["type"] == HELM for kind in CHART_CRDS.get(_chart(r), ())}

    def waits_for(start: str, target: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            current = todo.pop()
            if current == target:
                return True
            if current not in seen and current in by_id:
                seen.add(current)
                todo += by_id[current].get("dependsOn") or []
        return False

    found = []
    for r in entries:
        for kind in sorted(rendered_kinds(r, shared)):
            release = installs.get(kind)
            if release is None or release["id"] == r["id"]:
                continue
            if stages.index(release["stage"]) < stages.index(r["stage"]):
                continue
            if not waits_for(r["id"], release["id"]):
                found.append(f"{r['id']} ({kind}) does not wait for {release['id']}")
    return found


@pytest.mark.parametrize("root", TREE_DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_crd_object_waits_for_the_release_of_its_crd(root: Path) -> None:
    assert missing_crd_dependencies(resources(root), require_shared()) == []


def test_keda_renders_service_monitors_in_the_stage_that_installs_their_crd() -> None:
    # the case of issue 41 item 4: the example's KEDA release renders two ServiceMonitors in the telemetry stage,
    # beside kube-prometheus-stack, which installs their CRD.
    entries = resources(TREES / "example" / "prod")
    keda = next(r for r in entries if r["id"] == "helm-keda")
    assert rendered_kinds(keda, require_shared()) == {"ServiceMonitor"}
    assert keda["stage"] == next(r for r in entries if r["id"] == "helm-kube-prometheus-stack")["stage"]
