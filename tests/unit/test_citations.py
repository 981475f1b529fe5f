"""What ships cites upstream, never the notes of the workspace gpufleet is built in (users have neither): no
`../shared`, UPSTREAM.md, DESIGN.md or STYLE.md in the package, the Pulumi components, the policies, the docs or the
README. Tests, tools/ and CONTRIBUTING.md may name ../shared as a place the upstream files are read from."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE_NOTES = re.compile(r"\.\./shared|\b(?:UPSTREAM|DESIGN|STYLE)\.md\b")
SHIPPED = ("gpufleet", "components", "policies", "docs", "examples")


def _shipped_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for top in SHIPPED:
        files += [
            p
            for p in sorted((ROOT / top).rglob("*"))
            if p.is_file() and p.suffix in {".py", ".md", ".yaml", ".json", ".sh"}
        ]
    return files


def test_nothing_shipped_cites_the_workspace_notes() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _shipped_files()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if WORKSPACE_NOTES.search(line)
    ]
    assert cited == []
