"""Test helper: re-seal a synth tree after a test edited it on purpose (gpufleet.tree.digest)."""

from __future__ import annotations

import json
from pathlib import Path

from gpufleet.tree import digest, dump_json


def reseal(root: Path) -> None:
    """Recompute plan.json's digest, as if synth had written the edited files."""
    plan = json.loads((root / "plan.json").read_text())
    plan.pop("digest")
    files = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file() and p.name != "plan.json"}
    (root / "plan.json").write_text(dump_json({**plan, "digest": digest(plan, files)}))
