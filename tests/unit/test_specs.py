"""The spec corpus: every broken spec fails with exactly the text a user reads; every valid one passes.

Each `tests/specs/invalid/<case>.yaml` starts from `tests/specs/valid/minimal.yaml` and changes one thing (its
first line says what). Next to it, `<case>.err` is the complete stderr of

    gpufleet validate tests/specs/invalid/<case>.yaml

run from the repository root: `FILE:LINE:COL: PATH: message`, the source line, a caret, the hint, and the count.
The test compares the text exactly; it never rewrites a golden file. After a deliberate change of a message,
regenerate the goldens and read the diff before committing:

    .venv/bin/python tests/specs/regen.py            # all cases, or name some: regen.py efa-without-zone

A new case without its .err file fails here until the golden is written (and reviewed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "tests" / "specs"
INVALID = sorted(p.relative_to(ROOT).as_posix() for p in (SPECS / "invalid").glob("*.yaml"))
VALID = sorted(p.relative_to(ROOT).as_posix() for p in (SPECS / "valid").glob("*.yaml")) + ["fleet.yaml"]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the goldens name the file as passed: tests/specs/invalid/<case>.yaml


def _validate(capsys: pytest.CaptureFixture[str], path: str) -> tuple[int, str, str]:
    code = main(["validate", path])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_corpus_is_large_enough() -> None:
    assert len(INVALID) >= 40, INVALID
    assert "tests/specs/valid/minimal.yaml" in VALID


def test_every_golden_has_its_spec() -> None:
    orphans = [p.name for p in (SPECS / "invalid").glob("*.err") if not p.with_suffix(".yaml").exists()]
    assert orphans == []


@pytest.mark.parametrize("case", INVALID, ids=lambda c: Path(c).stem)
def test_invalid_spec_fails_with_the_golden_text(capsys: pytest.CaptureFixture[str], case: str) -> None:
    code, out, err = _validate(capsys, case)
    golden = ROOT / Path(case).with_suffix(".err")
    if not golden.exists():
        pytest.fail(
            f"{golden.relative_to(ROOT)} is missing; write it with `python tests/specs/regen.py {golden.stem}` and"
            f" review it\n--- stderr was:\n{err}"
        )
    assert "Traceback" not in out + err
    assert (code, out) == (1, "")
    assert err == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", INVALID, ids=lambda c: Path(c).stem)
def test_invalid_spec_reports_in_file_order(capsys: pytest.CaptureFixture[str], case: str) -> None:
    _, _, err = _validate(capsys, case)
    heads = [line for line in err.splitlines() if line.startswith(case + ":") and not line.endswith(" error(s)")]
    assert heads, err
    positions = [tuple(int(n) for n in line[len(case) + 1 :].split(":", 2)[:2]) for line in heads]
    assert positions == sorted(positions)
    assert err.splitlines()[-1] == f"{case}: {len(heads)} error(s)"


@pytest.mark.parametrize("spec", VALID, ids=lambda c: Path(c).stem)
def test_valid_spec_passes(capsys: pytest.CaptureFixture[str], spec: str) -> None:
    code, out, err = _validate(capsys, spec)
    assert "Traceback" not in out + err
    assert code == 0, err
    assert out.startswith(f"{spec}: valid (environments: ")
