"""The box's processes: each started in a process group of its own with its output in a log file, and every one
stopped (SIGTERM, then SIGKILL after a grace period) when the box closes, when the interpreter exits, and on SIGINT,
SIGTERM or SIGHUP, so a failed or interrupted run leaves nothing running."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

_RUNNING: list[Process] = []
_HANDLED = False


class Process:
    def __init__(self, name: str, argv: Sequence[str], log_dir: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self._out = self.log.open("ab")
        self.popen = subprocess.Popen(
            list(argv),
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        _RUNNING.append(self)
        _install_handlers()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)
        if self.alive():
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._out.close()


def wait_for(what: str, ready: Callable[[], bool], process: Process | None = None, timeout: float = 120.0) -> None:
    """Poll until ready() or fail with the process's last log lines (it exited, or the deadline passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and not process.alive():
            raise RuntimeError(f"{process.name} exited ({process.popen.returncode}) before {what}:\n{process.tail()}")
        try:
            if ready():
                return
        except Exception:  # noqa: BLE001 - not up yet: connection refused, TLS not served, 5xx
            pass
        time.sleep(0.2)
    tail = f":\n{process.tail()}" if process is not None else ""
    raise TimeoutError(f"{what} not ready after {timeout:.0f} s{tail}")


def stop_all() -> None:
    for p in reversed(list(_RUNNING)):
        p.stop(grace=5.0)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    stop_all()
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    global _HANDLED
    if _HANDLED:
        return
    _HANDLED = True
    atexit.register(stop_all)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler, None):
            signal.signal(sig, _on_signal)
