"""The spec's JSON Schema (2020-12): the shipped document, the dialect helpers its validator uses, static defaults.

Why, with sources: docs/spec.md, "Design notes", gpufleet/spec/schema.py.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

# Package data: gpufleet/schemas links to the top-level schemas/ folder (one file, two paths); the wheel ships it
# (pyproject.toml), so an installed gpufleet reads it where the checkout does not exist.
SCHEMA_FILE = resources.files("gpufleet") / "schemas" / "fleet.schema.json"


@functools.cache
def fleet_schema() -> dict[str, Any]:
    # Not checked against the 2020-12 metaschema here: that takes longer than validating a 96-group spec, on
    # every run, for a file that only changes in a commit; tests/unit/test_fleet_schema.py checks it.
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


@functools.cache
def whole_string(pattern: str) -> re.Pattern[str]:
    """`pattern` with ECMA-262 semantics, the regex dialect of JSON Schema, for `$` (the end of the string) and for
    `\\d`, `\\w` and `\\b` (ASCII only).

    Why: docs/spec.md, "Design notes", schema.whole_string."""
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append(r"\Z")
            continue
        out.append(char)
    return re.compile("".join(out), re.ASCII)


def is_integer(value: object) -> bool:
    """Only a whole number written as one: 1.0e+308 is a float (and overflows where an int is needed)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A finite number: YAML's .nan and .inf are floats, but no field means them."""
    if isinstance(value, float):
        return math.isfinite(value)
    return is_integer(value)


def trusting(schema: dict[str, Any], trusted: frozenset[str]) -> dict[str, Any]:
    """`schema` with the schemas of the `trusted` top-level sections replaced by `true`: sections the caller knows
    to be valid (gpufleet.rules.pipeline.unchanged_sections).

    Why: docs/spec.md, "Design notes", schema.trusting."""
    if not trusted:
        return schema
    return {**schema, "properties": {key: True if key in trusted else sub for key, sub in schema["properties"].items()}}


def resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema a `$ref` to the schema's $defs names, or `schema` itself."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: Mapping[str, Any] = fleet_schema()["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return schema


_NONE = object()


def _fill(value: Any, schema: Mapping[str, Any]) -> None:
    schema = resolve(schema)
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key, sub in props.items():
            # A default beside a $ref belongs to the property; one in the referenced schema to every use of it.
            resolved = resolve(sub)
            default = sub.get("default", resolved.get("default", _NONE))
            sub = resolved
            if key not in value and default is not _NONE:
                value[key] = copy.deepcopy(default)
            if key in value:
                _fill(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in props:
                    _fill(value[key], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _fill(item, schema["items"])


def with_defaults(data: Any) -> Any:
    """A copy of a schema-valid document with every static default filled in (check-jsonschema style)."""
    filled = copy.deepcopy(data)
    _fill(filled, fleet_schema())
    return filled
