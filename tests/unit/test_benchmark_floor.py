"""The benchmark's floors (tools/benchmark.py) replay a golden tree as the engine would be asked for it: every
resource's request depends on exactly its recorded dependsOn, whether each readiness is given as the resource
itself (`floor`) or by its URN (`floor-urn`, as synth gives it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.components.recording import run_under_mocks
from tests.monitor import dependencies_asked
from tests.trees import resources
from tools.benchmark import READINESS, FloorMocks, replay

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("by_urn", [False, True], ids=["floor", "floor-urn"])
def test_each_floor_asks_for_the_recorded_dependencies(monkeypatch: pytest.MonkeyPatch, by_urn: bool) -> None:
    inventory = resources(ROOT / "tests" / "golden" / "trees" / "example" / "prod")
    assert any(e["type"] == READINESS for e in inventory)
    asked = dependencies_asked(monkeypatch)
    run_under_mocks(FloorMocks(), lambda: replay(inventory, by_urn), "prod")
    assert asked == {e["name"]: set(e["dependsOn"]) for e in inventory}
