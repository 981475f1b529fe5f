"""The real-cluster tests: each fleet applied to a cluster in a box (e2e.box), shared per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e import summary
from e2e.box import fleet

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fleet.yaml"
CASES = ROOT / "tests" / "golden" / "cases"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if summary.LINES:
        terminalreporter.section("cluster in a box")
        for line in summary.LINES:
            terminalreporter.write_line(line)


def trees() -> list[Any]:
    """(case, spec, environment): the example fleet's two environments and every golden case's. A case valid only
    under a test fiction of the unit suite (tests/rdma_fiction.py: network-rdma pretends an instance type has RDMA
    NICs) is skipped here, where gpufleet runs as shipped."""
    from gpufleet.base.errors import SpecError
    from gpufleet.rules.pipeline import load_fleet

    specs = [("example", EXAMPLE)] + [(p.parent.name, p) for p in sorted(CASES.glob("*/fleet.yaml"))]
    out: list[Any] = []
    for case, spec in specs:
        try:
            envs = list(load_fleet(str(spec)).environments)
        except SpecError as exc:
            out.append(pytest.param(case, spec, "-", marks=pytest.mark.skip(reason=f"invalid as shipped: {exc}")))
            continue
        out += [(case, spec, env) for env in envs]
    return out


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fleet.Fleet]:
    box = fleet.up(EXAMPLE, "prod", tmp_path_factory.mktemp("example-prod"))
    yield box
    box.stop()
