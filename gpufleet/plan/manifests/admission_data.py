"""ValidatingAdmissionPolicies authored as package data (gpufleet/data/admission/<name>.yaml): the CEL is written
there, composed from named `variables` as Kubernetes' own examples are; Python fills only the data, named in the
policy as `${name}`, and adds gpufleet's managed-by label.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/plan/manifests/admission_data.py."""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from gpufleet.base import package_data
from gpufleet.spec.names import LABEL_MANAGED_BY

DIRECTORY = "data/admission"
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
CEL_FIELDS = frozenset({"expression", "messageExpression"})


@functools.cache
def _authored(name: str) -> dict[str, Any]:
    doc = yaml.safe_load(package_data.text(f"{DIRECTORY}/{name}.yaml"))
    assert doc["metadata"]["name"] == name, f"{DIRECTORY}/{name}.yaml defines {doc['metadata']['name']}"
    return dict(doc)


def authored(name: str) -> dict[str, Any]:
    """The policy as written, its `${name}` placeholders unfilled (a copy)."""
    return copy.deepcopy(_authored(name))


def named(doc: Any) -> set[str]:
    """The data a policy (or a part of one) names."""
    if isinstance(doc, str):
        return set(PLACEHOLDER.findall(doc))
    if isinstance(doc, Mapping):
        return {n for v in doc.values() for n in named(v)}
    if isinstance(doc, list):
        return {n for v in doc for n in named(v)}
    return set()


def literal(value: Any) -> str:
    """A CEL literal of JSON data: JSON's lists, maps, strings, numbers and booleans are CEL's (map keys sorted)."""
    return json.dumps(value, sort_keys=True)


def _fill(doc: Any, data: Mapping[str, Any], key: str = "") -> Any:
    if isinstance(doc, str):
        if key in CEL_FIELDS:
            return PLACEHOLDER.sub(lambda m: literal(data[m.group(1)]), doc)
        return PLACEHOLDER.sub(lambda m: _text(data[m.group(1)]), doc)
    if isinstance(doc, Mapping):
        return {k: _fill(v, data, k) for k, v in doc.items()}
    if isinstance(doc, list):
        out = []
        for item in doc:
            whole = PLACEHOLDER.fullmatch(item) if isinstance(item, str) else None
            if whole:
                out += list(data[whole.group(1)])
            else:
                out.append(_fill(item, data, key))
        return out
    return doc


def _text(value: Any) -> str:
    assert isinstance(value, str), f"a message is filled with text, not {value!r}"
    return value


def policy(name: str, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The policy `name` with its `${...}` placeholders filled from `data` (datum name -> value)."""
    doc = authored(name)
    given = dict(data or {})
    assert named(doc) == set(given), f"{name}: filled {sorted(given)}, the policy names {sorted(named(doc))}"
    doc = _fill(doc, given)
    doc["metadata"]["labels"] = dict(LABEL_MANAGED_BY)
    return dict(doc)
