"""Paths no file can have and files that are not regular files (issue 26 items 6 and 8).

A name component over 255 bytes made synth, check, diff and init exit 3 (ENAMETOOLONG outside their error
handling), and a legal 230-255-byte `--out` was refused because the staging name beside it was longer. A FIFO as a
spec, manifest or log blocked forever. Now: exit 2 with the reason, nothing written; any legal name works.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.tree.output import write_tree
from tests.synthesized import tree_of

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "tests/specs/valid/minimal.yaml"
TOO_LONG = "a" * 256
LONGEST = "b" * 255
LONG_REASON = "a name in the path is 256 bytes long; the file system allows 255"
JOB = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c}]}}}\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fleet.yaml").write_text(MINIMAL.read_text())
    (tmp_path / "job.yaml").write_text(JOB)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def entries(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (
            ["synth", "fleet.yaml", "--env", "dev", "--out", TOO_LONG],
            f"gpufleet synth: error: --out {TOO_LONG}: {LONG_REASON}",
        ),
        (
            ["synth", "fleet.yaml", "--env", "dev", "--out", f"x/{TOO_LONG}/y"],
            f"gpufleet synth: error: --out x/{TOO_LONG}/y: {LONG_REASON}",
        ),
        (["check", TOO_LONG], f"gpufleet check: error: {TOO_LONG} is not a synth tree: {LONG_REASON}"),
        (["diff", "old", TOO_LONG], f"gpufleet diff: error: {TOO_LONG} is not a synth tree: {LONG_REASON}"),
        (["init", "--out", TOO_LONG], f"gpufleet init: error: --out {TOO_LONG}: {LONG_REASON}"),
        (["validate", TOO_LONG], f"gpufleet validate: error: cannot read {TOO_LONG}: File name too long"),
        (["diagnose", "--nccl-log", TOO_LONG], f"gpufleet diagnose: error: cannot read {TOO_LONG}: File name too long"),
        (
            ["explain", "fleet.yaml", "--env", "dev", TOO_LONG],
            f"gpufleet explain: error: {TOO_LONG}: cannot read: File name too long",
        ),
    ],
    ids=["synth", "synth-nested", "check", "diff", "init", "validate", "diagnose", "explain"],
)
def test_a_name_too_long_for_the_file_system_exits_2(
    workdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], err: str
) -> None:
    if argv[0] == "diff":
        write_tree(tree_of(MINIMAL, "dev"), str(workdir / "old"))
    before = entries(workdir)
    assert main(argv) == 2
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", err + "\n")
    assert entries(workdir) == before


@pytest.mark.parametrize("command", ["synth", "init"])
def test_the_longest_legal_name_is_written(workdir: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """The staging name beside it drops the target's name where keeping it would be too long."""
    argv = (
        ["synth", "fleet.yaml", "--env", "dev", "--out", LONGEST] if command == "synth" else ["init", "--out", LONGEST]
    )
    assert main(argv) == 0
    capsys.readouterr()
    assert (workdir / LONGEST).exists()
    assert sorted(p.name for p in workdir.iterdir()) == sorted(["fleet.yaml", "job.yaml", LONGEST])


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (["validate", "pipe"], "gpufleet validate: error: cannot read pipe: a named pipe (FIFO), not a regular file"),
        (
            ["explain", "fleet.yaml", "--env", "dev", "pipe"],
            "gpufleet explain: error: pipe: cannot read: a named pipe (FIFO), not a regular file",
        ),
        (
            ["explain", "pipe", "--env", "dev", "job.yaml"],
            "gpufleet explain: error: pipe: cannot read: a named pipe (FIFO), not a regular file",
        ),
        (
            ["diagnose", "--nccl-log", "pipe"],
            "gpufleet diagnose: error: cannot read pipe: a named pipe (FIFO), not a regular file",
        ),
        (
            ["diagnose", "--node-describe", "pipe"],
            "gpufleet diagnose: error: cannot read pipe: a named pipe (FIFO), not a regular file",
        ),
        (
            ["explain", "fleet.yaml", "--env", "dev", "/dev/zero"],
            "gpufleet explain: error: /dev/zero: cannot read: a device, not a regular file",
        ),
        (
            ["diagnose", "--nccl-log", "/dev/zero"],
            "gpufleet diagnose: error: cannot read /dev/zero: a device, not a regular file",
        ),
    ],
    ids=["spec", "manifest", "manifest-first", "nccl-log", "node-describe", "manifest-dev-zero", "log-dev-zero"],
)
def test_a_file_that_is_not_a_regular_file_is_refused_at_once(
    workdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], err: str
) -> None:
    os.mkfifo(workdir / "pipe")
    unblocked: list[bool] = []

    def unblock() -> None:  # the command blocked on the FIFO: give it a writer so that the test ends, and fail
        unblocked.append(True)
        with open(workdir / "pipe", "w"):
            pass

    watchdog = threading.Timer(10, unblock)
    watchdog.daemon = True
    watchdog.start()
    try:
        code = main(argv)
    finally:
        watchdog.cancel()
    assert not unblocked, f"gpufleet {' '.join(argv)} blocked on a FIFO"
    assert code == 2
    out = capsys.readouterr()
    assert (out.out, out.err.splitlines()[-1]) == ("", err)
