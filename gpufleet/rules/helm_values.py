"""Checks of a spec's Helm values overlay (`helm.<component>.values`) against the pinned chart (rule helm-values).

Why, with sources: docs/helm-values.md, "Design notes", gpufleet/rules/helm_values.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.base.errors import Issue, Path, closest
from gpufleet.facts import chart_values, helm_guards
from gpufleet.facts.chart_values import ChartDefaults, dotted
from gpufleet.facts.versions import CHART_CONTROLLERS, COMPONENTS

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
    unknown = []
    for issue in _unknown(chart, version, overlay, found, found.values, found.schema, root, ()):
        # A guarded path is reported once, for its reason: not again as unknown, nor the maps that lead to it.
        if not any(issue.path[: len(p)] == p or p[: len(issue.path)] == issue.path for p in refused):
            unknown.append(issue)
            yield issue
    if not unknown:
        yield from _placement(chart, version, overlay, root)


# core/v1 Toleration's fields and the values the API server takes for its enums (k8s.io/api core/v1 types.go
# TolerationOperator, TaintEffect; pkg/apis/core/validation ValidateTolerations: "Unsupported value").
_TOLERATION_STRINGS = ("key", "operator", "value", "effect")
_OPERATORS = ("Exists", "Equal")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _placement(chart: str, version: str, overlay: Mapping[str, Any], root: Path) -> Iterator[Issue]:
    """The nodeSelector and tolerations of the chart's controllers, where the overlay sets them, as the API server
    reads a pod's: a map of strings, and a list of Tolerations (gpufleet.simulate.controllers places the
    controllers with them)."""
    for placement in CHART_CONTROLLERS.get(chart, {}).get(version, ()):
        selector_path = tuple(placement.node_selector_key.split("."))
        selector = _at(overlay, selector_path)
        if isinstance(selector, Mapping):
            for key, value in selector.items():
                if value is not None and not isinstance(value, str):  # null decodes as ""
                    text = json.dumps(value) if isinstance(value, bool) else str(value)
                    yield Issue(
                        path=root + selector_path + (key,),
                        message=f"a nodeSelector value is a string (a node label's value), not a {_kind(value)}",
                        hint=f'quote it: {key}: "{text}"' if not isinstance(value, (dict, list)) else "",
                    )
        tolerations_path = tuple(placement.tolerations_key.split("."))
        tolerations = _at(overlay, tolerations_path)
        for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
            where = root + tolerations_path + (i,)
            if not isinstance(toleration, Mapping):
                yield Issue(
                    path=where,
                    message=f"a toleration is a map (key, operator, value, effect), not a {_kind(toleration)}",
                )
                continue
            yield from _toleration(toleration, where)


def _toleration(toleration: Mapping[str, Any], where: Path) -> Iterator[Issue]:
    for field in _TOLERATION_STRINGS:
        value = toleration.get(field)
        if value is not None and not isinstance(value, str):
            yield Issue(path=where + (field,), message=f"{field} is a string, not a {_kind(value)}")
    seconds = toleration.get("tolerationSeconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        yield Issue(
            path=where + ("tolerationSeconds",), message=f"tolerationSeconds is an integer, not a {_kind(seconds)}"
        )
    operator, effect = toleration.get("operator"), toleration.get("effect")
    if isinstance(operator, str) and operator and operator not in _OPERATORS:
        yield Issue(
            path=where + ("operator",),
            message=f'Unsupported value: "{operator}": supported values: "{_OPERATORS[0]}", "{_OPERATORS[1]}"',
        )
    if isinstance(effect, str) and effect and effect not in _EFFECTS:
        yield Issue(
            path=where + ("effect",),
            message=f'Unsupported value: "{effect}": supported values: ' + ", ".join(f'"{e}"' for e in _EFFECTS),
        )


def _at(values: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(values, Mapping) or part not in values:
            return None
        values = values[part]
    return values


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
        default = defaults.get(key)
        sub_schema = props.get(key) or {}
        wrong = _wrong_kind(value, key in defaults, default, sub_schema)
        if wrong is not None:
            expected, source = wrong
            yield Issue(
                path=root + here,
                at_key=True,
                message=f"{dotted(here)} is a {expected} in chart {chart} {version}'s {source}, not a {_kind(value)}",
                hint=f"give {dotted(here)} a {expected} value, as {_SAYS.get(source, source + ' says')}",
            )
            continue
        if not isinstance(value, dict) or not value or key in PASSED_WHOLE:
            continue
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


DEFAULTS = "default values"
_SAYS = {DEFAULTS: "its default is"}
# values.schema.json types (JSON Schema's), as the kinds _kind names
_SCHEMA_KINDS = {
    "object": "map",
    "array": "list",
    "string": "string",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "null": "null",
}


def _wrong_kind(value: Any, has_default: bool, default: Any, schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the kind the chart takes, where it says so) when the overlay's value is of another kind.

    Why: docs/helm-values.md, "Design notes", helm_values._wrong_kind."""
    if value is None:
        return None
    kinds = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(kinds, str):
        kinds = [kinds]
    if isinstance(kinds, list) and kinds:
        allowed = {_SCHEMA_KINDS.get(str(k), str(k)) for k in kinds}
        if _kind(value) not in allowed:
            return " or ".join(sorted(allowed)), "values.schema.json"
    if not has_default or default is None:
        return None
    expected, got = _kind(default), _kind(value)
    if expected == got or {expected, got} <= {"string", "number"}:
        return None
    return expected, DEFAULTS


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
