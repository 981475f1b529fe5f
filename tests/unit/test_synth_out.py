"""`synth --out` writes only where it may: absent, empty, or a tree gpufleet wrote (issue 14 item 1).

Every refusal exits 2 before synthesis starts and leaves the file system exactly as it was; a failure or a
signal during synthesis removes the staging directory and any parent directory synth created; concurrent
writers all succeed and leave nothing but the tree.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pulumi
import pytest

from gpufleet import cli
from gpufleet.base import interrupts
from gpufleet.cli import main
from gpufleet.commands import synth as synth_command
from gpufleet.commands import validate as validate_command
from gpufleet.components.recording import RecordingMocks, run_under_mocks
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.tree import output
from gpufleet.tree.output import write_tree
from gpufleet.tree.write import OPTION_DEFAULTS, Tree, render
from tests.synthesized import tree_of
from tools.benchmark import generated_fleet

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "tests/specs/valid/minimal.yaml"


@pytest.fixture(scope="module")
def mini_tree() -> Tree:
    return tree_of(MINIMAL, "dev")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the spec and a file of the user's."""
    (tmp_path / "fleet.yaml").write_text(MINIMAL.read_text())
    (tmp_path / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def no_synthesis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refusals must come before synthesis: reaching it fails the test."""

    def fail(*_: object) -> None:
        raise AssertionError("synthesised although the target was refused")

    monkeypatch.setattr(synth_command, "synth_tree", fail)


@pytest.fixture
def fake_synthesis(monkeypatch: pytest.MonkeyPatch, mini_tree: Tree) -> None:
    monkeypatch.setattr(synth_command, "synth_tree", lambda fleet, env: (build_plan(fleet, env), mini_tree))


def snapshot(root: Path) -> dict[str, str | None]:
    """Every entry under root (hidden ones included) with its content; None for a directory."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_text() for p in sorted(root.rglob("*"))}


def synth(capsys: pytest.CaptureFixture[str], out: str) -> tuple[int, str, str]:
    code = main(["synth", "fleet.yaml", "--env", "dev", "--out", out])
    stdout, stderr = capsys.readouterr()
    assert "Traceback" not in stdout + stderr
    return code, stdout, stderr


@pytest.mark.usefixtures("no_synthesis")
@pytest.mark.parametrize(
    ("out", "setup", "reason"),
    [
        (".", None, "holds the spec fleet.yaml; write the tree to a directory of its own"),
        ("fleet.yaml", None, "not a directory"),
        ("notes.txt/tree", None, "cannot write in notes.txt: Not a directory"),
        ("/proc/gpufleet-out", None, "cannot write in /proc: No such file or directory"),
        ("", None, "an empty path; name a directory"),
        ("/", None, "the root directory"),
        ("docs", "foreign", "not empty and not a tree gpufleet wrote (no plan.json); give a new or empty directory"),
        (
            "docs",
            "bad-plan",
            (
                'not empty and not a tree gpufleet wrote (plan.json does not say format "gpufleet synth tree"); give a'
                " new or empty directory"
            ),
        ),
        ("link", "symlink", "a symbolic link; give the directory it points to, or a new one"),
    ],
    ids=[
        "spec-dir",
        "spec-file",
        "under-a-file",
        "proc",
        "empty-path",
        "root",
        "foreign-dir",
        "foreign-plan-json",
        "symlink",
    ],
)
def test_a_target_that_is_not_ours_is_refused_before_synthesis(
    capsys: pytest.CaptureFixture[str], workdir: Path, out: str, setup: str | None, reason: str
) -> None:
    if setup in ("foreign", "bad-plan"):
        (workdir / "docs").mkdir()
        (workdir / "docs/plan.json").write_text('{"fleet": "x"}' if setup == "bad-plan" else "")
        if setup == "foreign":
            (workdir / "docs/plan.json").unlink()
            (workdir / "docs/README").write_text("theirs\n")
    elif setup == "symlink":
        (workdir / "elsewhere").mkdir()
        (workdir / "link").symlink_to("elsewhere")
    before = snapshot(workdir)
    assert synth(capsys, out) == (2, "", f"gpufleet synth: error: --out {out}: {reason}\n")
    assert snapshot(workdir) == before


@pytest.mark.usefixtures("no_synthesis")
@pytest.mark.parametrize("out", [".", "..", "../.."])
def test_the_working_directory_and_its_parents_are_refused(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    (workdir / "fleet.yaml").rename(workdir / "spec.yaml")
    (workdir / "a/b").mkdir(parents=True)
    monkeypatch.chdir(workdir / "a/b")
    before = snapshot(workdir)
    assert main(["synth", "../../spec.yaml", "--env", "dev", "--out", out]) == 2
    reason = (
        "the working directory or one of its parents"
        if out != "../.."
        else "holds the spec ../../spec.yaml; write the tree to a directory of its own"
    )
    assert capsys.readouterr().err == f"gpufleet synth: error: --out {out}: {reason}\n"
    assert snapshot(workdir) == before


@pytest.mark.usefixtures("no_synthesis")
def test_a_tree_of_ours_with_a_file_of_the_users_is_not_replaced(
    capsys: pytest.CaptureFixture[str], workdir: Path, mini_tree: Tree
) -> None:
    write_tree(mini_tree, "out/dev")
    (workdir / "out/dev/01-foundation/review-notes.md").write_text("mine\n")
    before = snapshot(workdir)
    assert synth(capsys, "out/dev") == (
        2,
        "",
        (
            "gpufleet synth: error: --out out/dev: not empty and not a tree gpufleet wrote "
            "(01-foundation/review-notes.md is not part of a synth tree); give a new or empty directory\n"
        ),
    )
    assert snapshot(workdir) == before


def earlier_tree(tree: Tree) -> Tree:
    """A tree as an earlier synth wrote it (sealed: digest and hashes hold), with a file the new tree lacks."""
    summary = {key: value for key, value in json.loads(tree.files["plan.json"]).items() if key != "digest"}
    old = {"id": "old-bucket", "name": "old-bucket", "stage": "foundation", "type": "aws:s3/bucket:Bucket"}
    return render(summary, [{**OPTION_DEFAULTS, **old, "inputs": {"bucket": "old"}}], "an earlier plan\n")


# Issue 26 item 1: a file whose name fits the layout but that no inventory entry names, or an edit to a file synth
# wrote, is the user's: the tree is not replaced (the swap used to remove such files with exit 0).
@pytest.mark.usefixtures("no_synthesis")
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"01-foundation/k8s/NetworkPolicy-mine.yaml": "kind: NetworkPolicy\n"},
            "01-foundation/k8s/NetworkPolicy-mine.yaml is the file of no resource in inventory.json",
        ),
        (
            {"42-backup/aws/notes.yaml": "mine\n"},
            "42-backup/aws/notes.yaml is the file of no resource in inventory.json",
        ),
        (
            {"01-foundation/aws/old-bucket.yaml": "edited: by hand\n"},
            "01-foundation/aws/old-bucket.yaml differs from what synth wrote (its sha256 in inventory.json does not"
            " match)",
        ),
        (
            {"plan.md": "my review notes\n"},
            "plan.json, plan.md or inventory.json differ from what synth wrote (the digest in plan.json does not match)",
        ),
        ({"inventory.json": None}, "no inventory.json"),
    ],
    ids=["user-file-in-a-stage", "user-stage", "edited-file", "edited-plan-md", "no-inventory"],
)
def test_a_tree_of_ours_with_a_file_of_the_users_that_fits_the_layout_is_not_replaced(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    mini_tree: Tree,
    change: dict[str, str | None],
    reason: str,
) -> None:
    write_tree(earlier_tree(mini_tree), "out/dev")
    for rel, text in change.items():
        path = workdir / "out/dev" / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    before = snapshot(workdir)
    assert synth(capsys, "out/dev") == (
        2,
        "",
        f"gpufleet synth: error: --out out/dev: not empty and not a tree gpufleet wrote ({reason}); give a new or"
        " empty directory\n",
    )
    assert snapshot(workdir) == before


@pytest.mark.usefixtures("no_synthesis")
def test_a_tree_of_ours_with_a_fifo_is_not_read_or_replaced(
    capsys: pytest.CaptureFixture[str], workdir: Path, mini_tree: Tree
) -> None:
    write_tree(earlier_tree(mini_tree), "out/dev")
    os.mkfifo(workdir / "out/dev/01-foundation/aws/pipe.yaml")  # reading it would block forever
    assert synth(capsys, "out/dev") == (
        2,
        "",
        "gpufleet synth: error: --out out/dev: not empty and not a tree gpufleet wrote (01-foundation/aws/pipe.yaml is"
        " not a regular file); give a new or empty directory\n",
    )
    assert (workdir / "out/dev/01-foundation/aws/pipe.yaml").is_fifo()


@pytest.mark.usefixtures("no_synthesis")
def test_a_tree_of_ours_holding_the_spec_is_not_replaced(
    capsys: pytest.CaptureFixture[str], workdir: Path, mini_tree: Tree
) -> None:
    write_tree(mini_tree, "out/dev")
    (workdir / "fleet.yaml").rename(workdir / "out/dev/fleet.yaml")
    assert main(["synth", "out/dev/fleet.yaml", "--env", "dev", "--out", "out/dev"]) == 2
    assert (
        capsys.readouterr().err
        == "gpufleet synth: error: --out out/dev: holds the spec out/dev/fleet.yaml; write the tree to a directory of"
        " its own\n"
    )
    assert (workdir / "out/dev/fleet.yaml").read_text() == MINIMAL.read_text()


@pytest.mark.usefixtures("fake_synthesis")
@pytest.mark.parametrize("existing", ["absent", "empty", "ours"])
def test_absent_empty_and_own_targets_are_written(
    capsys: pytest.CaptureFixture[str], workdir: Path, mini_tree: Tree, existing: str
) -> None:
    if existing == "empty":
        (workdir / "out/dev").mkdir(parents=True)
    elif existing == "ours":
        write_tree(earlier_tree(mini_tree), "out/dev")
        assert (workdir / "out/dev/01-foundation/aws/old-bucket.yaml").is_file()
    code, stdout, _ = synth(capsys, "out/dev")
    files = sum(1 for path in mini_tree.files if "/" in path)
    assert (code, stdout) == (0, f"wrote out/dev: {files} files, stages foundation, telemetry, admission\n")
    assert {k: v for k, v in snapshot(workdir / "out/dev").items() if v is not None} == dict(mini_tree.files)
    assert sorted(p.name for p in workdir.iterdir()) == ["fleet.yaml", "notes.txt", "out"]
    assert sorted(p.name for p in (workdir / "out").iterdir()) == ["dev"]


def test_the_tree_gets_the_umask_mode_not_the_staging_mode(workdir: Path, mini_tree: Tree) -> None:
    write_tree(mini_tree, "out/dev")
    assert (workdir / "out/dev").stat().st_mode & 0o777 == 0o777 & ~output._umask()


def test_an_invalid_spec_writes_nothing(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    (workdir / "fleet.yaml").write_text(MINIMAL.read_text().replace("maxSize: 4", "maxSize: four"))
    before = snapshot(workdir)
    assert synth(capsys, "out/a/b")[0] == 1
    assert snapshot(workdir) == before


def test_a_failed_synthesis_removes_staging_and_the_parents_it_created(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: object) -> None:
        assert any(workdir.glob("out/a/.b.gpufleet-staging-*")), "staging exists while synthesising"
        raise RuntimeError("boom")

    monkeypatch.setattr(synth_command, "synth_tree", boom)
    before = snapshot(workdir)
    assert main(["synth", "fleet.yaml", "--env", "dev", "--out", "out/a/b"]) == 3
    assert snapshot(workdir) == before


def test_a_target_that_turns_foreign_while_synthesising_is_left_alone(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch, mini_tree: Tree
) -> None:
    def meanwhile(fleet: object, env: str) -> tuple[object, Tree]:
        (workdir / "out").mkdir()
        (workdir / "out/theirs.txt").write_text("theirs\n")
        return None, mini_tree

    monkeypatch.setattr(synth_command, "synth_tree", meanwhile)
    code, _, err = synth(capsys, "out")
    assert (code, err) == (
        2,
        (
            "gpufleet synth: error: --out out: not empty and not a tree gpufleet wrote (no plan.json); give a new or"
            " empty directory\n"
        ),
    )
    assert sorted(p.name for p in workdir.iterdir()) == ["fleet.yaml", "notes.txt", "out"]
    assert snapshot(workdir / "out") == {"theirs.txt": "theirs\n"}


def _writer(target: str, tree: Tree, times: int) -> None:
    for _ in range(times):
        write_tree(tree, target)


@pytest.mark.parametrize("exchange", ["renameat2", "two-renames"])
def test_concurrent_writers_all_succeed_and_leave_only_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mini_tree: Tree, exchange: str
) -> None:
    if exchange == "two-renames":
        monkeypatch.setattr(output, "_renameat2", None)  # the fallback where the system cannot exchange
    else:
        assert output._renameat2 is not None, "this test runs on Linux with glibc"
    target = tmp_path / "out"
    write_tree(mini_tree, str(target))
    ctx = multiprocessing.get_context("fork")  # the patched module state carries over
    writers = [ctx.Process(target=_writer, args=(str(target), mini_tree, 15)) for _ in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=60)
    assert [w.exitcode for w in writers] == [0, 0, 0, 0]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert {k: v for k, v in snapshot(target).items() if v is not None} == dict(mini_tree.files)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_synthesis_removes_staging_and_exits_quietly(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    # A fleet whose synthesis takes seconds on any machine, so that the signal lands inside it (the minimal spec's
    # is over in well under a second).
    (tmp_path / "fleet.yaml").write_text(generated_fleet(24, 72))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpufleet.cli", "synth", "fleet.yaml", "--env", "prod", "--out", "out/prod"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a background job may inherit SIGINT ignored; the user's Ctrl-C is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("out/.prod.gpufleet-staging-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "synth never staged"
        time.sleep(0.02)
    time.sleep(0.5)  # into the synthesis
    proc.send_signal(sig)
    try:
        stdout, stderr = proc.communicate(timeout=90)  # generous: a loaded CI machine; a hang still fails
    finally:
        proc.kill()  # a no-op once it exited; never leave a hung synth behind
    assert (proc.returncode, stdout, stderr) == (code, "", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yaml"]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, cli.Terminated], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_inside_the_pulumi_event_loop_ends_the_recording(exc: type[BaseException]) -> None:
    """The signal handler raises in whatever the main thread runs, under synth mostly an asyncio task of the
    Pulumi runtime; asyncio lets only KeyboardInterrupt and SystemExit out of a task, so a SIGTERM raised as any
    other exception was kept in the task and synth went on (or waited forever)."""

    async def interrupted() -> None:
        raise exc()

    def program() -> None:
        asyncio.ensure_future(interrupted())

    with pytest.raises(exc):
        run_under_mocks(
            RecordingMocks(build_plan(load_fleet(str(MINIMAL), "dev").environments["dev"], "dev")), program, "dev"
        )


class _Stuck(RecordingMocks):
    """Mocks under which the registration of `stuck` does not end until `release` is set."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__(build_plan(load_fleet(str(MINIMAL), "dev").environments["dev"], "dev"))
        self.release = release

    def new_resource(self, args: Any) -> tuple[str | None, dict[str, Any]]:
        if args.name == "stuck":
            self.release.wait(30)
        return super().new_resource(args)


@pytest.mark.parametrize(
    ("sig", "exc"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, cli.Terminated)], ids=["SIGINT", "SIGTERM"]
)
def test_an_interrupt_the_pulumi_runtime_keeps_still_ends_the_recording(
    sig: signal.Signals, exc: type[BaseException]
) -> None:
    """A signal arriving while the Pulumi program runs raises in the program; the runtime keeps that exception
    until every outstanding registration has ended (pulumi/runtime/stack.py run_pulumi_func), and a registration
    may never end. The recording must end at once anyway, with the interrupt (it used to wait forever)."""
    release = threading.Event()

    def program() -> None:
        pulumi.CustomResource("test:index:Thing", "stuck", {})
        signal.raise_signal(sig)  # the signal arrives in the program while `stuck` is being registered

    handlers = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, cli._terminate),
    }
    start = time.monotonic()
    try:
        with pytest.raises(exc):
            run_under_mocks(_Stuck(release), program, "dev")
        assert time.monotonic() - start < 20, "the recording waited for the outstanding registration"
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == (
            signal.default_int_handler,
            cli._terminate,
        )
    finally:
        release.set()
        for s, handler in handlers.items():
            signal.signal(s, handler)


class _InterruptedFinalizer:
    """What a signal arriving while a finalizer runs looks like: the handler's exception raised inside __del__,
    which Python does not propagate (it used to print "Exception ignored in ..." and go on writing the tree)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "code"), [(KeyboardInterrupt(), 130), (cli.Terminated(), 143)], ids=["SIGINT", "SIGTERM"]
)
def test_an_interrupt_swallowed_by_a_finalizer_still_stops_the_write(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    mini_tree: Tree,
    exc: BaseException,
    code: int,
) -> None:
    def synthesis_interrupted_in_a_finalizer(fleet: object, env: str) -> tuple[object, Tree]:
        _InterruptedFinalizer(exc)  # collected at once: __del__ raises, Python swallows it
        return build_plan(fleet, env), mini_tree  # type: ignore[arg-type]

    monkeypatch.setattr(synth_command, "synth_tree", synthesis_interrupted_in_a_finalizer)
    assert synth(capsys, "out/dev") == (code, "", "")
    assert sorted(p.name for p in workdir.iterdir()) == ["fleet.yaml", "notes.txt"]


def test_an_interrupt_swallowed_by_a_finalizer_ends_any_command_as_an_interrupt(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = validate_command.open_spec

    def interrupted(*args: object) -> object:
        _InterruptedFinalizer(KeyboardInterrupt())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(validate_command, "open_spec", interrupted)
    assert main(["validate", "fleet.yaml"]) == 130
    assert capsys.readouterr().err == ""  # no "Exception ignored in ..."


def test_other_unraisable_exceptions_are_still_reported(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[BaseException | None] = []
    hook = interrupts.keep_interrupts(lambda u: seen.append(u.exc_value))
    previous, sys.unraisablehook = sys.unraisablehook, hook
    try:
        _InterruptedFinalizer(ValueError("a bug in a finalizer"))
    finally:
        sys.unraisablehook = previous
    assert [type(e) for e in seen] == [ValueError]
    interrupts.raise_interrupt()  # nothing kept: does not raise


_KILLED_WRITER = """
import os, signal, sys
from gpufleet.tree import output
output.prepare(sys.argv[1])
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_synth_killed_with_sigkill_leaves_staging_the_next_synth_removes(
    capsys: pytest.CaptureFixture[str], workdir: Path, fake_synthesis: None
) -> None:
    """Issue 47 item 7: SIGKILL leaves the staging directory beside --out, and each kill added one. The next
    successful synth of the same target removes those whose marker names it and whose writer is gone; another
    target's, a live writer's and a directory without the marker (not provably gpufleet's) stay."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(2):
        killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, "out/dev"], cwd=workdir, env=env, check=False)
        assert killed.returncode == -signal.SIGKILL
    other = subprocess.run([sys.executable, "-c", _KILLED_WRITER, "out/prod"], cwd=workdir, env=env, check=False)
    assert other.returncode == -signal.SIGKILL
    stale = sorted(p.name for p in (workdir / "out").glob(".dev.gpufleet-staging-*"))
    assert len(stale) == 2 and all((workdir / "out" / s / output.MARKER).is_file() for s in stale)
    (workdir / "out/.dev.gpufleet-staging-mine").mkdir()  # the user's, however it is named: no marker
    (workdir / "out/.dev.gpufleet-staging-mine/keep.txt").write_text("mine\n")
    live = output.prepare("out/dev")  # a concurrent writer, still running
    try:
        assert synth(capsys, "out/dev")[0] == 0
        left = sorted(p.name for p in (workdir / "out").iterdir())
        assert left == sorted(
            [
                ".dev.gpufleet-staging-mine",
                live.directory.name,
                *(p.name for p in (workdir / "out").glob(".prod.*")),
                "dev",
            ]
        )
        assert not set(stale) & set(left)
        assert (workdir / "out/.dev.gpufleet-staging-mine/keep.txt").read_text() == "mine\n"
        assert output.MARKER not in {p.name for p in (workdir / "out/dev").iterdir()}  # not part of the tree
    finally:
        live.discard()
