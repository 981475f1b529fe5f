"""What keeps synth's time linear in the fleet (README, Performance): the next stage names the previous readiness
by its URN (components/stage.py `UrnDependency`), and the garbage collector runs rarely while the program runs
(components/synth.py `_rare_collections`). Both must leave what the engine is asked for unchanged."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.resource_cycle_breaker import _with_transitive_deps

from gpufleet.components.deploy import deploy
from gpufleet.components.factory import Registry
from gpufleet.components.synth import RecordingMocks, run_under_mocks
from gpufleet.pipeline import load_fleet
from gpufleet.rollout import build_plan

ROOT = Path(__file__).resolve().parents[2]


def test_each_stage_asks_for_the_previous_readiness_and_no_cycle_walk_crosses_one(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod")
    dependencies: dict[str, set[str]] = {}  # resource name -> the names of the URNs in its request's dependencies
    register = pulumi_mocks.MockMonitor.RegisterResource

    def on_register(monitor: Any, request: Any) -> Any:
        dependencies[request.name] = {urn.rsplit("::", 1)[1] for urn in request.dependencies}
        return register(monitor, request)

    registry: Registry = {}
    monkeypatch.setattr(pulumi_mocks.MockMonitor, "RegisterResource", on_register)
    run_under_mocks(RecordingMocks(plan), lambda: registry.update(deploy(plan)), "prod")

    stages = [s for s in plan.included() if s.content.resources]
    assert len(stages) >= 4
    readiness: list[str] = []
    for stage in stages:
        for res in stage.content.resources:
            if res.lookup:
                continue
            if readiness:  # the engine is asked to wait for the previous stage's readiness, by its URN
                assert readiness[-1] in dependencies[res.id], res.id
            # The SDK's cycle check walks everything behind a dependency (resource_cycle_breaker.py). From no
            # resource does it reach a readiness: the walk ends at the stand-in, within the stage.
            walked = list(_with_transitive_deps(registry[res.id], set()))
            assert not [r for r in walked if isinstance(r, pulumi.Stash)], res.id
        readiness.append(f"{stage.directory}-ready")


def test_collections_are_rare_while_a_program_runs_and_restored_after() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, ...]] = []

    def failing() -> None:
        seen.append(gc.get_threshold())
        raise ValueError("the program failed")

    with pytest.raises(ValueError, match="the program failed"):
        run_under_mocks(RecordingMocks(build_plan(load_fleet(str(ROOT / "fleet.yaml"), "dev").environments["dev"], "dev")), failing, "dev")
    assert seen == [(200_000, 30, 30)]
    assert gc.get_threshold() == before
