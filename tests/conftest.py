"""The whole suite collects garbage at synth's thresholds (gpufleet.base.collector).

The suite keeps parsed schemas and synthesised trees alive for reuse (tests/upstream.py, tests/synthesized.py), and
each full collection walks all of them: at the interpreter's default thresholds collection took about 15 s of the
suite's CPU (95 s against 110 s wall for the whole suite on 2 cores). Tests of the thresholds themselves set the
defaults back (tests/components/test_synth_scaling.py)."""

from __future__ import annotations

import gc
from typing import Any

from gpufleet.base.collector import THRESHOLDS
from tests import rdma_fiction
from tests.upstream import FETCH_COMMAND, MISSING

gc.set_threshold(*THRESHOLDS)


rdma_fiction.apply()


def upstream_skip_summary(skipped: list[Any]) -> str | None:
    """One line for every test skipped for want of the upstream files, naming the command that fetches them (issue
    35 item 10): a clone without ../shared skips a quarter of the suite, which pytest's own summary lists by reason
    and location, not by what to do."""
    missing = sum(1 for report in skipped if MISSING in str(getattr(report, "longrepr", "")))
    if not missing:
        return None
    return (
        f"gpufleet: {missing} test(s) skipped: the pinned upstream CRDs and chart values are not here; fetch them with"
        f" `{FETCH_COMMAND}` and run the tests with GPUFLEET_UPSTREAM_DIR set to its cache"
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    line = upstream_skip_summary(terminalreporter.stats.get("skipped", []))
    if line:
        terminalreporter.write_line(line, yellow=True, bold=True)
