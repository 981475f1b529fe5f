"""The controllers of the pinned charts (Kueue, GPU Operator and its NFD master/gc, Network Operator,
kube-prometheus-stack's operator, Prometheus and kube-state-metrics, the Cluster Autoscaler) as the model sees them:
one pod each, with the nodeSelector and tolerations gpufleet's values give it, else the chart's default
(gpufleet.facts.versions.CHART_CONTROLLERS, each read from the pinned chart's values.yaml).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/controllers.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.facts.versions import CHART_CONTROLLERS, COMPONENTS
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.workload import Container, PodSet, PodSpec, Workload


def _get(values: Mapping[str, Any], key: str) -> Any:
    for part in key.split("."):
        if not isinstance(values, Mapping) or part not in values:
            return None
        values = values[part]
    return values


def controllers(plan: RolloutPlan) -> list[Workload]:
    out = []
    for stage in plan.included():
        for res in stage.content.resources:
            if res.type != "kubernetes:helm.sh/v3:Release":
                continue
            chart = str(res.args.get("chart")).rsplit("/", 1)[-1]  # an OCI chart is named by its reference
            placements = CHART_CONTROLLERS.get(chart, {}).get(str(res.args.get("version")), ())
            values = res.args.get("values") or {}
            for c in placements:
                if c.enabled_key is not None and _get(values, c.enabled_key) is False:
                    continue
                selector = _get(values, c.node_selector_key)
                tolerations = _get(values, c.tolerations_key)
                pod = PodSpec(
                    containers=(Container(name=c.name, requests={}, limits={}),),
                    node_selector=dict(c.node_selector if selector is None else selector),
                    tolerations=tuple(c.tolerations if tolerations is None else tolerations),
                )
                out.append(
                    Workload(
                        kind=c.kind,
                        namespace=str(res.args.get("namespace")),
                        name=c.name,
                        labels={},
                        pod_sets=(PodSet(name="main", count=1, pod=pod),),
                        api_version="apps/v1",  # Deployments and StatefulSets
                    )
                )
    return out


def overlaid(plan: RolloutPlan, wl: Workload) -> tuple[str, str | None, str | None] | None:
    """Where the spec's Helm values overlay places the chart controller `wl`: (component, the values key of its
    nodeSelector, of its tolerations), each None where the overlay does not set it; None for a workload that is not
    a chart controller or whose placement the overlay leaves alone."""
    for stage in plan.included():
        for res in stage.content.resources:
            if res.type != "kubernetes:helm.sh/v3:Release" or str(res.args.get("namespace")) != wl.namespace:
                continue
            chart = str(res.args.get("chart")).rsplit("/", 1)[-1]
            component = next((key for key, c in COMPONENTS.items() if c.chart == chart), None)
            overlay = plan.fleet.helm_values.get(component or "")
            if component is None or not overlay:
                continue
            for c in CHART_CONTROLLERS.get(chart, {}).get(str(res.args.get("version")), ()):
                if c.name != wl.name:
                    continue
                selector = c.node_selector_key if _get(overlay, c.node_selector_key) is not None else None
                tolerations = c.tolerations_key if _get(overlay, c.tolerations_key) is not None else None
                return (component, selector, tolerations) if selector or tolerations else None
    return None
