"""Plan resources -> Pulumi registrations: a type token and the engine's input names -> one bare resource; Refs ->
Outputs. No branching on the spec.

Every planned resource is registered as a bare `pulumi.CustomResource(token, name, inputs, opts)`, the form
Pulumi's own `kubernetes.apiextensions.CustomResource` takes, not through the SDK's typed classes
(pulumi_aws.eks.NodeGroup, pulumi_kubernetes.core.v1.ConfigMap, ...). To a registration request a typed class adds
the engine's names for its Python arguments (the plan already holds the engine's names, see
`gpufleet.plan.parts.Resource`), its package's version and plugin download URL (`_options` sends the same), and, for
some types, aliases: the type tokens of earlier API versions (rbac.authorization.k8s.io/v1beta1, s3 BucketV2 ...), which
let a stack that registered the resource under such a token adopt it. gpufleet has never registered one, so it
sends none. tests/components/test_bare_registrations.py proves every request of every golden fleet equal to the
typed class's, aliases aside, and every alias it leaves out a type no gpufleet fleet registers. The typed classes
cost above all their import (pulumi_aws.ec2, pulumi_aws.s3 and pulumi_kubernetes.core.v1 define thousands of
classes; docs/performance.md). The two providers keep their typed classes (imported with their packages): a
provider's inputs are its configuration, which the class encodes as JSON.
"""

from __future__ import annotations

import functools
import re
from collections import abc
from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pulumi_aws
import pulumi_aws._utilities as aws_utilities
import pulumi_kubernetes
import pulumi_kubernetes._utilities as kubernetes_utilities

from gpufleet.plan.parts import LEAVES, Concat, Ref, Resource

Registry = dict[str, Any]  # plan id -> pulumi.Resource or invoke result Output

_UTILITIES = {"aws": aws_utilities, "kubernetes": kubernetes_utilities}
_PROVIDERS: Mapping[str, Callable[..., pulumi.ProviderResource]] = {
    "aws": pulumi_aws.Provider,
    "kubernetes": pulumi_kubernetes.Provider,
}


def camel_to_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _python_names(args: Mapping[str, Any]) -> dict[str, Any]:
    """A provider's plan args (the engine's names) as its typed class's keyword arguments (top level only)."""
    return {camel_to_snake(k): v for k, v in args.items()}


def _get(value: Any, name: str) -> Any:
    """One attribute step into a resource's or an invoke's output value: a dict with the engine's names."""
    if not isinstance(value, Mapping):
        raise ValueError(f"cannot read {name!r} of {value!r}: the output has no such object")
    return value.get(name)


def _index(value: Any, name: str) -> Any:
    return value[int(name[1:-1])]


def _attribute(target: Any, ref: Ref) -> Any:
    """`certificateAuthority.data` or `certificateAuthorities[0].data` on a resource or an invoke's Output."""
    steps = ref.steps()
    # The first step on a resource is one of its outputs (`create` declared it); on an invoke, a key of its result.
    value: Any = (
        getattr(target, steps[0])
        if isinstance(target, pulumi.Resource)
        else pulumi.Output.from_input(target).apply(functools.partial(_get, name=steps[0]))
    )
    for step in steps[1:]:
        value = pulumi.Output.from_input(value).apply(
            functools.partial(_index if step.startswith("[") else _get, name=step)
        )
    return value


def resolve(value: Any, registry: Registry) -> Any:
    """Replace Refs and Concats by Outputs of already created resources, recursively (tuples become lists).
    Dispatched by exact type first, as `plan._collect_refs` is: most values are strings, numbers, dicts and lists,
    and typing.Mapping's isinstance runs typing's __instancecheck__ in Python for each."""
    kind = type(value)
    if kind in LEAVES:
        return value
    if kind is dict or isinstance(value, abc.Mapping):
        return {k: resolve(v, registry) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(v, registry) for v in value]
    if isinstance(value, Ref):
        return _attribute(registry[value.resource], value)
    if isinstance(value, Concat):
        # Output.concat needs strings; numeric attributes (a launch template's latestVersion) are formatted.
        return pulumi.Output.all(*(resolve(p, registry) for p in value.parts)).apply(
            lambda xs: "".join(str(x) for x in xs)
        )
    return value


def _options(package: str, opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """`opts` under the package's version and plugin download URL, merged as a typed class merges them
    (`_utilities.get_resource_opts_defaults()` in every generated SDK)."""
    return pulumi.ResourceOptions.merge(_UTILITIES[package].get_resource_opts_defaults(), opts)


def create(
    res: Resource, registry: Registry, opts: pulumi.ResourceOptions, outputs: frozenset[str] = frozenset()
) -> Any:
    """Register one plan resource (or run one invoke) and return it. `outputs` are the resource's outputs that
    Refs of the plan read: a bare resource has an Output attribute only for the properties it is given."""
    args = resolve(res.args, registry)
    package = res.type.split(":")[0]
    if res.lookup:
        invoke_opts = pulumi.InvokeOutputOptions.merge(
            _UTILITIES[package].get_invoke_opts_defaults(),
            pulumi.InvokeOutputOptions(parent=opts.parent, provider=opts.provider),
        )
        return pulumi.runtime.invoke_output(res.type, args, opts=invoke_opts)
    if res.type.startswith("pulumi:providers:"):
        return _PROVIDERS[res.type.split(":")[2]](res.id, opts=opts, **_python_names(args))
    props = (
        dict(args["object"]) if "object" in args else dict(args)
    )  # a whole Kubernetes object, or a resource's inputs
    for name in outputs:
        props.setdefault(name, None)  # None is not sent: the request carries the inputs only
    secret = _SECRET_OUTPUTS.get(res.type)
    if secret:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=list(secret)))
    return pulumi.CustomResource(res.type, res.id, props, _options(package, opts))


# Outputs a typed class marks secret whatever it is given (its _internal_init merges additional_secret_outputs into
# the options), for the types gpufleet registers that have any: pulumi_aws/ssm/parameter.py (7.x).
_SECRET_OUTPUTS: Mapping[str, tuple[str, ...]] = {"aws:ssm/parameter:Parameter": ("value", "valueWo")}
