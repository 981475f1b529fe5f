"""The pinned charts' default values, read from the upstream cache, for checking a spec's Helm values overlay
(`helm.<component>.values`, gpufleet.rules.helm_values).

Upstream chart values are upstream data: they do not ship with gpufleet. `python tools/fetch_upstream.py` (in a
gpufleet checkout) fetches each pinned chart's values.yaml (and Chart.yaml, each vendored subchart's values and any
values.schema.json) from its upstream URL at the pinned commit into a cache directory: $GPUFLEET_UPSTREAM_DIR, else
~/.cache/gpufleet/upstream, and gpufleet reads them from there (a checkout's ../shared holds the same files:
GPUFLEET_UPSTREAM_DIR=../shared). A chart whose values file is absent there cannot have its overlay checked, so the
overlay is refused (never accepted unchecked).

Layout: charts/<chart>/<version>/values.yaml; JobSet, Trainer and LWS under their release tag (v<version>, as
../shared/charts/SOURCES.md names them); subcharts under charts/<chart>/<version>/charts/<dependency>/.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ENVIRONMENT_VARIABLE = "GPUFLEET_UPSTREAM_DIR"
DEFAULT_CACHE = Path("~/.cache/gpufleet/upstream")
FETCH_COMMAND = "python tools/fetch_upstream.py"


def upstream_dir() -> Path:
    """Where the upstream files are: $GPUFLEET_UPSTREAM_DIR, else the cache tools/fetch_upstream.py fills by default
    (its default_dir)."""
    return Path(os.environ.get(ENVIRONMENT_VARIABLE) or DEFAULT_CACHE).expanduser()


@dataclass(frozen=True, slots=True)
class ChartDefaults:
    """A chart's default values as Helm merges them (each vendored subchart's defaults under its dependency name or
    alias, the parent's values for it on top), the `properties` tree of its values.schema.json files (a subchart's
    under its name), and the dependencies whose values are not in the cache."""

    values: Mapping[str, Any]
    schema: Mapping[str, Any]
    missing_subcharts: frozenset[tuple[str, ...]]  # value paths of the dependencies without their values.yaml
    path: Path  # the chart's values.yaml


def chart_path(directory: Path, chart: str, version: str) -> Path:
    """charts/<chart>/<version>, or charts/<chart>/v<version> where the cache names the chart by its release tag."""
    root = directory / "charts" / chart
    if not (root / version).is_dir() and (root / f"v{version}").is_dir():
        return root / f"v{version}"
    return root / version


def defaults(chart: str, version: str) -> ChartDefaults | str:
    """The chart's defaults, or why they are not available (a phrase: "are not in the upstream cache (DIR)")."""
    return defaults_in(upstream_dir(), chart, version)


@functools.cache
def defaults_in(directory: Path, chart: str, version: str) -> ChartDefaults | str:
    """The chart's defaults in the cache `directory` (read once a run), or why they are not available: its
    values.yaml is not there, or a file of the chart cannot be read as what it must be."""
    root = chart_path(directory, chart, version)
    if not (root / "values.yaml").is_file():
        return f"are not in the upstream cache ({directory})"
    try:
        values, schema, missing = _chart(root)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:  # json.JSONDecodeError is a ValueError
        return f"cannot be read from the upstream cache ({root}: {type(exc).__name__})"
    return ChartDefaults(values=values, schema=schema, missing_subcharts=frozenset(missing), path=root / "values.yaml")


def _load(path: Path) -> Any:
    loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)


def _schema(root: Path) -> dict[str, Any]:
    path = root / "values.schema.json"
    if not path.is_file():
        return {}
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def _chart(root: Path) -> tuple[dict[str, Any], dict[str, Any], set[tuple[str, ...]]]:
    values = _load(root / "values.yaml") or {}
    values = values if isinstance(values, dict) else {}
    schema = _schema(root)
    chart = _load(root / "Chart.yaml") if (root / "Chart.yaml").is_file() else {}
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
        sub_values, sub_schema, sub_missing = _chart(sub)
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
