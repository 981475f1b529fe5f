"""The README is for users; contributors' matters are in CONTRIBUTING.md and docs/ (issue 35 item 11)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_the_user_guide_comes_first_and_internals_last() -> None:
    headings = re.findall(r"^## (.+)$", README, re.M)
    user = ["Quick start (fresh machine)", "Commands", "Deploying with Pulumi", "Review and policy in CI"]
    assert all(h in headings for h in user + ["Known limitations", "Contributing", "Layout"])
    assert max(headings.index(h) for h in user + ["Known limitations"]) < headings.index("Contributing")
    assert headings[-2:] == ["Contributing", "Layout"]
    assert "Performance" not in headings and (ROOT / "docs" / "performance.md").is_file()
    assert "[CONTRIBUTING.md](CONTRIBUTING.md)" in README


def test_contributing_names_every_check_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("ruff format --check .", "ruff check .", "mypy", "python -m pytest"):
        assert command in ci and f"{command}" in CONTRIBUTING, command
    for regenerate in (
        "GPUFLEET_UPDATE_GOLDEN=1 python -m pytest tests/golden",
        "python tests/specs/regen.py",
        "python -m tools.spec_reference",
        "python tools/fetch_upstream.py",
    ):
        assert regenerate in CONTRIBUTING, regenerate


def test_every_local_link_resolves() -> None:
    for name, text in (("README.md", README), ("CONTRIBUTING.md", CONTRIBUTING)):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (ROOT / target).exists(), f"{name} links to {target}"
