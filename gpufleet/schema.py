"""JSON Schema (2020-12) check of the parsed spec, turned into positioned Issues, and static default filling.

The schema (`schemas/fleet.schema.json`) holds structure and static defaults; computed defaults live in
`gpufleet.defaults`. Defaults are filled only after the document validates, so an error never points at a
value the user did not write.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path as FsPath
from typing import Any, Iterator, Mapping

import jsonschema
from jsonschema.exceptions import ValidationError

from gpufleet.errors import Issue, Path, did_you_mean
from gpufleet.load import describe_plain

SCHEMA_PATH = FsPath(__file__).resolve().parent.parent / "schemas" / "fleet.schema.json"

# Human words for the string formats the schema enforces with a pattern, keyed by field name.
_FORMATS: Mapping[str, str] = {
    "name": "a DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)",
    "namespace": "a DNS-1123 label",
    "cohort": "a DNS-1123 label",
    "nodeGroup": "a DNS-1123 label",
    "zone": 'an availability zone ID such as "use1-az4" (zone IDs, not names like "us-east-1a", are the same in every account)',
    "releaseVersion": 'an EKS AMI release such as "1.33.4-20260724"',
    "reservationId": 'a capacity reservation ID such as "cr-0123456789abcdef0"',
    "kubernetesVersion": 'a quoted minor version such as "1.33"',
    "region": 'an AWS region such as "us-east-1"',
    "vpcId": 'a VPC ID such as "vpc-0a1b2c3d"',
    "bucket": "an S3 bucket name (3-63 lowercase letters, digits, '.' and '-')",
    "profile": 'a MIG profile such as "1g.10gb"',
    "key": 'a taint key such as "example.com/dedicated"',
}


@functools.cache
def fleet_schema() -> dict[str, Any]:
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(fleet_schema())


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _issues_for(error: ValidationError, plain: Mapping[Path, str]) -> Iterator[Issue]:
    path: Path = tuple(error.absolute_path)
    value = error.instance
    validator = error.validator
    field = next((p for p in reversed(path) if isinstance(p, str)), "")
    if validator == "additionalProperties" and isinstance(value, dict):
        allowed = list(error.schema.get("properties", {}))
        for key in value:
            if key not in allowed:
                yield Issue(path=path + (key,), at_key=True, message=f'unknown field "{key}"', hint=did_you_mean(key, allowed))
    elif validator == "required":
        missing = str(error.message).split("'")[1]
        yield Issue(path=path, message=f'missing required field "{missing}"')
    elif validator == "type":
        expected = error.validator_value
        expected_list = expected if isinstance(expected, list) else [expected]
        if "string" in expected_list and path in plain:
            raw = plain[path]
            yield Issue(path=path, message=f"{describe_plain(raw, value)}, but a string is expected", hint=f'quote it: "{raw}"')
        else:
            want = " or ".join("mapping" if t == "object" else "list" if t == "array" else t for t in expected_list)
            yield Issue(path=path, message=f"expected {want}, got {_type_name(value)} {json.dumps(value, default=str)}")
    elif validator == "enum":
        allowed = [str(v) for v in error.validator_value]
        hint = did_you_mean(value, allowed)
        if isinstance(value, str):
            squashed = {a.replace("-", "").lower(): a for a in allowed}
            spelled = squashed.get(value.replace("_", "").replace("-", "").lower())
            if spelled and "_" in value:
                yield Issue(path=path, message=f'"{value}" is the EKS API spelling; the spec uses Kubernetes spelling "{spelled}"', hint=f'write "{spelled}" (gpufleet converts it for the EKS API)')
                return
        if path in plain:
            yield Issue(path=path, message=f"{describe_plain(plain[path], value)}, not one of: {', '.join(allowed)}", hint=hint)
            return
        yield Issue(path=path, message=f"{json.dumps(value, default=str)} is not one of: {', '.join(allowed)}", hint=hint)
    elif validator == "pattern":
        what = _FORMATS.get(field, f"a value matching {error.validator_value}")
        yield Issue(path=path, message=f'"{value}" is not {what}')
    elif validator == "const":
        yield Issue(path=path, message=f"{json.dumps(value, default=str)} must be {json.dumps(error.validator_value)}")
    elif validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        word = {"minimum": "at least", "exclusiveMinimum": "greater than", "maximum": "at most", "exclusiveMaximum": "less than"}[str(validator)]
        yield Issue(path=path, message=f"{value} must be {word} {error.validator_value}")
    elif validator == "minItems":
        yield Issue(path=path, message=f"needs at least {error.validator_value} item(s), got {len(value)}")
    elif validator == "uniqueItems":
        yield Issue(path=path, message="has duplicate entries")
    elif validator == "maxLength":
        yield Issue(path=path, message=f'"{value}" is longer than {error.validator_value} characters')
    elif validator == "minLength":
        yield Issue(path=path, message="must not be empty")
    elif validator == "minProperties":
        yield Issue(path=path, message=f"needs at least {error.validator_value} entry")
    elif validator == "propertyNames":
        yield Issue(path=path, message=f"has a key that is not {_FORMATS['name']}: {error.message}")
    else:
        yield Issue(path=path, message=str(error.message))


def schema_issues(data: Any, plain: Mapping[Path, str]) -> list[Issue]:
    """Every schema violation of `data` as Issues (positions are resolved later from the source)."""
    issues: list[Issue] = []
    for error in _validator().iter_errors(data):
        issues.extend(_issues_for(error, plain))
    return issues


def _resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: Mapping[str, Any] = fleet_schema()["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return schema


def _fill(value: Any, schema: Mapping[str, Any]) -> None:
    schema = _resolve(schema)
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key, sub in props.items():
            sub = _resolve(sub)
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
