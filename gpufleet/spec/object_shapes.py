"""Kubernetes objects checked against the schema the API server reads them with, before anything else reads them.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/spec/object_shapes.py.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from gpufleet.base.errors import Issue, Path
from gpufleet.base.package_data import text
from gpufleet.spec.schema import is_number
from gpufleet.spec.schema_errors import keyword_issues

DATA = "data/kube-schemas"
CRDS = "crds.json"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# The Kubernetes minors with a file of built-in definitions (kubernetes-<minor>.json), oldest first.
MINORS = ("1.32", "1.33", "1.34", "1.35")
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def minor_schemas(kubernetes_version: str) -> str:
    """The minor whose built-in definitions apply to a cluster of `kubernetes_version`: its own, else the newest
    older one (else the oldest there is)."""

    def key(minor: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"[0-9]+", minor)[:2])

    older = [m for m in MINORS if key(m) <= key(kubernetes_version)]
    return older[-1] if older else MINORS[0]


@functools.cache
def _document(minor: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the schema of each kind by "apiVersion kind", every definition they refer to) for one minor."""
    built_in = json.loads(text(f"{DATA}/kubernetes-{minor}.json"))
    crds = json.loads(text(f"{DATA}/{CRDS}"))
    return {**built_in["kinds"], **crds["kinds"]}, built_in["$defs"]


def known(api_version: str, kind: str, kubernetes_version: str) -> bool:
    """Whether there is a schema for objects of `kind` at `api_version`."""
    return f"{api_version} {kind}" in _document(minor_schemas(kubernetes_version))[0]


def _not_null(keyword: Any) -> Any:
    """A keyword's check, passed by a null (the decoders' zero value; see the module docstring)."""

    def check(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
        if instance is not None:
            yield from keyword(validator, value, instance, schema)

    return check


def _format(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    # Only the integer widths: the decoders refuse a number beyond the Go field's type (int32 replicas, int64 ...).
    bounds = _INT_RANGES.get(value)
    if bounds is not None and validator.is_type(instance, "integer") and not bounds[0] <= instance <= bounds[1]:
        yield ValidationError(f"{instance} is beyond the range of an {value} ({bounds[0]} to {bounds[1]})")


def _is_integer(_: object, value: object) -> bool:
    # What reaches the API server is JSON: kubectl sends a YAML 1.0 as 1, and a Go integer field reads it.
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


@functools.cache
def _validator_class() -> Any:
    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": lambda _, v: is_number(v)})
    keywords = {name: _not_null(base.VALIDATORS[name]) for name in ("type", "enum", "anyOf", "oneOf")}
    return jsonschema.validators.extend(base, validators={**keywords, "format": _format}, type_checker=types)  # type: ignore[no-untyped-call]


# The schema of an object of a kind no shipped schema knows at its apiVersion: its metadata is an ObjectMeta still.
_META_ONLY: Mapping[str, Any] = {"properties": {"metadata": {"$ref": f"#/$defs/{OBJECT_META}"}}}


@functools.lru_cache(maxsize=256)
def _validator(minor: str, key: str) -> Any:
    kinds, definitions = _document(minor)
    return _validator_class()({**kinds.get(key, _META_ONLY), "$defs": definitions})


def _errors(obj: Mapping[str, Any], kubernetes_version: str) -> list[ValidationError]:
    key = f"{obj.get('apiVersion')} {obj.get('kind')}"
    return list(_validator(minor_schemas(kubernetes_version), key).iter_errors(obj))


def conforms(obj: Mapping[str, Any], kubernetes_version: str) -> bool:
    """Whether `obj` has the shape its schema gives (its metadata's only, where there is no schema for its kind)."""
    return not _errors(obj, kubernetes_version)


def as_read(obj: Mapping[str, Any], kubernetes_version: str) -> dict[str, Any]:
    """An object that conforms, as the API server reads it: a field or map entry that is null is absent, a null list
    item the zero value of the item's type ({}, "", 0, false, []): what Go's decoders make of a JSON null
    (encoding/json: "unmarshals null into ... by setting it to nil", and leaves a struct or string at its zero
    value).

    Why: docs/explain-model.md, "Design notes", object_shapes.as_read."""
    kinds, definitions = _document(minor_schemas(kubernetes_version))
    read: dict[str, Any] = _read(obj, kinds.get(f"{obj.get('apiVersion')} {obj.get('kind')}", _META_ONLY), definitions)
    return read


def _resolved(schema: Any, definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    while isinstance(schema, Mapping) and "$ref" in schema:
        schema = definitions[str(schema["$ref"]).rsplit("/", 1)[-1]]
    return schema if isinstance(schema, Mapping) else {}


_ZERO: Mapping[str, Any] = {"object": {}, "array": [], "string": "", "integer": 0, "number": 0, "boolean": False}


def _read(value: Any, schema: Any, definitions: Mapping[str, Any]) -> Any:
    schema = _resolved(schema, definitions)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {
            k: _read(v, properties.get(k, extra if isinstance(extra, Mapping) else {}), definitions)
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):
        items = _resolved(schema.get("items", {}), definitions)
        kind = items.get("type") or ("object" if "properties" in items else None)
        if kind is None:  # a list the schema says nothing of (under a free-form field): no item's type to zero
            return [_read(v, items, definitions) for v in value if v is not None]
        zero = _ZERO.get(kind if isinstance(kind, str) else kind[0], "")
        return [_read(v, items, definitions) if v is not None else type(zero)() for v in value]
    return value


def issues(obj: Mapping[str, Any], kubernetes_version: str, plain: Mapping[Path, str]) -> list[Issue]:
    """Every way `obj` does not have the shape its schema gives, as Issues (one per value: a value of the wrong type
    is not also reported for the keywords beside its type).

    Why: docs/explain-model.md, "Design notes", object_shapes.issues."""
    errors = _errors(obj, kubernetes_version)
    typed = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    out: list[Issue] = []
    for error in errors:
        path = tuple(error.absolute_path)
        if path in typed and error.validator != "type":
            continue
        out.extend(_issues(error, plain))
    return out


def _issues(error: Any, plain: Mapping[Path, str]) -> Iterator[Issue]:
    path: Path = tuple(error.absolute_path)
    if error.validator == "required":
        missing = str(error.message).split("'")[1]
        yield Issue(path=path, at_key=True, message=f'missing required field "{missing}"')
    elif error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        yield Issue(path=path, message=f"{json.dumps(error.instance, default=str)[:60]} is not one of: {allowed}")
    elif error.validator == "format":
        yield Issue(path=path, message=str(error.message))
    elif error.validator in ("anyOf", "oneOf"):
        yield Issue(
            path=path, message=f"{json.dumps(error.instance, default=str)[:60]} has none of the shapes allowed here"
        )
    elif error.validator == "type" and _of_objects(error.schema):
        # the spec's hint (`[x]`: a list of one) would be a list of the wrong items here
        yield from (replace(i, hint="") for i in keyword_issues(error, plain))
    else:
        yield from keyword_issues(error, plain)


def _of_objects(schema: Mapping[str, Any]) -> bool:
    items = schema.get("items")
    return isinstance(items, Mapping) and ("$ref" in items or items.get("type") == "object")
