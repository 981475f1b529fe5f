"""Hypothesis profiles for the property suite (issue 14 item 7).

`ci` (the default, and what CI runs): a bounded number of examples per property, derandomized so every run
draws the same examples and no example database is read or written; the whole directory takes a few seconds.
`long` (local runs): many more examples, random each run, failures kept in .hypothesis/ and replayed first:

    HYPOTHESIS_PROFILE=long python -m pytest tests/properties
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Each example runs the CLI in-process; a synth example takes about half a second, so no per-example deadline
# (a slow shared machine must not turn into a flaky failure), and the suppressed health checks are about speed.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=20, derandomize=True, database=None, deadline=None, suppress_health_check=_QUIET, print_blob=True
)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
