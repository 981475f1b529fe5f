"""The example fleet's Kubernetes stages through a real Pulumi engine (e2e.box.engine): `pulumi up` creates every
object of the plan in the box, a `pulumi preview` after it finds nothing to change, `pulumi destroy` deletes them.

The tests run in file order on one stack: up, then preview, then destroy."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from pulumi import automation as auto

from e2e import summary
from e2e.box import build, engine, fleet
from e2e.box.client import ApiError, Client
from e2e.conftest import EXAMPLE
from gpufleet.plan.parts import RolloutPlan

ENV = "prod"


@dataclass
class Deployed:
    box: fleet.Fleet
    plan: RolloutPlan
    stack: auto.Stack
    up: auto.UpResult
    diagnostics: list[str]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    root = tmp_path_factory.mktemp("engine")
    box = fleet.up(EXAMPLE, ENV, root / "box", releases_only=True)
    try:
        plan = engine.boxed(box.plan, box.cluster.admin_kubeconfig)
        stack = engine.stack(plan, root / "pulumi")
        started = time.monotonic()
        diagnostics: list[str] = []

        def event(e: auto.EngineEvent) -> None:
            if e.diagnostic_event is not None:
                diagnostics.append(e.diagnostic_event.message)

        result = stack.up(on_output=lambda line: None, on_event=event, color="never")
        summary.LINES.append(
            f"engine: pulumi up of the example's {ENV} Kubernetes stages: {len(engine.objects(plan))} objects"
            f" in {time.monotonic() - started:.0f} s ({result.summary.resource_changes})"
        )
        yield Deployed(box, plan, stack, result, diagnostics)
    finally:
        box.stop()


def _get(client: Client, obj: Mapping[str, Any]) -> Any:
    meta = obj["metadata"]
    return client.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


def _missing(client: Client, objects: list[Mapping[str, Any]]) -> list[str]:
    out = []
    for obj in objects:
        try:
            _get(client, obj)
        except ApiError as exc:
            if exc.status != 404:
                raise
            out.append(_name(obj))
    return out


def test_the_engine_is_the_one_built(deployed: Deployed) -> None:
    cli = build.bin_dir(build.PULUMI) / "pulumi"
    version = subprocess.run([str(cli), "version"], capture_output=True, text=True, check=True).stdout.strip()
    assert version == build.required(build.PULUMI, "github.com/pulumi/pulumi/pkg/v3"), version
    assert deployed.stack.workspace.pulumi_command.command == str(deployed.stack.workspace.work_dir) + "/cli/bin/pulumi"
    # the provider the engine ran: the one on PATH (the engine says so when it takes an ambient plugin); the
    # state's provider records the version the Python SDK asks for (pyproject's pulumi-kubernetes), not the binary's
    provider = build.bin_dir(build.PULUMI_KUBERNETES) / "pulumi-resource-kubernetes"
    said = [d for d in deployed.diagnostics if "pulumi-resource-kubernetes from $PATH" in d]
    assert said and all(str(provider) in d for d in said), deployed.diagnostics


def _name(obj: Mapping[str, Any]) -> str:
    return f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def test_destroy_deletes_every_object(deployed: Deployed) -> None:
    result = deployed.stack.destroy(color="never")
    assert result.summary.result == "succeeded"
    objects = engine.objects(deployed.plan, patches=False)
    # a delete returns before a finalizer (a namespace's contents, a Kueue workload's) lets the object go: wait
    deadline = time.monotonic() + 180
    while len(gone := _missing(deployed.box.cluster.admin, objects)) < len(objects) and time.monotonic() < deadline:
        time.sleep(2)
    assert sorted(set(map(_name, objects)) - set(gone)) == []
