"""Plan resources -> Pulumi resource objects: type token -> class, Refs -> Outputs. No branching on the spec."""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any, Callable, Mapping

import pulumi
import pulumi_kubernetes as k8s

from gpufleet.builders.common import CORE_GROUPS, kubernetes_token
from gpufleet.plan import Concat, Ref, Resource

Registry = dict[str, Any]  # plan id -> pulumi.Resource or invoke result Output


def camel_to_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _python_names(args: Mapping[str, Any]) -> dict[str, Any]:
    """Plan args (the engine's input names) as the typed SDK class's keyword arguments: only the top level is
    renamed. Nested values go as they are: the SDK sends a nested key it has no Python name for unchanged
    (pulumi/runtime/rpc.py serialize_properties: `py_name_to_pulumi_name.get(k) or k`), so camelCase arrives as is."""
    return {camel_to_snake(k): v for k, v in args.items()}


def _get(value: Any, name: str) -> Any:
    """One attribute step on a plain value: typed output objects, or dicts with engine or Python names."""
    if isinstance(value, Mapping):
        return value.get(name, value.get(camel_to_snake(name)))
    return getattr(value, camel_to_snake(name))


def _index(value: Any, name: str) -> Any:
    return value[int(name[1:-1])]


def _attribute(target: Any, ref: Ref) -> Any:
    """`certificateAuthority.data` or `certificateAuthorities[0].data` on a resource or an invoke's Output."""
    parts = ref.steps()
    value: Any = pulumi.Output.from_input(target) if not isinstance(target, pulumi.Resource) else None
    for part in parts:
        if value is None:  # the first step on a resource is a property of the resource
            value = getattr(target, camel_to_snake(part))
            continue
        value = pulumi.Output.from_input(value).apply(functools.partial(_index if part.startswith("[") else _get, name=part))
    return value


def resolve(value: Any, registry: Registry) -> Any:
    """Replace Refs and Concats by Outputs of already created resources, recursively."""
    if isinstance(value, Ref):
        return _attribute(registry[value.resource], value)
    if isinstance(value, Concat):
        # Output.concat needs strings; numeric attributes (a launch template's latestVersion) are formatted.
        return pulumi.Output.all(*(resolve(p, registry) for p in value.parts)).apply(lambda xs: "".join(str(x) for x in xs))
    if isinstance(value, Mapping):
        return {k: resolve(v, registry) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(v, registry) for v in value]
    return value


@functools.cache  # once per type: the lookup goes through the SDK's lazy modules
def _class_for(token: str) -> Callable[..., Any]:
    """`aws:eks/nodeGroup:NodeGroup` -> pulumi_aws.eks.NodeGroup; `kubernetes:core/v1:ConfigMap` -> ...core.v1.ConfigMap."""
    package, module, name = token.split(":")
    if package == "pulumi" and module == "providers":
        provider: Callable[..., Any] = {"aws": importlib.import_module("pulumi_aws").Provider, "kubernetes": k8s.Provider}[name]
        return provider
    mod_path = module.split("/")[0]
    if package == "kubernetes":
        group, version = module.rsplit("/", 1)
        package_name = {"helm.sh": "helm", "scheduling.k8s.io": "scheduling", "admissionregistration.k8s.io": "admissionregistration", "rbac.authorization.k8s.io": "rbac", "networking.k8s.io": "networking", "storage.k8s.io": "storage"}.get(group, group)
        mod = importlib.import_module(f"pulumi_kubernetes.{package_name}.{version}")
    else:
        mod = importlib.import_module(f"pulumi_{package}.{mod_path}")
    cls: Callable[..., Any] = getattr(mod, name)
    return cls


class CustomObject(pulumi.CustomResource):
    """A custom resource with every top-level field (k8s.apiextensions.CustomResource takes only metadata and
    spec, but e.g. WorkloadPriorityClass has top-level `value`)."""

    def __init__(self, name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", name, dict(obj), opts)


def create(res: Resource, registry: Registry, opts: pulumi.ResourceOptions) -> Any:
    """Register one plan resource (or run one invoke) and return it."""
    args = resolve(res.args, registry)
    if res.lookup:
        package, module, name = res.type.split(":")
        mod = importlib.import_module(f"pulumi_{package}.{module.split('/')[0]}")
        invoke = getattr(mod, camel_to_snake(name) + "_output")
        return invoke(**_python_names(args), opts=pulumi.InvokeOutputOptions(parent=opts.parent, provider=opts.provider))
    if "object" in args:  # a whole Kubernetes object
        obj = dict(args["object"])
        api_version, kind = obj.pop("apiVersion"), obj.pop("kind")
        if api_version in CORE_GROUPS:
            cls = _class_for(kubernetes_token(api_version, kind))
            kwargs = {camel_to_snake(k): v for k, v in obj.items()}
            return cls(res.id, api_version=api_version, kind=kind, opts=opts, **kwargs)
        return CustomObject(res.id, {"apiVersion": api_version, "kind": kind, **obj}, opts)
    return _class_for(res.type)(res.id, opts=opts, **_python_names(args))
