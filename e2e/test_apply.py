"""Every Kubernetes object of the example fleet's trees and of each golden case, applied to a real API server with
server-side apply in the Pulumi program's order: the API server refuses none, and knows the kind of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.box import fleet
from e2e.conftest import trees


@pytest.mark.parametrize(("case", "spec", "env"), trees(), ids=lambda v: v if isinstance(v, str) else "")
def test_tree_applies(case: str, spec: Path, env: str, tmp_path: Path) -> None:
    box = fleet.up(spec, env, tmp_path)
    try:
        print(f"{case}/{env}: {box.report.text()}")
        assert not box.report.refused, box.report.text()
        assert not box.report.unserved, box.report.text()
        assert box.report.applied > 0
    finally:
        box.stop()
