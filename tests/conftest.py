"""The whole suite collects garbage at synth's thresholds (gpufleet.base.collector).

The suite keeps parsed schemas and synthesised trees alive for reuse (tests/upstream.py, tests/synthesized.py), and
each full collection walks all of them: at the interpreter's default thresholds collection took about 15 s of the
suite's CPU (95 s against 110 s wall for the whole suite on 2 cores). Tests of the thresholds themselves set the
defaults back (tests/components/test_synth_scaling.py)."""

from __future__ import annotations

import gc

from gpufleet.base.collector import THRESHOLDS
from tests import rdma_fiction

gc.set_threshold(*THRESHOLDS)


rdma_fiction.apply()
