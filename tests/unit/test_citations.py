"""What ships cites upstream, never the notes of the workspace gpufleet is built in (users have neither): no
`../shared` and none of the workspace's note files (NOTE_FILES) in the package, the Pulumi components, the policies,
the docs or the README; the project's own design is docs/architecture.md. Tests, tools/ and CONTRIBUTING.md may name
../shared as a place the upstream files are read from."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The workspace's note files by stem, so this test names none of them whole.
NOTE_FILES = ("UPSTREAM", "DESIGN", "STYLE")
WORKSPACE_NOTES = re.compile(r"\.\./shared|\b(?:" + "|".join(NOTE_FILES) + r")\.md\b")
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
