"""Fewer runs of Python's cyclic garbage collector while synth builds a fleet's tree.

Why, with sources: docs/commands.md, "Design notes", gpufleet/base/collector.py.
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
