"""The model's YAML spelling (gpufleet.spec.fields) against schemas/fleet.schema.json: every schema property is read
by a dataclass field, every field reads a schema property, and a field's type is the property's, with the named
exceptions below. A new spec field is its schema property and its dataclass field; this test says which is missing."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, is_dataclass
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

from gpufleet.spec import fleet as spec
from gpufleet.spec.fields import at, build, camel, derived, keyed, model_fields, rest

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "fleet.schema.json").read_text())

# Schema properties no model field reads, each with where it goes instead.
NOT_IN_THE_MODEL = {
    "apiVersion": "the document's type, which the schema checks",
    "kind": "the document's type, which the schema checks",
    "clusters": "gpufleet.spec.clusters projects the spec onto one per cluster first; its entries are Members",
    "admission.multiKueue": "MultiKueue.step_size, set by gpufleet.spec.clusters.fleet_of",
    "environments.*.overrides": "merged into the spec by gpufleet.spec.environments before the model is built",
    "environments.*.quotaScaling": "applied by gpufleet.spec.environments while it merges the overrides",
    "clusters[].network": "projected onto cluster.network by gpufleet.spec.clusters.project",
}


def _resolve(node: Any) -> Any:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _property(node: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        node = _resolve(node).get("properties", {}).get(key)
        if node is None:
            return None
    return _resolve(node)


def _types(node: Any) -> set[str]:
    declared = node.get("type")
    if declared is None and "const" in node:
        declared = type(node["const"]).__name__
    return {declared} if isinstance(declared, str) else set(declared or ())


def _kind(tp: Any) -> str:
    """The JSON type a field's (resolved, non-None) type reads."""
    if get_origin(tp) is tuple:
        return "array"
    if get_origin(tp) is Mapping or (isinstance(tp, type) and is_dataclass(tp)) or tp is Any:
        return "object"
    if get_origin(tp) is Literal or (isinstance(tp, type) and issubclass(tp, Enum)) or tp is str:
        return "string"
    return {float: "number", int: "integer", bool: "boolean"}.get(tp, repr(tp))


_SCALAR = {"number": {"number", "float", "int"}, "integer": {"integer", "int"}, "boolean": {"boolean", "bool"}}


def _check(cls: type, node: Any, where: str) -> Iterator[str]:
    """Problems between `cls` and the schema object `node` (at schema path `where`)."""
    node = _resolve(node)
    read: set[tuple[str, ...]] = set()
    has_rest = False
    for f in model_fields(cls):
        if f.kind == "derived":
            read |= {tuple(k.split(".")) for k in f.spelling.reads}
            continue
        if f.kind == "rest":
            has_rest = True
            continue
        at_path = f"{where}{'.' if where else ''}{'.'.join(f.path)}"
        sub = _property(node, f.path)
        if sub is None:
            yield f"{cls.__name__}.{f.name} reads {at_path}, which the schema does not have"
            continue
        read.add(f.path)
        if f.spelling.read is not None:
            continue  # read by its own function, from whatever the schema has there
        tp, kind = f.type, _kind(f.type)
        if f.kind == "keyed":
            (item,) = get_args(tp)[:1]
            yield from _check(item, sub["additionalProperties"], f"{at_path}.*")
            continue
        if kind not in _types(sub) and not _types(sub) <= _SCALAR.get(kind, set()):
            yield f"{cls.__name__}.{f.name} is {kind}, {at_path} is {sorted(_types(sub))}"
            continue
        if get_origin(tp) is tuple:
            (item, *_) = get_args(tp)
            if is_dataclass(item):
                yield from _check(item, sub["items"], f"{at_path}[]")
        elif get_origin(tp) is Mapping:
            _, item = get_args(tp)
            if is_dataclass(item):
                yield from _check(item, sub["additionalProperties"], f"{at_path}.*")
        elif isinstance(tp, type) and is_dataclass(tp):
            yield from _check(tp, sub, at_path)
    if has_rest:
        return
    for path in _unread(node, (), read):
        at_path = f"{where}{'.' if where else ''}{'.'.join(path)}"
        if at_path not in NOT_IN_THE_MODEL:
            yield f"{at_path} is read by no field of {cls.__name__}"


def _unread(node: Any, prefix: tuple[str, ...], read: set[tuple[str, ...]]) -> Iterator[tuple[str, ...]]:
    for key, sub in _resolve(node).get("properties", {}).items():
        path = (*prefix, key)
        if path in read:
            continue
        if any(r[: len(path)] == path for r in read):
            yield from _unread(sub, path, read)  # read key by key (a dotted path of a field)
        else:
            yield path


def test_every_schema_property_has_a_field_and_every_field_a_property() -> None:
    problems = list(_check(spec.Fleet, SCHEMA, ""))
    problems += _check(spec.Member, SCHEMA["properties"]["clusters"]["items"], "clusters[]")
    assert problems == []


def _at(where: str) -> Any:
    """The schema node at a path of NOT_IN_THE_MODEL (`[]`: a list's items, `*`: an object's entries)."""
    node = SCHEMA
    for step in where.replace("[]", ".[]").split("."):
        node = _resolve(node)
        if step == "[]":
            node = node["items"]
        elif step == "*":
            node = node["additionalProperties"]
        else:
            node = node["properties"][step]
    return node


@pytest.mark.parametrize("where", sorted(NOT_IN_THE_MODEL))
def test_every_exception_is_in_the_schema(where: str) -> None:
    assert _at(where)


def _reachable(cls: type, seen: set[type]) -> None:
    if cls in seen:
        return
    seen.add(cls)
    for f in model_fields(cls):
        for tp in (f.type, *get_args(f.type)):
            if isinstance(tp, type) and is_dataclass(tp) and f.kind != "derived":
                _reachable(tp, seen)


def test_every_model_dataclass_is_spelled() -> None:
    """Every dataclass of gpufleet.spec.fleet is reached from Fleet (or is a Member of clusters[]), so the schema test
    above sees its fields; MultiKueue alone is made by gpufleet.spec.clusters, not read."""
    seen: set[type] = set()
    _reachable(spec.Fleet, seen)
    _reachable(spec.Member, seen)
    declared = {
        v for v in vars(spec).values() if isinstance(v, type) and is_dataclass(v) and v.__module__ == spec.__name__
    }
    assert declared - seen == {spec.MultiKueue}


# The mapping itself, on a model of its own.


class Colour(StrEnum):
    RED = "Red"


@dataclass(frozen=True, slots=True, kw_only=True)
class Leaf:
    name: str = field(metadata=derived())
    size: float = field(metadata=at("shape.sizeGB"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Root:
    max_size: int
    colour: Colour
    ratio: float
    count: float = field(metadata=at(exact=True))
    note: str | None
    tags: tuple[str, ...] = field(metadata=at(missing=()))
    leaves: tuple[Leaf, ...] = field(metadata=keyed())
    by_name: Mapping[str, int]
    doubled: int = field(metadata=at("maxSize", read=lambda v: 2 * v))
    total: int = field(metadata=derived(lambda data, given: data["maxSize"] + given["extra"]))
    others: Mapping[str, str] = field(metadata=rest())


def test_build_reads_each_field_as_its_metadata_and_type_say() -> None:
    data = {
        "maxSize": 3,
        "colour": "Red",
        "ratio": 1,
        "count": 2,
        "leaves": {"b": {"shape": {"sizeGB": 5}}, "a": {"shape": {"sizeGB": 1.5}}},
        "byName": {"z": 1, "y": 2},
        "digest": "d",
        "other": "o",
    }
    root = build(Root, data, {"extra": 10})
    assert repr(root) == repr(
        Root(
            max_size=3,
            colour=Colour.RED,
            ratio=1.0,
            count=2,
            note=None,
            tags=(),
            leaves=(Leaf(name="a", size=1.5), Leaf(name="b", size=5.0)),
            by_name={"y": 2, "z": 1},
            doubled=6,
            total=13,
            others={"digest": "d", "other": "o"},
        )
    )
    assert list(root.by_name) == ["y", "z"]


def test_build_refuses_data_without_a_required_key() -> None:
    with pytest.raises(KeyError, match="shape.sizeGB"):
        build(Leaf, {"shape": {}}, name="a")


@pytest.mark.parametrize(
    ("name", "key"),
    [("min_size", "minSize"), ("pods_ready_timeout_seconds", "podsReadyTimeoutSeconds"), ("s3", "s3")],
)
def test_a_field_reads_its_name_in_camel_case(name: str, key: str) -> None:
    assert camel(name) == key


def test_the_model_types_resolve() -> None:
    """Every annotation of the model resolves (fields.model_fields reads them at run time)."""
    for cls in (spec.Fleet, spec.NodeGroup, spec.Checkpoints, spec.Member):
        assert typing.get_type_hints(cls)
