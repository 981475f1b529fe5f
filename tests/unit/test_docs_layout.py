"""The README is for users; contributors' matters are in CONTRIBUTING.md and docs/ (issue 35 item 11)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_the_user_guide_is_first_and_short_and_the_details_are_in_docs() -> None:
    """Issue 46 item 6: what it builds, the quick start, tests, deploy, review, operate, limits, then links; the
    details (stage 1, the tree format, the commands' contract, performance, the layout) are pages of docs/."""
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == [
        "Quick start (fresh machine)", "What it builds", "Tests", "Deploy", "Review", "Operate", "Limits", "More",
    ]  # fmt: skip
    # The two commands a newcomer needs come before anything else the README says (after its two-line summary).
    first_block = README.index("```sh\n")
    assert README.index("python3 -m venv .venv") == first_block + len("```sh\n")
    assert README.index("export GOTOOLCHAIN=go1.27.3 && python -m pytest e2e\n") < README.index("\n## What it builds")
    # 3,312 words when it was cut from 10,869 (wc -w); a user guide that grows past 4,000 is a reference again.
    assert len(README.split()) < 4000
    for page, heading in (
        ("docs/stage-1.md", "# Stage 1 in detail"),
        ("docs/synth-tree.md", "# The synth tree"),
        ("docs/commands.md", "# The commands in detail"),
        ("docs/performance.md", "# Performance"),
        ("docs/architecture.md", "## 10. Layout"),
    ):
        assert heading + "\n" in (ROOT / page).read_text(encoding="utf-8"), page
        assert f"]({page})" in README, f"the README links {page}"
    for moved in ("Stage 1 in detail", "Layout", "Performance", "Contributing"):
        assert moved not in headings
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
    for page in sorted((ROOT / "docs").glob("*.md")):  # the pages moved out of the README among them
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to {target}"
    # and the README's links to its own sections name a heading it has
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", README, re.M)}
    for anchor in re.findall(r"\]\(#([^)]+)\)", README):
        assert anchor in anchors, anchor
