"""Bare registrations ask the engine for what the SDK's typed classes would (components/factory.py).

For every distinct resource shape (type and top-level inputs) of every golden fleet, the registration request the
factory sends equals, field for field, the request of the typed class (pulumi_aws.eks.NodeGroup,
pulumi_kubernetes.core.v1.ConfigMap, pulumi_kubernetes.apiextensions.CustomResource ...) given the same inputs as
Python arguments: the same type, name, inputs, version, plugin URL and options. Invokes likewise. Two things
differ: the caller's source position and stack trace, because the callers differ, and the aliases some typed
classes declare, which the factory leaves out; every one of them must name a type no golden fleet registers, so
that no alias could ever have matched a resource gpufleet made. This test imports the typed SDK modules (a few
seconds) that synth itself no longer imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pytest
from google.protobuf.json_format import MessageToDict
from pulumi.runtime import mocks as pulumi_mocks

from gpufleet.components import factory
from gpufleet.components.recording import run_under_mocks
from gpufleet.plan.parts import Resource
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from tests.trees import as_recorded

ROOT = Path(__file__).resolve().parents[2]
SPECS = [ROOT / "fleet.yaml", *sorted((ROOT / "tests" / "golden" / "cases").glob("*/fleet.yaml"))]
CUSTOM_RESOURCE_FIELDS = {"apiVersion", "kind", "metadata", "spec"}  # what apiextensions.CustomResource takes
# The Python module of a Kubernetes API group in pulumi_kubernetes.
K8S_MODULES = {
    "helm.sh": "helm",
    "scheduling.k8s.io": "scheduling",
    "admissionregistration.k8s.io": "admissionregistration",
    "rbac.authorization.k8s.io": "rbac",
    "networking.k8s.io": "networking",
    "storage.k8s.io": "storage",
}


def shapes() -> list[Resource]:
    """One resource per (type, top-level input names) over every environment of every golden fleet."""
    seen: dict[tuple[str, frozenset[str]], Resource] = {}
    for spec in SPECS:
        fleet = load_fleet(str(spec))
        for env in fleet.environments:
            for stage in build_plan(fleet.environments[env], env).included():
                for res in stage.content.resources:
                    names = frozenset(res.args.get("object", res.args))
                    seen.setdefault(
                        (res.type, names),
                        Resource(id=f"r{len(seen)}", type=res.type, args=as_recorded(res.args), lookup=res.lookup),
                    )
    return list(seen.values())


def snake(args: dict[str, Any]) -> dict[str, Any]:
    return {factory.camel_to_snake(k): v for k, v in args.items()}


def typed_class(token: str) -> Callable[..., Any]:
    package, module, name = token.split(":")
    if package == "kubernetes":
        group, version = module.rsplit("/", 1)
        path = f"pulumi_kubernetes.{K8S_MODULES.get(group, group)}.{version}"
    else:
        path = f"pulumi_{package}.{module.split('/')[0]}"
    cls: Callable[..., Any] = getattr(importlib.import_module(path), name)
    return cls


def typed(res: Resource) -> bool:
    """Register `res` through its typed class (the oracle); False if the SDK has none for it."""
    if res.lookup:
        package, module, name = res.type.split(":")
        invoke = getattr(
            importlib.import_module(f"pulumi_{package}.{module.split('/')[0]}"),
            factory.camel_to_snake(name) + "_output",
        )
        invoke(**snake(dict(res.args)), opts=pulumi.InvokeOutputOptions())
        return True
    if "object" not in res.args:
        typed_class(res.type)(res.id, **snake(dict(res.args)))
        return True
    obj = res.args["object"]
    try:
        cls = typed_class(res.type)
    except (ImportError, AttributeError):  # a custom resource: the SDK's generic class, where its fields suffice
        if set(obj) - CUSTOM_RESOURCE_FIELDS:
            return False
        cls = importlib.import_module("pulumi_kubernetes.apiextensions").CustomResource
    cls(res.id, **snake(obj))
    return True


def bare(res: Resource) -> bool:
    factory.create(res, {}, pulumi.ResourceOptions())
    return True


class Echo(pulumi_mocks.Mocks):
    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        return {}


def requests(
    monkeypatch: pytest.MonkeyPatch, register: Callable[[Resource], bool], resources: list[Resource]
) -> dict[str, dict[str, Any]]:
    """Resource name (or invoke token) -> its request as the engine would receive it, without the caller's position."""
    seen: dict[str, dict[str, Any]] = {}

    def keep(key: str, request: Any) -> None:
        message = MessageToDict(request)
        for caller in ("sourcePosition", "stackTrace"):
            message.pop(caller, None)
        seen[key] = message

    register_resource, invoke = pulumi_mocks.MockMonitor.RegisterResource, pulumi_mocks.MockMonitor.Invoke

    def on_register(monitor: Any, request: Any) -> Any:
        keep(request.name, request)
        return register_resource(monitor, request)

    def on_invoke(monitor: Any, request: Any) -> Any:
        keep(request.tok, request)
        return invoke(monitor, request)

    with monkeypatch.context() as patch:
        patch.setattr(pulumi_mocks.MockMonitor, "RegisterResource", on_register)
        patch.setattr(pulumi_mocks.MockMonitor, "Invoke", on_invoke)

        def program() -> None:
            for r in resources:
                register(r)

        run_under_mocks(Echo(), program, "dev")
    return seen


def test_every_request_equals_the_typed_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    resources = [r for r in shapes() if not r.type.startswith("pulumi:providers:")]
    expected = requests(monkeypatch, typed, resources)
    got = requests(monkeypatch, bare, resources)
    registered = {r.type for r in shapes()}
    compared = sorted(expected)
    assert compared, "no resource had a typed class"
    for key in compared:
        aliases = [a["spec"]["type"] for a in expected[key].pop("aliases", [])]
        assert not set(aliases) & registered, f"{key}: an alias the factory leaves out names a type gpufleet registers"
        assert got.get(key) == expected[key], key
    # Every type gpufleet renders is compared, except custom resources with fields beyond metadata and spec
    # (WorkloadPriorityClass has a top-level `value`), for which the SDK has no class.
    uncompared = {r.type for r in resources} - {r.type for r in resources if r.id in expected or r.type in expected}
    assert uncompared <= {"kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"}, uncompared
