"""Linear time, measured against itself: how the cost of one piece of work grows with its input, in the same run.

A wall-clock budget ("under 0.5 s") fails whenever the machine is busy, and passes a quadratic parser on a fast one.
The ratio of two sizes of the same input does neither: a linear parser takes about k times as long on k times the
input, a quadratic one k squared times, whatever the machine's speed. `assert_linear` times `work(n)` on each size
of a ladder and holds every step to SLACK times the size ratio: with steps of 8, linear is at most 8 (less where a
fixed cost dominates the small size), quadratic 64, and the limit 24.

Noise only ever adds time. The smaller size is the best of three runs (its true cost, or above it, which only eases
the step); a larger size over the limit is run again, up to RETRIES times in all, and its best is judged, so a burst
of load during one run does not fail the test while a parser that is really quadratic fails every run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

SLACK = 3.0
RETRIES = 5


def best_time(work: Callable[[int], object], size: int, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work(size)
        best = min(best, time.perf_counter() - start)
    return best


def assert_linear(work: Callable[[int], object], sizes: Sequence[int], what: str = "") -> None:
    """`work(n)` does the work on an input of size n (only what should be linear: build the input outside it, or
    make building it a small part)."""
    for small, large in zip(sizes, sizes[1:], strict=False):
        base = best_time(work, small, 3)
        limit = SLACK * large / small
        took = best_time(work, large, 1)
        for _ in range(RETRIES - 1):
            if took <= limit * base:
                break
            took = min(took, best_time(work, large, 1))
        assert took <= limit * base, (
            f"{what}: {large} took {took / base:.1f} times as long as {small} ({took:.4f} s vs {base:.4f} s);"
            f" linear is at most {large / small:g} times, the limit {limit:g}"
        )
