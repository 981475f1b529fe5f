"""CrossGuard arguments -> the plain resource dicts the predicates read. Duck-typed: no Pulumi import here.

CrossGuard hands a policy `args.props` wrapped in proxies that raise on unknown values; we unwrap them and
replace each unknown sentinel with a `<ref:...>` marker, which every predicate treats as "not known at preview"
(the same convention as a synth tree). Where the engine tells which resource a property came from
(`PolicyResource.property_dependencies`), the marker names it (`<ref:<name>.?>`), so cross-resource rules can
still follow a node group to its launch template before either exists.

What CrossGuard does not pass (pulumi_policy 1.21.0 `PolicyResourceOptions`): `retainOnDelete`. It is None
here, and rules judge it only in `gpufleet check`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from gpufleet.policies.rules import PolicyFinding, Rule

UNKNOWN = "<ref:?.?>"


def _target(value: Any) -> Any:
    """The wrapped value of a pulumi_policy proxy (`proxy["__target"]`), or the value itself."""
    if isinstance(value, (str, bytes, dict, list)) or not isinstance(value, (Mapping, Sequence)):
        return value
    try:
        return getattr(value, "__getitem__")("__target")  # noqa: B009 (typed as a Sequence); pulumi_policy's _DictProxy / _ListProxy give their wrapped value
    except (KeyError, TypeError, IndexError):
        return value


def plain(value: Any, sentinels: Collection[str], marker: str = UNKNOWN) -> Any:
    """A deep copy of `value` as dicts, lists and scalars, with unknown sentinels replaced by `marker`."""
    value = _target(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v, sentinels, marker) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or (isinstance(value, Sequence) and not isinstance(value, (str, bytes))):
        return [plain(v, sentinels, marker) for v in value]
    if isinstance(value, str) and value in sentinels:
        return marker
    return value


def from_resource_args(args: Any, sentinels: Collection[str]) -> dict[str, Any]:
    """A `ResourceValidationArgs` as an inventory-shaped resource dict."""
    return {
        "id": args.name,
        "type": args.resource_type,
        "inputs": plain(args.props, sentinels),
        "protect": bool(args.opts.protect),
        "retainOnDelete": None,
        "ignoreChanges": list(args.opts.ignore_changes or ()),
        "dependsOn": [],
    }


def from_policy_resource(resource: Any, sentinels: Collection[str]) -> dict[str, Any]:
    """A `PolicyResource` (stack validation) as an inventory-shaped resource dict."""
    props = _target(resource.props)
    deps = resource.property_dependencies or {}
    inputs = {}
    for key, value in props.items() if isinstance(props, Mapping) else ():
        sources = deps.get(key) or []
        marker = f"<ref:{sources[0].name}.?>" if len(sources) == 1 else UNKNOWN
        inputs[str(key)] = plain(value, sentinels, marker)
    return {
        "id": resource.name,
        "type": resource.resource_type,
        "inputs": inputs,
        "protect": bool(resource.opts.protect),
        "retainOnDelete": None,
        "ignoreChanges": list(resource.opts.ignore_changes or ()),
        "dependsOn": [d.name for d in resource.dependencies or ()],
    }


def message(finding: PolicyFinding) -> str:
    return f"{finding.message}. Fix: {finding.hint}"


def resource_validator(rule: Rule, sentinels: Collection[str]) -> Callable[[Any, Callable[..., None]], None]:
    def validate(args: Any, report_violation: Callable[..., None]) -> None:
        for finding in rule.run([from_resource_args(args, sentinels)]):
            report_violation(message(finding), None)

    return validate


def stack_validator(rule: Rule, sentinels: Collection[str]) -> Callable[[Any, Callable[..., None]], None]:
    def validate(args: Any, report_violation: Callable[..., None]) -> None:
        resources = [from_policy_resource(r, sentinels) for r in args.resources]
        urns = {r.name: r.urn for r in args.resources}
        for finding in rule.run(resources):
            report_violation(message(finding), urns.get(finding.resource))

    return validate
