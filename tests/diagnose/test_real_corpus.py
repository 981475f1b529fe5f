"""`gpufleet diagnose` on logs and node descriptions posted in public threads (tests/diagnose/real, README there).

Each input's sidecar <name>.source.yaml names the thread, the root cause it established (or says it did not) and the
finding that must come first ("none": nothing above info). Two sets: the inputs the checks were written on (real/) and
inputs collected afterwards and scored before any check was changed for them (real/heldout/). The score of each is
pinned below and reported in docs/diagnose.md ("Corpus and held-out scores"); a change that lowers either fails here.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose.findings import LogFinding

REAL = Path(__file__).parent / "real"
HELDOUT = REAL / "heldout"
FIELDS = {
    "source",
    "thread",
    "excerpt",
    "kind",
    "category",
    "root_cause_established",
    "class",
    "root_cause",
    "expected_top",
}


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    meta: dict[str, object]
    heldout: bool

    @property
    def faulty(self) -> bool:
        return self.meta["category"] == "faulty"


def cases(where: Path) -> list[Case]:
    out = []
    for sidecar in sorted(where.glob("*.source.yaml")):
        name = sidecar.name.removesuffix(".source.yaml")
        [path] = [p for p in where.glob(name + ".*") if p != sidecar]
        out.append(Case(name, path, yaml.safe_load(sidecar.read_text()), where == HELDOUT))
    return out


CASES = cases(REAL) + cases(HELDOUT)


def run(case: Case) -> tuple[list[LogFinding], float]:
    text = case.path.read_text()
    start = time.perf_counter()
    found = (
        diagnose({case.path.name: text}, {}) if case.meta["kind"] == "nccl" else diagnose({}, {case.path.name: text})
    )
    return found, time.perf_counter() - start


def top(found: list[LogFinding]) -> str:
    return next((f.check for f in found if f.severity != "info"), "none")


def test_corpus_size_and_sidecars() -> None:
    kinds = Counter((c.meta["kind"], c.meta["category"]) for c in CASES if not c.heldout)
    assert kinds[("nccl", "faulty")] + kinds[("nccl", "healthy")] >= 20
    assert kinds[("node", "faulty")] + kinds[("node", "healthy")] >= 8
    for c in CASES:
        assert set(c.meta) == FIELDS, c.name
        assert str(c.meta["source"]).startswith("https://github.com/"), c.name
        assert c.meta["category"] in ("faulty", "healthy") and c.meta["kind"] in ("nccl", "node"), c.name
        assert (c.meta["expected_top"] == "none") == (not c.faulty), c.name


@pytest.mark.parametrize("case", CASES, ids=[("heldout/" if c.heldout else "") + c.name for c in CASES])
def test_expected_top_finding(case: Case) -> None:
    found, took = run(case)
    assert took < 1.0
    assert top(found) == case.meta["expected_top"], [(f.severity, f.check, f.message) for f in found]
    if not case.faulty:
        assert all(f.severity == "info" for f in found)
    assert all(f.hint for f in found if f.severity != "info")  # every finding above info says what to change


# The score each set reached when it was pinned: (faulty inputs, right cause first, found). docs/diagnose.md reports the same;
# the held-out set scored (9, 7, 7) before the checks were changed for it.
PINNED = {False: (19, 19, 19), True: (9, 9, 9)}


def score(heldout: bool) -> tuple[int, int, int]:
    faulty = [c for c in CASES if c.faulty and c.heldout == heldout]
    top1 = found = 0
    for c in faulty:
        findings, _ = run(c)
        top1 += top(findings) == c.meta["expected_top"]
        found += any(f.check == c.meta["expected_top"] and f.severity != "info" for f in findings)
    return len(faulty), top1, found


@pytest.mark.parametrize("heldout", [False, True], ids=["tuned", "heldout"])
def test_corpus_score_does_not_regress(heldout: bool) -> None:
    faulty, top1, found = score(heldout)
    pinned_faulty, pinned_top1, pinned_found = PINNED[heldout]
    assert faulty >= pinned_faulty
    assert (top1, found) >= (pinned_top1, pinned_found)
    if not heldout:
        assert top1 >= 0.8 * faulty and found >= 0.95 * faulty
