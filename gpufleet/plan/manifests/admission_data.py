"""ValidatingAdmissionPolicies authored as package data (gpufleet/data/admission/<name>.yaml): the CEL is written
there, composed from named `variables` as Kubernetes' own examples are; Python fills only the variables whose
expression is the placeholder FLEET, each with a CEL literal of the fleet's data, and adds gpufleet's managed-by
label. A policy that names a datum it is not given, or is given one it does not name, is a programming error."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from typing import Any

import yaml

from gpufleet.base import package_data
from gpufleet.spec.names import LABEL_MANAGED_BY

DIRECTORY = "data/admission"
PLACEHOLDER = "FLEET"


@functools.cache
def _authored(name: str) -> dict[str, Any]:
    doc = yaml.safe_load(package_data.text(f"{DIRECTORY}/{name}.yaml"))
    assert doc["metadata"]["name"] == name, f"{DIRECTORY}/{name}.yaml defines {doc['metadata']['name']}"
    return dict(doc)


def authored(name: str) -> dict[str, Any]:
    """The policy as written, its FLEET placeholders unfilled (a copy)."""
    return copy.deepcopy(_authored(name))


def literal(value: Any) -> str:
    """A CEL literal of JSON data: JSON's lists, maps, strings, numbers and booleans are CEL's."""
    return json.dumps(value, sort_keys=True)


def policy(name: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The policy `name` with its FLEET variables set to `data` (variable name -> value)."""
    doc = authored(name)
    placeholders = [v["name"] for v in doc["spec"].get("variables", []) if v["expression"] == PLACEHOLDER]
    assert sorted(placeholders) == sorted(data), f"{name}: filled {sorted(data)}, the policy names {placeholders}"
    for v in doc["spec"].get("variables", []):
        if v["expression"] == PLACEHOLDER:
            v["expression"] = literal(data[v["name"]])
    doc["metadata"]["labels"] = dict(LABEL_MANAGED_BY)
    return doc
