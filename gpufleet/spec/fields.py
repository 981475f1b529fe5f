"""The fleet model's YAML spelling, read from its dataclasses' fields: a new spec field is its schema property and
its dataclass field, and `build` maps one onto the other.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/spec/fields.py.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from enum import Enum
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

_ABSENT: Any = object()
T = TypeVar("T")

Reader = Callable[[Any], Any]
Derivation = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


def camel(name: str) -> str:
    """The default YAML key of a field: `pods_ready_timeout_seconds` -> `podsReadyTimeoutSeconds`."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def at(key: str | None = None, *, missing: Any = _ABSENT, read: Reader | None = None, exact: bool = False) -> Any:
    """Field metadata: the field reads `key` (a dotted path; None: its name in camelCase).

    Why: docs/architecture.md, "Design notes", fields.at."""
    return {"fields": _Spelling(kind="key", key=key, missing=missing, read=read, exact=exact)}


def rest() -> Any:
    """Field metadata: a Mapping of the keys no other field of the object reads (images: requireDigests and one
    digest per image key)."""
    return {"fields": _Spelling(kind="rest")}


def keyed(key: str | None = None, *, by: str = "name") -> Any:
    """Field metadata: a tuple of dataclasses from an object of named entries (environments.<name>), sorted by name;
    each entry's name goes to its field `by`."""
    return {"fields": _Spelling(kind="keyed", key=key, by=by)}


def derived(make: Derivation | None = None, *, reads: tuple[str, ...] = ()) -> Any:
    """Field metadata: not a YAML key.

    Why: docs/architecture.md, "Design notes", fields.derived."""
    return {"fields": _Spelling(kind="derived", make=make, reads=reads)}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Spelling:
    kind: Literal["key", "rest", "keyed", "derived"]
    key: str | None = None
    missing: Any = _ABSENT
    read: Reader | None = None
    exact: bool = False
    by: str = "name"
    make: Derivation | None = None
    reads: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One field of a dataclass of the model, as the YAML spells it."""

    name: str
    kind: Literal["key", "rest", "keyed", "derived"]
    path: tuple[str, ...]  # the YAML keys, outermost first; () for rest and derived
    type: Any  # the resolved annotation
    optional: bool  # typed `X | None`
    spelling: _Spelling


def _spelling(f: Any) -> _Spelling:
    spelling = f.metadata.get("fields")
    return spelling if isinstance(spelling, _Spelling) else _Spelling(kind="key")


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(args) < len(get_args(tp)):
            return args[0], True
    return tp, False


@functools.cache
def model_fields(cls: type) -> tuple[Field, ...]:
    """The fields of a model dataclass with their YAML spelling."""
    hints = get_type_hints(cls)
    out = []
    for f in fields(cls):
        spelling = _spelling(f)
        tp, optional = _unwrap_optional(hints[f.name])
        path: tuple[str, ...] = ()
        if spelling.kind in ("key", "keyed"):
            path = tuple((spelling.key or camel(f.name)).split("."))
        out.append(Field(name=f.name, kind=spelling.kind, path=path, type=tp, optional=optional, spelling=spelling))
    return tuple(out)


def _lookup(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = data.get(path[0], _ABSENT)
    for key in path[1:]:
        if value is _ABSENT or not (type(value) is dict or isinstance(value, Mapping)):
            return _ABSENT
        value = value.get(key, _ABSENT)
    return value


Converter = Callable[[Any, Mapping[str, Any]], Any]  # (a present, non-null value, given) -> the field's value


def _same(value: Any, _: Mapping[str, Any]) -> Any:
    return value


def _float(value: Any, _: Mapping[str, Any]) -> float:
    return float(value)


def _converter(tp: Any, exact: bool) -> Converter:
    """How a value of the YAML becomes a value of type `tp`."""
    origin = get_origin(tp)
    if origin is tuple:
        item = _converter(get_args(tp)[0], exact)
        return lambda value, given: tuple(item(v, given) for v in value)
    if origin is Mapping:
        item = _converter(get_args(tp)[1], exact)
        return lambda value, given: {k: item(v, given) for k, v in sorted(value.items())}
    if isinstance(tp, type) and is_dataclass(tp):
        cls = tp
        return lambda value, given: build(cls, value, given)
    if tp is float and not exact:
        return _float
    if isinstance(tp, type) and issubclass(tp, Enum):
        enum = tp
        return lambda value, _: enum(value)
    return _same


_Reading = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]  # (the object's data, given) -> value or _ABSENT


def _reading(f: Field, read_keys: frozenset[str]) -> _Reading:
    """How `build` reads field `f` from the object's data and `given` (_ABSENT: leave it to its default)."""
    s, path = f.spelling, f.path
    if f.kind == "derived":
        make = s.make
        return (lambda data, given: _ABSENT) if make is None else make
    if f.kind == "rest":
        convert = _converter(f.type, False)
        return lambda data, given: convert({k: v for k, v in data.items() if k not in read_keys}, given)
    if f.kind == "keyed":
        item, by = get_args(f.type)[0], s.by
        return lambda data, given: tuple(
            build(item, entry, given, **{by: key}) for key, entry in sorted(_lookup(data, path).items())
        )
    read, missing, optional = s.read, s.missing, f.optional
    convert = _converter(f.type, s.exact)
    if read is not None:
        return lambda data, given: read(None if (value := _lookup(data, path)) is _ABSENT else value)

    def absent() -> Any:
        if optional:
            return None
        if missing is not _ABSENT:
            return missing
        raise KeyError(".".join(path))

    if len(path) == 1 and convert is _same:  # most fields: one key, the value as it is
        key = path[0]

        def read_plain(data: Mapping[str, Any], given: Mapping[str, Any]) -> Any:
            value = data.get(key)
            return absent() if value is None else value

        return read_plain

    def read_key(data: Mapping[str, Any], given: Mapping[str, Any]) -> Any:
        value = _lookup(data, path)
        return absent() if value is _ABSENT or value is None else convert(value, given)

    return read_key


_READINGS: dict[type, tuple[tuple[str, _Reading], ...]] = {}


def _readings(cls: type) -> tuple[tuple[str, _Reading], ...]:
    """Each field's name and reading, those that read keys first (a `rest` field takes what they leave)."""
    if cls not in _READINGS:
        all_fields = model_fields(cls)
        read_keys = frozenset(f.path[0] for f in all_fields if f.path)
        ordered = sorted(all_fields, key=lambda f: f.kind == "rest")
        _READINGS[cls] = tuple((f.name, _reading(f, read_keys)) for f in ordered)
    return _READINGS[cls]


def build(cls: type[T], data: Mapping[str, Any], given: Mapping[str, Any] | None = None, **set_: Any) -> T:
    """The `cls` of one YAML object (schema-valid, defaults filled). `given` reaches every derived field below;
    `set_` sets fields of this object that the YAML does not hold."""
    given = given or {}
    values: dict[str, Any] = set_
    for name, reading in _readings(cls):
        if name not in values and (value := reading(data, given)) is not _ABSENT:
            values[name] = value
    return cls(**values)
