"""Checks of a spec's Helm values overlay (`helm.<component>.values`) against the pinned chart (rule helm-values).

Every key path of an overlay must be a value of the chart version the environment deploys: a key of its default
values.yaml (with each vendored subchart's defaults under its dependency name), a property of its values.schema.json,
or a key below a value the chart takes whole: one whose default is an empty map or null, or one named in
PASSED_WHOLE (Kubernetes objects and maps a chart renders with toYaml, such as nodeSelector or podAnnotations). An
unknown key is an error at the key, with the closest known one as the hint. A key gpufleet guards
(gpufleet.facts.helm_guards) is an error with the reason. The keys of every chart version gpufleet installs ship with
it (gpufleet.facts.chart_values); a value of a subchart the chart does not vendor cannot be checked and is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.base.errors import Issue, Path, closest
from gpufleet.facts import chart_values, helm_guards
from gpufleet.facts.chart_values import ChartDefaults, dotted
from gpufleet.facts.versions import COMPONENTS

# Values charts pass to their templates whole (toYaml, range), so what is below them is Kubernetes' or the program's,
# not the chart's: a key under one is not checked against the chart's defaults even where the default has keys.
PASSED_WHOLE = frozenset(
    {
        "affinity",
        "annotations",
        "additionalAnnotations",
        "additionalLabels",
        "containerSecurityContext",
        "extraArgs",
        "labels",
        "nodeSelector",
        "podAnnotations",
        "podLabels",
        "podSecurityContext",
        "resources",
        "securityContext",
    }
)

# The components whose chart gpufleet installs as a Helm release (multus is an image gpufleet renders itself).
HELM_COMPONENTS = tuple(key for key, c in COMPONENTS.items() if c.pin_field == "chart")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "map"


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props if isinstance(props, Mapping) else {}


def overlay_issues(component: str, version: str, overlay: Mapping[str, Any], found: ChartDefaults) -> Iterator[Issue]:
    """The issues of one component's overlay, given the chart's defaults."""
    chart = COMPONENTS[component].chart
    root: Path = ("helm", component, "values")
    guarded = list(_guarded(component, overlay, root, ()))
    yield from guarded
    refused = {i.path for i in guarded}
    for issue in _unknown(chart, version, overlay, found, found.values, found.schema, root, ()):
        # A guarded path is reported once, for its reason: not again as unknown, nor the maps that lead to it.
        if not any(issue.path[: len(p)] == p or p[: len(issue.path)] == issue.path for p in refused):
            yield issue


def _guarded(component: str, overlay: Mapping[str, Any], root: Path, path: tuple[str, ...]) -> Iterator[Issue]:
    for key, value in overlay.items():
        here = path + (key,)
        replaces = not isinstance(value, dict)
        hit = helm_guards.guard(component, here, replaces)
        if hit is not None:
            guarded, reason = hit
            what = dotted(here) if here[: len(guarded)] == guarded else f"{dotted(here)} (it holds {dotted(guarded)})"
            yield Issue(
                path=root + here,
                at_key=True,
                message=f"{what} is set by gpufleet and may not be overridden: {reason}",
                hint=f"remove helm.{component}.values.{dotted(here)}",
            )
        elif not replaces:
            yield from _guarded(component, value, root, here)


def _unknown(
    chart: str,
    version: str,
    overlay: Mapping[str, Any],
    found: ChartDefaults,
    defaults: Mapping[str, Any],
    schema: Mapping[str, Any],
    root: Path,
    path: tuple[str, ...],
) -> Iterator[Issue]:
    props = _properties(schema)
    for key, value in overlay.items():
        here = path + (key,)
        if key not in defaults and key not in props:
            missing = next((m for m in found.missing_subcharts if here[: len(m)] == m), None)
            if missing is not None:
                yield Issue(
                    path=root + here,
                    at_key=True,
                    message=(
                        f"{dotted(here)} is a value of subchart {dotted(missing)} of chart {chart} {version}, which"
                        " the chart takes from another repository: gpufleet does not have its keys, so it cannot"
                        " check this value and refuses it"
                    ),
                    hint=f"remove {'.'.join(map(str, root))}.{dotted(here)}",
                )
                continue
            known = sorted(set(defaults) | set(props))
            match = closest(key, known)
            parent = dotted(path) if path else "the top level"
            yield Issue(
                path=root + here,
                at_key=True,
                message=f"unknown key {dotted(here)}: chart {chart} {version} has no such value",
                hint=(
                    f'did you mean "{dotted(path + (match,))}"?'
                    if match is not None
                    else f"the keys at {parent}: {', '.join(known[:12])}{', ...' if len(known) > 12 else ''}"
                ),
            )
            continue
        if not isinstance(value, dict) or not value or key in PASSED_WHOLE:
            continue
        default = defaults.get(key)
        sub_schema = props.get(key) or {}
        if isinstance(default, dict) and default or _properties(sub_schema):
            yield from _unknown(
                chart,
                version,
                value,
                found,
                default if isinstance(default, dict) else {},
                sub_schema,
                root,
                here,
            )
        elif default is not None and default != {}:
            yield Issue(
                path=root + here,
                message=f"{dotted(here)} is a {_kind(default)} in chart {chart} {version}'s default values, not a map",
                hint=f"give {dotted(here)} a {_kind(default)} value, as its default is",
            )


def issues(fleet_overlays: Mapping[str, Mapping[str, Any]], versions: Mapping[str, str]) -> Iterator[Issue]:
    """Every issue of the spec's overlays; `versions`: each component's chart version in this fleet."""
    for component, overlay in fleet_overlays.items():
        if component not in HELM_COMPONENTS:
            match = closest(component, HELM_COMPONENTS)
            yield Issue(
                path=("helm", component),
                at_key=True,
                message=f'"{component}" is not a chart gpufleet installs',
                hint=f'did you mean "{match}"?' if match else f"the charts: {', '.join(sorted(HELM_COMPONENTS))}",
            )
            continue
        version = versions[component]
        found = chart_values.defaults(COMPONENTS[component].chart, version)
        yield from overlay_issues(component, version, overlay, found)
