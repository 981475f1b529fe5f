"""Interrupts that a finalizer swallowed: kept by the CLI's unraisable hook, raised again where a run may still stop.

Why, with sources: docs/commands.md, "Design notes", gpufleet/base/interrupts.py.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_swallowed: list[BaseException] = []


def keep_interrupts(previous: Callable[[sys.UnraisableHookArgs], object]) -> Callable[[sys.UnraisableHookArgs], None]:
    """An unraisable hook that keeps interrupts for raise_interrupt() and hands anything else to `previous`."""

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if unraisable.exc_value is not None and not isinstance(unraisable.exc_value, Exception):
            _swallowed.append(unraisable.exc_value)
        else:
            previous(unraisable)

    return hook


def raise_interrupt() -> None:
    """Raise an interrupt that a finalizer swallowed, if any (once)."""
    if _swallowed:
        exc = _swallowed[0]
        _swallowed.clear()
        raise exc


_DEFERRED = {signal.SIGINT, signal.SIGTERM}
_outer: list[set[int | signal.Signals]] = []  # the mask before each signals_deferred() still open, outermost first
_run: list[set[int | signal.Signals]] = []  # the mask to restore when the run ends, once defer_signals() was called


@contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the block runs (a swap of directories, a cleanup, the creation of a staging
    directory), then arrive; unless defer_signals() was called inside, which keeps them waiting until the run ends."""
    _outer.append(signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED))
    try:
        yield
    finally:
        previous = _outer.pop()
        if not _run:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def defer_signals() -> None:
    """From now until the run ends, SIGINT and SIGTERM wait: the run's outcome is decided (synth's tree is committed),
    and a signal must neither change its exit code nor kill the process by its default action.

    Why: docs/commands.md, "Design notes", interrupts.defer_signals."""
    if not _run:
        current = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
        _run.append(_outer[0] if _outer else current)


def end_deferral() -> None:
    """Let signals in again (main() run in-process, at its end). One that arrived since defer_signals() is dropped,
    as the console script's exit drops it: the run it would have stopped is over."""
    if _run:
        while signal.sigpending() & _DEFERRED:
            signal.sigtimedwait(_DEFERRED, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, _run.pop())
