"""The spec's JSON Schema (2020-12): the shipped document, whether a spec conforms to it, static default filling.

The schema (`schemas/fleet.schema.json`) holds structure and static defaults; computed defaults live in
`gpufleet.spec.defaults`. Defaults are filled only after the document validates, so an error never points at a
value the user did not write.

Whether a spec conforms is decided here, without jsonschema (`conforms`), for the keywords the schema uses: importing
jsonschema takes longer than `gpufleet validate` takes without it, and a valid spec needs only a yes (issue 16 item 4).
A spec that does not conform, or a keyword `conforms` does not know, goes to jsonschema, which says what is wrong
(gpufleet.spec.schema_errors). `conforms` only ever answers yes where jsonschema finds no error
(tests/unit/test_schema_conforms.py holds the two equal over every spec of the repository and each environment,
tests/properties/test_schema_conforms.py over damaged ones).
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
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
    """`pattern` with ECMA-262 semantics for `$`, the regex dialect of JSON Schema: the end of the string.

    Python's `$` also matches before a final newline, so "vision\\n" would pass ^[a-z0-9]...$ and become a
    namespace, a file name and an AWS tag; `\\Z` is the end only. Escapes and character classes are kept.
    """
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
    return re.compile("".join(out))


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
    to be valid (gpufleet.rules.pipeline.unchanged_sections). A section's schema sees only its own value, so the keywords
    of the whole document (required, additionalProperties) still apply."""
    if not trusted:
        return schema
    return {**schema, "properties": {key: True if key in trusted else sub for key, sub in schema["properties"].items()}}


# What jsonschema's 2020-12 validator, as gpufleet.spec.schema_errors configures it, does with each keyword the schema
# uses (jsonschema/_keywords.py): (the value, the keyword's value, the schema holding it, the root) -> no error.
# A keyword applies only to values of its type (minimum to numbers, required to mappings, ...). Where an answer
# would need more of jsonschema's rules (equality across types, say), the check says no, and jsonschema decides.
_TYPES: Mapping[str, Callable[[object], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": is_integer,
    "number": is_number,
}
_SCALARS = (str, int, float, bool, type(None))


def _type(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    return any(name in _TYPES and _TYPES[name](value) for name in names)


def _same(value: Any, expected: Any) -> bool:
    """Equal, and of the same scalar type (jsonschema also finds 1 equal to 1.0; for those it decides)."""
    return type(value) is type(expected) and isinstance(value, _SCALARS) and value == expected


def _enum(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    return any(_same(value, each) for each in expected)


def _const(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    return _same(value, expected)


def _pattern(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    return not isinstance(value, str) or whole_string(expected).search(value) is not None


def _bounded(
    applies: Callable[[object], bool], within: Callable[[Any, Any], bool]
) -> Callable[[Any, Any, Mapping[str, Any], Mapping[str, Any]], bool]:
    return lambda value, expected, schema, root: not applies(value) or within(value, expected)


def _properties(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    return not isinstance(value, dict) or all(
        _conforms(value[key], sub, root) for key, sub in expected.items() if key in value
    )


def _additional(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if not isinstance(value, dict):
        return True
    if "patternProperties" in schema:
        return False
    extras = [key for key in value if key not in schema.get("properties", {})]
    if isinstance(expected, dict):
        return all(_conforms(value[key], expected, root) for key in extras)
    return bool(expected) or not extras


def _property_names(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    return not isinstance(value, dict) or all(_conforms(key, expected, root) for key in value)


def _items(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if not isinstance(value, list):
        return True
    return "prefixItems" not in schema and all(_conforms(item, expected, root) for item in value)


def _text_only(item: object) -> bool:
    """A string, or a mapping of strings to strings: where Python's == is jsonschema's equality."""
    return isinstance(item, str) or (
        isinstance(item, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in item.items())
    )


def _unique(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    if not expected or not isinstance(value, list):
        return True
    if not all(_text_only(item) for item in value):
        return False
    keys = [frozenset(item.items()) if isinstance(item, dict) else item for item in value]
    return len(set(keys)) == len(keys)


def _ref(value: Any, expected: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    name = expected.removeprefix("#/$defs/") if isinstance(expected, str) else ""
    target = root.get("$defs", {}).get(name) if name != expected and re.fullmatch(r"[A-Za-z0-9_-]+", name) else None
    return target is not None and _conforms(value, target, root)


_KEYWORDS: Mapping[str, Callable[[Any, Any, Mapping[str, Any], Mapping[str, Any]], bool]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "pattern": _pattern,
    "minLength": _bounded(lambda v: isinstance(v, str), lambda v, n: len(v) >= n),
    "maxLength": _bounded(lambda v: isinstance(v, str), lambda v, n: len(v) <= n),
    "minimum": _bounded(is_number, lambda v, n: v >= n),
    "maximum": _bounded(is_number, lambda v, n: v <= n),
    "exclusiveMinimum": _bounded(is_number, lambda v, n: v > n),
    "exclusiveMaximum": _bounded(is_number, lambda v, n: v < n),
    "required": _bounded(lambda v: isinstance(v, dict), lambda v, names: all(name in v for name in names)),
    "minProperties": _bounded(lambda v: isinstance(v, dict), lambda v, n: len(v) >= n),
    "maxProperties": _bounded(lambda v: isinstance(v, dict), lambda v, n: len(v) <= n),
    "properties": _properties,
    "additionalProperties": _additional,
    "propertyNames": _property_names,
    "items": _items,
    "minItems": _bounded(lambda v: isinstance(v, list), lambda v, n: len(v) >= n),
    "maxItems": _bounded(lambda v: isinstance(v, list), lambda v, n: len(v) <= n),
    "uniqueItems": _unique,
    "$ref": _ref,
}
# Keywords that assert nothing. $id and $schema only at the root: elsewhere they would change how $ref resolves.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "$defs", "deprecated", "readOnly", "writeOnly"}
)
_ROOT_ONLY = frozenset({"$id", "$schema"})


def _conforms(value: Any, schema: Any, root: Mapping[str, Any]) -> bool:
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict):
        return False
    for keyword, expected in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is not None:
            if not check(value, expected, schema, root):
                return False
        elif keyword not in _ANNOTATIONS and not (keyword in _ROOT_ONLY and schema is root):
            return False  # a keyword this check does not implement: jsonschema decides
    return True


def conforms(data: Any, trusted: frozenset[str] = frozenset()) -> bool:
    """True only if jsonschema finds no error in `data` (see the module's docstring); `trusted` as in `trusting`."""
    root = trusting(fleet_schema(), trusted)
    return _conforms(data, root, root)


def resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema a `$ref` to the schema's $defs names, or `schema` itself."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: Mapping[str, Any] = fleet_schema()["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return schema


def _fill(value: Any, schema: Mapping[str, Any]) -> None:
    schema = resolve(schema)
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key, sub in props.items():
            sub = resolve(sub)
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
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
