"""The pinned charts' value keys, for checking a spec's Helm values overlay (`helm.<component>.values`,
gpufleet.rules.helm_values): package data, so an installed gpufleet checks an overlay offline.

Why, with sources: docs/helm-values.md, "Design notes", gpufleet/facts/chart_values.py.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

DERIVED_BY = "python tools/fetch_upstream.py --chart-keys"


@dataclass(frozen=True, slots=True)
class ChartDefaults:
    """A chart's default values as Helm merges them, the `properties` tree of its values.schema.json files (a
    subchart's under its name), the dependencies whose values are not there, and the files read (their paths in
    the upstream cache, as tools/upstream_files.json names them)."""

    values: Mapping[str, Any]
    schema: Mapping[str, Any]
    missing_subcharts: frozenset[tuple[str, ...]]  # value paths of the dependencies without their values.yaml
    files: tuple[str, ...]


def keys_name(chart: str, version: str) -> str:
    return f"{chart}-{version}.json"


@functools.cache
def defaults(chart: str, version: str) -> ChartDefaults:
    """The shipped keys of a chart version gpufleet installs (every one has them: tests/unit/test_chart_keys.py)."""
    text = (resources.files("gpufleet") / "data" / "chart-keys" / keys_name(chart, version)).read_text("utf-8")
    document = json.loads(text)
    return ChartDefaults(
        values=document["values"],
        schema=document["schema"],
        missing_subcharts=frozenset(tuple(m) for m in document["missingSubcharts"]),
        files=tuple(s["path"] for s in document["sources"]),
    )


def key_tree(value: Any) -> Any:
    """The keys of a values tree, every other value replaced by an empty one of its kind."""
    if isinstance(value, dict):
        return {str(k): key_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return []
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return 0
    return "" if isinstance(value, str) else None


def schema_tree(schema: Any) -> dict[str, Any]:
    """The `properties` and `type` tree of a values.schema.json, all the check reads of it."""
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(schema.get("type"), (str, list)):
        out["type"] = schema["type"]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {k: schema_tree(v) for k, v in properties.items() if isinstance(v, dict)}
    return out


def keys_document(chart: str, version: str, found: ChartDefaults, sources: list[dict[str, str]]) -> dict[str, Any]:
    """What gpufleet/data/chart-keys/<chart>-<version>.json holds, from the chart's upstream files."""
    return {
        "chart": chart,
        "version": version,
        "derivedBy": DERIVED_BY,
        "sources": sources,
        "missingSubcharts": sorted(list(m) for m in found.missing_subcharts),
        "values": key_tree(found.values),
        "schema": schema_tree(found.schema),
    }


def chart_path(directory: Path, chart: str, version: str) -> Path:
    """charts/<chart>/<version>, or charts/<chart>/v<version> where the cache names the chart by its release tag."""
    root = directory / "charts" / chart
    if not (root / version).is_dir() and (root / f"v{version}").is_dir():
        return root / f"v{version}"
    return root / version


def defaults_in(directory: Path, chart: str, version: str) -> ChartDefaults | str:
    """The chart's defaults in the upstream cache `directory`, or why they are not available: its values.yaml is
    not there, or a file of the chart cannot be read as what it must be."""
    root = chart_path(directory, chart, version)
    if not (root / "values.yaml").is_file():
        return f"are not in the upstream cache ({directory})"
    files: list[Path] = []
    try:
        values, schema, missing = _chart(root, files)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:  # json.JSONDecodeError is a ValueError
        return f"cannot be read from the upstream cache ({root}: {type(exc).__name__})"
    return ChartDefaults(
        values=values,
        schema=schema,
        missing_subcharts=frozenset(missing),
        files=tuple(sorted(f.relative_to(directory).as_posix() for f in files)),
    )


def _load(path: Path, files: list[Path]) -> Any:
    files.append(path)
    loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)


def _schema(root: Path, files: list[Path]) -> dict[str, Any]:
    path = root / "values.schema.json"
    if not path.is_file():
        return {}
    files.append(path)
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def _chart(root: Path, files: list[Path]) -> tuple[dict[str, Any], dict[str, Any], set[tuple[str, ...]]]:
    values = _load(root / "values.yaml", files) or {}
    values = values if isinstance(values, dict) else {}
    schema = _schema(root, files)
    chart = _load(root / "Chart.yaml", files) if (root / "Chart.yaml").is_file() else {}
    missing: set[tuple[str, ...]] = set()
    dependencies = chart.get("dependencies") if isinstance(chart, dict) else None
    for dependency in dependencies if isinstance(dependencies, list) else []:
        if not isinstance(dependency, dict) or not isinstance(dependency.get("name"), str):
            raise ValueError(f"{root / 'Chart.yaml'}: a dependency without a name")
        key = str(dependency.get("alias") or dependency["name"])
        sub = root / "charts" / dependency["name"]
        if not (sub / "values.yaml").is_file():
            missing.add((key,))
            continue
        sub_values, sub_schema, sub_missing = _chart(sub, files)
        values[key] = _merged(sub_values, values.get(key))
        if sub_schema:
            schema.setdefault("properties", {})[key] = sub_schema
        missing |= {(key, *m) for m in sub_missing}
    return values, schema, missing


def _merged(base: Any, override: Any) -> Any:
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override if override is not None else base
    return {**base, **{k: _merged(base.get(k), v) for k, v in override.items()}}


def dotted(path: tuple[str | int, ...]) -> str:
    """A value path as Helm's --set writes it: dots between keys, a dot inside a key escaped."""
    return ".".join(str(p).replace(".", "\\.") for p in path)
