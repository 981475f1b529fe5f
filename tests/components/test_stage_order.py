"""The rollout order, read from the recorded dependsOn of every golden tree (each is synth's output, the golden
test holds them equal): a stage's resources wait for the previous stage's readiness, which waits for that whole
stage and its gates; no resource names a stage component (the SDK would expand it to all of its children)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from tests.trees import resources

ROOT = Path(__file__).resolve().parents[2]
TREES = sorted(p.parent for p in (ROOT / "tests" / "golden" / "trees").glob("*/*/plan.json"))
REF = re.compile(r"<ref:([^.>]+)\.")


def _edges(entry: dict[str, Any]) -> set[str]:
    """What a resource waits for: its dependsOn and the resources its inputs reference."""
    return set(entry["dependsOn"]) | set(REF.findall(json.dumps(entry["inputs"])))


def _closure(start: str, by_id: dict[str, dict[str, Any]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in _edges(by_id[todo.pop()]):
            if dep in by_id and dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


@pytest.mark.parametrize("path", TREES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_stage_waits_for_the_whole_previous_stage_through_its_readiness(path: Path) -> None:
    inventory = resources(path)
    by_id = {e["id"]: e for e in inventory}
    components = [e["id"] for e in inventory if e["type"].startswith("gpufleet:stage:")]
    assert components == sorted(components) and len(components) >= 2
    previous_ready: str | None = None
    for component in components:
        ready = f"{component}-ready"
        assert by_id[ready]["type"] == "pulumi:index:Stash" and by_id[ready]["parent"] == component
        children = {e["id"] for e in inventory if e["parent"] == component and e["id"] != ready}
        assert children
        for child in sorted(children):
            # Every resource of a later stage names the previous readiness itself, not a component.
            assert not set(by_id[child]["dependsOn"]) & set(components), child
            if previous_ready is None:
                assert not any(d.endswith("-ready") for d in by_id[child]["dependsOn"]), child
            else:
                assert previous_ready in by_id[child]["dependsOn"], child
        # The readiness is created after every resource of its stage (and so after everything before it).
        assert children <= _closure(ready, by_id), sorted(children - _closure(ready, by_id))
        previous_ready = ready


def test_the_readiness_names_the_gates() -> None:
    plan = build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod")
    inventory = {e["id"]: e for e in resources(ROOT / "tests/golden/trees/example/prod")}
    gated = [s for s in plan.included() if s.content.gates]
    assert {s.name for s in gated} == {"network", "health"}
    for stage in gated:
        ready = inventory[f"{stage.directory}-ready"]
        assert {g.resource for g in stage.content.gates} <= set(ready["dependsOn"])
        assert ready["inputs"] == {"input": {"stage": stage.name, "gates": [g.name for g in stage.content.gates]}}
