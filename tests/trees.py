"""Test helpers: read a synth tree's resources, and write a tree a test edited on purpose as synth would have."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from gpufleet.plan.parts import Concat, Ref
from gpufleet.tree.read import read_tree
from gpufleet.tree.write import digest, render, sha256


def resources(root: Path) -> list[dict[str, Any]]:
    """The entries of the tree at `root`, each with its inputs (what `check` and `diff` read)."""
    return read_tree(root).resources


def as_recorded(value: Any) -> Any:
    """A plan value as the mocks record it: Refs and Concats resolve to their placeholders, tuples are lists."""
    if isinstance(value, (Ref, Concat)):
        return str(value)
    if isinstance(value, dict):
        return {k: as_recorded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_recorded(v) for v in value]
    return value


def rewrite(root: Path, entries: list[dict[str, Any]] | None = None, plan: dict[str, Any] | None = None) -> None:
    """Write the tree at `root` again from (edited) resource entries and plan.json, sealed as synth seals a tree."""
    plan = plan if plan is not None else json.loads((root / "plan.json").read_text())
    summary = {key: value for key, value in plan.items() if key != "digest"}
    files = render(summary, resources(root) if entries is None else entries, (root / "plan.md").read_text()).files
    for path in root.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def reseal(root: Path) -> None:
    """Seal the tree at `root` again after a hand edit, as a forger would: each file's sha256 in inventory.json, then
    the digest in plan.json. What cannot be sealed (no inventory list, no plan.json mapping) is left as it is."""
    try:
        inventory = json.loads((root / "inventory.json").read_text(encoding="utf-8"))
        plan = json.loads((root / "plan.json").read_text(encoding="utf-8"))
        plan_md = (root / "plan.md").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return
    if not isinstance(inventory, list) or not isinstance(plan, dict):
        return
    for entry in inventory:
        if isinstance(entry, dict) and isinstance(entry.get("file"), str):
            try:
                entry["sha256"] = sha256((root / entry["file"]).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                pass
    (root / "inventory.json").write_text(json.dumps(inventory), encoding="utf-8")
    if all(isinstance(entry, dict) for entry in inventory):
        plan.pop("digest", None)
        plan["digest"] = digest(plan, inventory, plan_md)
    (root / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
