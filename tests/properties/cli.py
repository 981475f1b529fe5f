"""Run the CLI in-process in a scratch directory and check the contract every property shares: never exit 3,
never a traceback, and nothing created, changed or removed in the directory when the exit code is not 0."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hypothesis import event

from gpufleet.cli import main


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str


def snapshot(root: Path) -> dict[str, bytes | str | None]:
    """Every entry under root, hidden ones included: a file's bytes, a symbolic link's target, None for a directory."""
    return {p.relative_to(root).as_posix(): _entry(p) for p in sorted(root.rglob("*"))}


def _entry(path: Path) -> bytes | str | None:
    if path.is_symlink():
        return f"-> {path.readlink()}"
    return None if path.is_dir() else path.read_bytes()


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A fresh directory, made the working directory for the example and removed after it."""
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="gpufleet-prop-") as directory:
        os.chdir(directory)
        try:
            yield Path(directory)
        finally:
            os.chdir(previous)


def run(argv: Sequence[str], root: Path) -> Run:
    """gpufleet ARGV in root (the working directory), asserting the shared contract."""
    before = snapshot(root)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    result = Run(code, out.getvalue(), err.getvalue())
    event(f"{argv[0]} exit {code}")  # --hypothesis-show-statistics tells how deep the examples reached
    assert code != 3 and "Traceback" not in result.stdout + result.stderr, (
        f"gpufleet {' '.join(argv)}: exit {code}\n{result.stderr}"
    )
    assert code in (0, 1, 2), f"gpufleet {' '.join(argv)}: unexpected exit {code}"
    if code != 0:
        assert snapshot(root) == before, f"gpufleet {' '.join(argv)} exited {code} and changed {root}"
    return result
