"""Interrupts that a finalizer swallowed: kept by the CLI's unraisable hook, raised again where a run may still stop.

An interrupt (Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM exception) that a signal handler raised while a
finalizer ran (an asyncio event loop's __del__ during the Pulumi program, say) is not propagated: Python reports it
as "Exception ignored in ..." and goes on (https://docs.python.org/3/library/sys.html#sys.unraisablehook). Without
this, such a signal would be lost and the tree written anyway. The hook keeps it, silently, and the commit of a tree
(gpufleet.tree.output) and the CLI when a command ends raise it again. Standard library only: the CLI installs the hook
before it knows which command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

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
