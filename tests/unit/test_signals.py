"""Signals at the edges of a run (issue 26 item 7): 130 for SIGINT and 143 for SIGTERM wherever they land, cleanup
always, never a traceback; and once synth has committed its tree, a signal no longer changes the outcome.

Before: SIGTERM while the command's module was imported (the first few tenths of a second) was a traceback and exit
1, SIGINT before main a KeyboardInterrupt traceback, a signal after the commit killed the process by the signal
although the tree was written, and a signal landing as the staging directory was created could leave it behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpufleet import cli
from gpufleet.cli import main
from gpufleet.commands import synth as synth_command
from gpufleet.plan.rollout import build_plan
from gpufleet.tree import output
from tests.synthesized import tree_of

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "tests/specs/valid/minimal.yaml"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fleet.yaml").write_text(MINIMAL.read_text())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("exc", "code"), [(cli.Terminated, 143), (KeyboardInterrupt, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_command_module_is_imported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: type[BaseException], code: int
) -> None:
    def interrupted(name: str) -> Any:
        raise exc()

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    assert main(["validate", "fleet.yaml"]) == code
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("exc", "code"), [(cli.Terminated, 143), (KeyboardInterrupt, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_before_the_command_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: type[BaseException], code: int
) -> None:
    def interrupted(previous: object) -> Any:
        raise exc()

    monkeypatch.setattr(cli, "keep_interrupts", interrupted)
    assert main(["validate", "fleet.yaml"]) == code
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_as_staging_is_created_leaves_nothing_behind(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    real = synth_command.prepare

    def prepare_then_signal(out: str, spec: str | None = None) -> output.Staging:
        staging = real(out, spec)
        signal.raise_signal(sig)  # the moment prepare returns: the staging directory exists
        return staging

    monkeypatch.setattr(synth_command, "prepare", prepare_then_signal)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["synth", "fleet.yaml", "--env", "dev", "--out", "out/dev"]) == (
            130 if sig == signal.SIGINT else 143
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sorted(p.name for p in workdir.iterdir()) == ["fleet.yaml"]
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_the_commit_does_not_change_the_outcome(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    """In-process: the run succeeds and the signal that arrived after the commit is dropped with it."""
    tree = tree_of(MINIMAL, "dev")
    monkeypatch.setattr(synth_command, "synth_tree", lambda fleet, env: (build_plan(fleet, env), tree))
    real = output.Staging.commit

    def commit_then_signal(self: output.Staging, tree: Any, **kwargs: Any) -> None:
        real(self, tree, **kwargs)
        signal.raise_signal(sig)

    monkeypatch.setattr(output.Staging, "commit", commit_then_signal)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["synth", "fleet.yaml", "--env", "dev", "--out", "out/dev"]) == 0
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (workdir / "out/dev/plan.json").is_file()
    assert capsys.readouterr().out.startswith("wrote out/dev: ")
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()  # nothing left blocked


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_the_console_script_exits_0_when_a_signal_follows_the_commit(tmp_path: Path, sig: str) -> None:
    """The console script: the process exits 0 with the tree, neither 130/143 nor killed by the signal."""
    (tmp_path / "fleet.yaml").write_text(MINIMAL.read_text())
    script = (
        "import signal, sys\n"
        "from gpufleet import cli\n"
        "from gpufleet.tree import output\n"
        "real = output.Staging.commit\n"
        "def commit(self, tree, **kw):\n"
        "    real(self, tree, **kw)\n"
        f"    signal.raise_signal(signal.{sig})\n"
        "output.Staging.commit = commit\n"
        "sys.argv = ['gpufleet', 'synth', 'fleet.yaml', '--env', 'dev', '--out', 'out/dev']\n"
        "cli.entry()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("wrote out/dev: ")
    assert (tmp_path / "out/dev/plan.json").is_file()
