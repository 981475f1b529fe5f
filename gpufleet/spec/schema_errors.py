"""Why a spec does not conform to the schema: jsonschema's errors, turned into positioned Issues with hints.

Why, with sources: docs/commands.md, "Design notes", gpufleet/spec/schema_errors.py.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from gpufleet.base.errors import Issue, Path, closest, did_you_mean, suggest
from gpufleet.spec.load import describe_plain
from gpufleet.spec.schema import fleet_schema, is_integer, is_number, resolve, trusting, whole_string

_LABEL_VALUE = (
    "a Kubernetes label value (at most 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric)"
)


# Human words for the string formats the schema enforces with a pattern, keyed by field name (for list items:
# the list's name). Where the value sits decides the words, not the regular expression.
_FORMATS: Mapping[str, str] = {
    "name": "a DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)",
    "namespace": "a DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)",
    "cohort": "a DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)",
    "nodeGroup": "a node group name (a DNS-1123 label)",
    "images": "an imageSets name (a DNS-1123 label)",
    "existingNamespace": "a DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)",
    "zone": (
        'an availability zone ID such as "use1-az4" (zone IDs, not names like "us-east-1a", are the same in every'
        " account)"
    ),
    "releaseVersion": 'an EKS AMI release such as "1.33.13-20260714"',
    "reservationId": 'a capacity reservation ID such as "cr-0123456789abcdef0"',
    "resourceGroupArn": (
        'a Capacity Reservation group ARN such as "arn:aws:resource-groups:us-east-1:111122223333:group/training-odcrs"'
    ),
    "kubernetesVersion": 'a quoted minor version such as "1.33"',
    "region": 'an AWS region such as "us-east-1"',
    "vpcId": 'a VPC ID such as "vpc-0a1b2c3d"',
    "subnetIds": 'a subnet ID such as "subnet-0a1b2c3d"',
    "principalArn": 'an IAM role or user ARN such as "arn:aws:iam::111122223333:role/ml-platform"',
    "cidrs": 'an IPv4 CIDR such as "203.0.113.0/24"',
    "acknowledgeOpenToInternet": (
        "a reason of 10 to 256 letters, digits, spaces and _ . : / = + @ - (it becomes an AWS tag value)"
    ),
    "bucket": "an S3 bucket name (3-63 lowercase letters, digits, '.' and '-')",
    # fsxLustre.dataRepositories[].prefix: FSx links the bucket's keys under it, so it is whole path segments.
    "prefix": (
        "a key prefix in the bucket: path segments of letters, digits and ! _ . * ' ( ) -, each ending in /"
        ' (e.g. "datasets/"), or "" for the whole bucket'
    ),
    "profile": 'a MIG profile such as "1g.10gb"',
    "key": 'a taint key such as "example.com/dedicated"',
    "value": _LABEL_VALUE,
    "image": 'an image reference such as "nvcr.io/nvidia/pytorch:25.08-py3" (no spaces or control characters)',
    "instanceType": 'an EC2 instance type such as "p5.48xlarge"',
    "chart": 'a chart version such as "0.19.2" (letters, digits and . _ + -)',
    "tag": 'an image tag such as "v4.2.2" (letters, digits and . _ + -)',
    "version": 'a driver version such as "595.91.07" (letters, digits and . _ + -)',
    "toolkitVersion": 'a toolkit version such as "v1.20.0" (letters, digits and . _ + -)',
    "interface": 'a network device name such as "ibp24s0"',
    "socketInterface": 'a network device name such as "eth0"',
    "vpcCni": 'an EKS add-on version such as "v1.20.4-eksbuild.1"',
    "coreDns": 'an EKS add-on version such as "v1.12.4-eksbuild.1"',
    "kubeProxy": 'an EKS add-on version such as "v1.33.5-eksbuild.2"',
    "nodeMonitoringAgent": 'an EKS add-on version such as "v1.7.0-eksbuild.1"',
    "podIdentityAgent": 'an EKS add-on version such as "v1.3.8-eksbuild.2"',
}
# Fields that moved: an unknown field with one of these names says where it went.
_MOVED: Mapping[str, str] = {
    "publicAccessCidrs": (
        "publicAccessCidrs moved: write publicEndpoint: {cidrs: [...]} (an endpoint open to 0.0.0.0/0 also needs"
        " publicEndpoint.acknowledgeOpenToInternet)"
    )
}
# Formats that depend on more than the field name.
_PATH_FORMATS: Mapping[Path, str] = {
    (
        "cluster",
        "name",
    ): "an EKS cluster name (letters, digits, '-' and '_', starting with a letter or digit, at most 100)"
}


def _format_at(path: Path) -> str | None:
    """Formats that depend on where a list item or a map value sits."""
    if len(path) >= 2 and path[-2] == "labels":
        return _LABEL_VALUE
    if path[-2:] == ("reservation", "id"):
        return 'an On-Demand Capacity Reservation ID: "cr-" and 17 hex digits, such as "cr-0123456789abcdef0"'
    if len(path) == 2 and path[0] == "images":
        return "an image reference with its digest, name:tag@sha256:<64 lowercase hex digits>"
    if len(path) == 4 and path[0] == "imageSets" and path[2] == "images":
        return 'an image reference such as "nvcr.io/nvidia/pytorch:25.08-py3" (no spaces or control characters)'
    return None


_PATTERN_HINTS: Mapping[str, str] = {
    "principalArn": (
        "an STS assumed-role ARN (arn:aws:sts::...:assumed-role/ROLE/SESSION) names one session: use the role,"
        " arn:aws:iam::ACCOUNT:role/ROLE"
    ),
    "zone": (
        "list the zone IDs of your region: aws ec2 describe-availability-zones --query"
        " 'AvailabilityZones[].[ZoneName,ZoneId]'"
    ),
    "releaseVersion": (
        "quote it, and take the release from the EKS AMI release notes (Kubernetes version, patch, build date)"
    ),
    "name": "e.g. h100-training",
}


_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9!_.*'()-]+")


def _pattern_hint(path: Path, field: str, value: object) -> str:
    if field == "prefix" and isinstance(value, str):
        segments = [part for part in value.split("/") if part]
        if segments and all(_PREFIX_SEGMENT.fullmatch(part) for part in segments):
            return f'write prefix: "{"/".join(segments)}/"'
        return 'keep letters, digits and ! _ . * \' ( ) - in each segment, and end it with / (e.g. "datasets/")'
    if len(path) == 2 and path[0] == "images":
        # The tag stays in the reference: validate compares it with the tag this fleet runs (gpufleet.spec.images).
        return (
            "keep the tag and append the digest it resolves to: `crane digest <name:tag>` or `docker buildx imagetools"
            " inspect <name:tag>` prints it (sha256: and 64 hex digits)"
        )
    return _PATTERN_HINTS.get(field, "")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not whole_string(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator(trusted: frozenset[str] = frozenset()) -> jsonschema.Draft202012Validator:
    """The spec's validator; the schemas of the `trusted` top-level sections are replaced by `true`
    (gpufleet.spec.schema.trusting).

    Why: docs/commands.md, "Design notes", schema_errors._validator."""
    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine_many(
        {"integer": lambda _, value: is_integer(value), "number": lambda _, value: is_number(value)}
    )
    strict = jsonschema.validators.extend(base, validators={"pattern": _pattern}, type_checker=types)  # type: ignore[no-untyped-call]
    validator: jsonschema.Draft202012Validator = strict(trusting(fleet_schema(), trusted))
    return validator


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


def _json(value: object, limit: int = 60) -> str:
    """A value as it appears in a message; long mappings and lists are cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _eks_spelling(value: str, allowed: list[str]) -> str | None:
    """The spec's spelling of `value` when `value` is the EKS API's (`NO_SCHEDULE`, `ON_DEMAND`, `SPOT`)."""
    if value != value.upper() or not any(c.isalpha() for c in value):
        return None
    squashed = {a.replace("-", "").replace("_", "").lower(): a for a in allowed}
    spelled = squashed.get(value.replace("_", "").replace("-", "").lower())
    return spelled if spelled != value else None


def _enum_hint(raw: object, value: object, allowed: list[str]) -> str:
    """ "did you mean" when something is close; the values themselves are already in the message."""
    match = closest(raw if isinstance(raw, str) else str(raw), allowed)
    if match is not None:
        return suggest(match)
    if isinstance(value, bool):
        return "YAML 1.1 reads a plain on/off/yes/no as a boolean; write one of the values above"
    return ""


def _type_hint(value: object, expected: list[str], field: str) -> str:
    """The fix for the common wrong types: a quoted number, a single item where a list is expected."""
    if isinstance(value, str) and ("integer" in expected or "number" in expected):
        try:
            number = int(value) if "integer" in expected else float(value)
        except ValueError:
            return ""
        return f"write a number, without quotes: {field}: {number}"
    if "array" in expected and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return f"write a list, even of one item: {field}: [{value}]"
    if "boolean" in expected and isinstance(value, str) and value.lower() in ("true", "false"):
        return f"write {field}: {value.lower()}, without quotes"
    return ""


def _issues_for(validation_error: ValidationError, plain: Mapping[Path, str]) -> Iterator[Issue]:
    # The stubs type schema/validator_value as unions with Unset; here they are always set (iter_errors).
    error: Any = validation_error
    path: Path = tuple(error.absolute_path)
    value = error.instance
    validator = error.validator
    field = next((p for p in reversed(path) if isinstance(p, str)), "")
    if validator == "additionalProperties" and isinstance(value, dict):
        allowed = list(error.schema.get("properties", {}))
        for key in value:
            if key not in allowed:
                yield Issue(
                    path=path + (key,),
                    at_key=True,
                    message=f'unknown field "{key}"',
                    hint=_MOVED.get(key) or did_you_mean(key, allowed),
                )
    elif validator == "required":
        missing = str(error.message).split("'")[1]
        described = resolve(error.schema.get("properties", {}).get(missing, {})).get("description", "")
        yield Issue(path=path, at_key=True, message=f'missing required field "{missing}"', hint=str(described))
    elif validator == "enum":
        yield from _enum_issues(error, path, field)
    elif validator == "pattern":
        what = (
            _PATH_FORMATS.get(path)
            or _format_at(path)
            or _FORMATS.get(field, f"a value matching {error.validator_value}")
        )
        yield Issue(
            path=path,
            message=f"{json.dumps(value, ensure_ascii=False)} is not {what}",
            hint=_pattern_hint(path, field, value),
        )
    elif validator == "const":
        yield Issue(
            path=path,
            message=f"{_json(value)} must be {_json(error.validator_value)}",
            hint=f"write {field}: {error.validator_value}",
        )
    else:
        yield from keyword_issues(validation_error, plain)


def keyword_issues(validation_error: ValidationError, plain: Mapping[Path, str]) -> Iterator[Issue]:
    """The issues of the keywords whose words do not depend on what the document is: a type, a bound, a count.

    Why: docs/commands.md, "Design notes", schema_errors.keyword_issues."""
    error: Any = validation_error
    path: Path = tuple(error.absolute_path)
    value = error.instance
    validator = error.validator
    field = next((p for p in reversed(path) if isinstance(p, str)), "")
    if validator == "type":
        yield from _type_issues(error, path, plain, field)
    elif validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        word = {
            "minimum": "at least",
            "exclusiveMinimum": "greater than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }[str(validator)]
        yield Issue(path=path, message=f"{value} must be {word} {error.validator_value}")
    elif validator == "minItems":
        yield Issue(path=path, message=f"needs at least {error.validator_value} item(s), got {len(value)}")
    elif validator == "uniqueItems":
        seen: list[object] = []
        repeated = next((item for item in value if item in seen or seen.append(item)), None)  # type: ignore[func-returns-value]
        yield Issue(
            path=path,
            message=f"has duplicate entries ({_json(repeated)} appears more than once)",
            hint="list each entry once",
        )
    elif validator == "maxLength":
        yield Issue(path=path, message=f'"{value}" is longer than {error.validator_value} characters')
    elif validator == "minLength":
        yield Issue(path=path, message="must not be empty")
    elif validator == "minProperties":
        yield Issue(path=path, message=f"needs at least {error.validator_value} entry")
    else:
        yield Issue(path=path, message=str(error.message))


def _type_issues(error: Any, path: Path, plain: Mapping[Path, str], field: str) -> Iterator[Issue]:
    value = error.instance
    expected = error.validator_value
    expected_list = expected if isinstance(expected, list) else [expected]
    enum = [str(v) for v in error.schema.get("enum", [])]
    if "string" in expected_list and path in plain:
        raw = plain[path]
        if enum:
            yield Issue(
                path=path,
                message=f"{describe_plain(raw, value)}, not one of: {', '.join(enum)}",
                hint=f'quote it: "{raw}"' if raw in enum else _enum_hint(raw, value, enum),
            )
        else:
            yield Issue(
                path=path,
                message=f"{describe_plain(raw, value)}, but a string is expected",
                hint=f'quote it: "{raw}"',
            )
    elif isinstance(value, float) and not math.isfinite(value) and "number" in expected_list:
        yield Issue(
            path=path, message=f"{plain.get(path, value)} is not a finite number", hint="write a number such as 0.5"
        )
    elif isinstance(value, float) and "integer" in expected_list:
        yield Issue(
            path=path,
            message=f"{plain.get(path, value)} is not a whole number",
            hint="write an integer without a decimal point or exponent, e.g. 8",
        )
    else:
        want = " or ".join("mapping" if t == "object" else "list" if t == "array" else t for t in expected_list)
        yield Issue(
            path=path,
            message=f"expected {want}, got {_type_name(value)}{'' if value is None else ' ' + _json(value)}",
            hint=_type_hint(value, expected_list, field),
        )


def _enum_issues(error: Any, path: Path, field: str) -> Iterator[Issue]:
    value = error.instance
    allowed = [str(v) for v in error.validator_value]
    if isinstance(value, str) and (spelled := _eks_spelling(value, allowed)):
        spelling = "uses the Kubernetes spelling" if field == "effect" else "writes"
        yield Issue(
            path=path,
            message=f'"{value}" is the EKS API spelling; the spec {spelling} "{spelled}"',
            hint=f"write {field}: {spelled} (gpufleet converts it for the EKS API)",
        )
        return
    # A plain scalar YAML reads as another type never gets here: every enum of the schema has type string, so the
    # type branch reports it (and the keywords beside a wrong type are skipped).
    yield Issue(
        path=path,
        message=f"{_json(value)} is not one of: {', '.join(allowed)}",
        hint=_enum_hint(value, value, allowed),
    )


def schema_issues(data: Any, plain: Mapping[Path, str], valid_sections: frozenset[str] = frozenset()) -> list[Issue]:
    """Every schema violation of `data` as Issues (positions are resolved later from the source).

    Why: docs/commands.md, "Design notes", schema_errors.schema_issues."""
    errors = list(_validator(valid_sections).iter_errors(data))
    typed = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    issues: list[Issue] = []
    for error in errors:
        path = tuple(error.absolute_path)
        if "propertyNames" in error.schema_path and isinstance(error.instance, str):
            # A bad mapping key: jsonschema reports it at the mapping; point at the key itself.
            key = error.instance
            what = _FORMATS["name"] if error.validator == "pattern" else str(error.message)
            issues.append(
                Issue(
                    path=path + (key,),
                    at_key=True,
                    message=f'"{key}" is not {what}',
                    hint="environment names are also Pulumi stack names, e.g. dev, prod, staging-eu",
                )
            )
            continue
        if path in typed and error.validator != "type":
            continue
        issues.extend(_issues_for(error, plain))
    return issues
