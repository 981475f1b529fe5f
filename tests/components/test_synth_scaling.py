"""What keeps synth's time linear in the fleet (docs/performance.md): the next stage names the previous readiness
by its URN (components/stage.py `UrnDependency`), and the garbage collector runs rarely (gpufleet/base/collector.py,
around synth and every program run under mocks). The engine must be asked for the same dependencies."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime.resource_cycle_breaker import _with_transitive_deps

from gpufleet.base.collector import THRESHOLDS
from gpufleet.commands.synth import synth_tree
from gpufleet.components import recording
from gpufleet.components.deploy import deploy
from gpufleet.components.factory import Registry
from gpufleet.components.recording import RecordingMocks, run_under_mocks
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from tests.monitor import dependencies_asked

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_collector() -> Iterator[None]:
    """The interpreter's default thresholds, which the suite itself raises (tests/conftest.py)."""
    suite = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*suite)


def test_each_stage_asks_for_the_previous_readiness_and_no_cycle_walk_crosses_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod")
    dependencies = dependencies_asked(monkeypatch)  # resource name -> the names its request depends on
    registry: Registry = {}
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


@pytest.mark.usefixtures("default_collector")
def test_collections_are_rare_while_a_program_runs_and_restored_after() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, ...]] = []

    def failing() -> None:
        seen.append(gc.get_threshold())
        raise ValueError("the program failed")

    with pytest.raises(ValueError, match="the program failed"):
        run_under_mocks(
            RecordingMocks(build_plan(load_fleet(str(ROOT / "fleet.yaml"), "dev").environments["dev"], "dev")),
            failing,
            "dev",
        )
    assert seen == [THRESHOLDS] and before == (700, 10, 10)
    assert gc.get_threshold() == before


@pytest.mark.usefixtures("default_collector")
def test_synth_collects_rarely_from_the_plan_to_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only while the program runs: restoring the thresholds right after it would let the next collection walk
    everything the recording left alive, before the tree is built."""
    seen: list[tuple[int, ...]] = []

    def record(plan: Any) -> list[Any]:
        seen.append(gc.get_threshold())
        raise ValueError("stop after the recording")

    monkeypatch.setattr(recording, "record", record)
    before = gc.get_threshold()
    with pytest.raises(ValueError, match="stop after the recording"):
        synth_tree(load_fleet(str(ROOT / "fleet.yaml"), "dev").environments["dev"], "dev")
    assert seen == [THRESHOLDS] and gc.get_threshold() == before == (700, 10, 10)
