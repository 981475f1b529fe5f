"""Fewer runs of Python's cyclic garbage collector while synth builds a fleet's tree.

Synth holds tens of thousands of live objects per node group (the plan, and the Outputs, futures and tasks of every
registration). Each collection of the older generations walks all of them, so at the default thresholds
(700, 10, 10) collection grows faster than the fleet (docs/performance.md). mypy runs its builds
under the same thresholds for the same reason (python/mypy mypy/build.py `build`: "Run gc less frequently, as
otherwise we can spend a large fraction of cpu in gc"). The collector is not turned off: the runtime's futures
and Outputs become cyclic garbage when a run ends, and they are still collected, only in fewer, larger passes.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

THRESHOLDS = (200_000, 30, 30)


@contextlib.contextmanager
def rare_collections() -> Iterator[None]:
    """Collect at THRESHOLDS within the block (or as the decorated function), then at the previous thresholds."""
    previous = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
