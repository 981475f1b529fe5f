"""The real-cluster tests: each fleet applied to a cluster in a box (e2e.box), shared per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.box import fleet

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fleet.yaml"
CASES = ROOT / "tests" / "golden" / "cases"


def trees() -> list[tuple[str, Path, str]]:
    """(case, spec, environment): the example fleet's two environments and every golden case's."""
    from gpufleet.rules.pipeline import load_fleet

    specs = [("example", EXAMPLE)] + [(p.parent.name, p) for p in sorted(CASES.glob("*/fleet.yaml"))]
    return [(case, spec, env) for case, spec in specs for env in load_fleet(str(spec)).environments]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fleet.Fleet]:
    box = fleet.up(EXAMPLE, "prod", tmp_path_factory.mktemp("example-prod"))
    yield box
    box.stop()
