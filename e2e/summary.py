"""Lines a real-cluster run reports whatever passes (explain's agreement with the box, Karpenter's launches); the
e2e conftest prints them at the end of the session's summary, so `python -m pytest e2e` in CI shows them without -s.
A module of its own: the conftest and the tests then share one list whichever way pytest imports the conftest."""

from __future__ import annotations

LINES: list[str] = []
