"""Golden synth trees: every case, every environment, compared file by file. A missing golden fails.

Regenerate after an intended change with `GPUFLEET_UPDATE_GOLDEN=1 python -m pytest tests/golden`, then
read the diff in review: it is exactly what would change in the deployed fleet.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gpufleet.commands.synth import synth_tree
from gpufleet.rules.pipeline import load_fleet
from tests.synthesized import tree_of

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
UPDATE = os.environ.get("GPUFLEET_UPDATE_GOLDEN") == "1"


def cases() -> list[tuple[str, Path, str]]:
    """(case, spec, environment): the example fleet plus every tests/golden/cases/<case>/fleet.yaml."""
    specs = [("example", ROOT / "fleet.yaml")] + [
        (p.parent.name, p) for p in sorted((HERE / "cases").glob("*/fleet.yaml"))
    ]
    out = []
    for case, spec in specs:
        for env in load_fleet(str(spec)).environments:
            out.append((case, spec, env))
    return out


def golden_dir(case: str, env: str) -> Path:
    return HERE / "trees" / case / env


@pytest.mark.parametrize(("case", "spec", "env"), cases(), ids=lambda v: str(v) if not isinstance(v, Path) else "")
def test_synth_matches_golden(case: str, spec: Path, env: str) -> None:
    tree = tree_of(spec, env)
    expected_dir = golden_dir(case, env)
    if UPDATE:
        shutil.rmtree(expected_dir, ignore_errors=True)
        for rel, text in tree.files.items():
            (expected_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (expected_dir / rel).write_text(text, encoding="utf-8")
    assert expected_dir.is_dir(), (
        f"missing golden tree {expected_dir.relative_to(ROOT)}: run GPUFLEET_UPDATE_GOLDEN=1 python -m pytest"
        " tests/golden"
    )
    expected = {
        str(p.relative_to(expected_dir)): p.read_text(encoding="utf-8")
        for p in sorted(expected_dir.rglob("*"))
        if p.is_file()
    }
    assert sorted(tree.files) == sorted(expected), "files added or removed"
    for rel, text in tree.files.items():
        assert text == expected[rel], f"{rel} differs from the golden tree"


def test_synth_is_byte_identical_twice() -> None:
    # A fresh synth against the session's (tests/synthesized.py): two separate recordings either way.
    fleet = load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"]
    assert synth_tree(fleet, "prod")[1] == tree_of(ROOT / "fleet.yaml", "prod")


def test_every_golden_tree_is_of_a_case() -> None:
    """A golden tree left behind by a removed case or environment would be read by other tests but never compared."""
    assert sorted(
        p.parent.relative_to(HERE / "trees").as_posix() for p in (HERE / "trees").glob("*/*/plan.json")
    ) == sorted(f"{c}/{e}" for c, _, e in cases())
