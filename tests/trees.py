"""Test helpers: read a synth tree's resources, and write a tree a test edited on purpose as synth would have."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.parts import Concat, Ref
from gpufleet.tree.output import write_tree
from gpufleet.tree.read import read_tree
from gpufleet.tree.write import digest, render, sha256
from tests.synthesized import tree_of

MINIMAL = Path(__file__).resolve().parent / "specs/valid/minimal.yaml"
# A tree damage: edits the tree at the path it is given.
Damage = Callable[[Path], None]


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


def minimal_tree(factory: pytest.TempPathFactory) -> Path:
    """The dev tree of tests/specs/valid/minimal.yaml, written as synth writes it (tests damage copies of it)."""
    out = factory.mktemp("mini") / "dev"
    write_tree(tree_of(MINIMAL, "dev"), str(out))
    return out


def edit_json(rel: str, edit: Callable[[Any], None]) -> Damage:
    """A damage: the JSON file `rel` of the tree edited in place, nothing sealed again."""

    def apply(root: Path) -> None:
        document = json.loads((root / rel).read_text())
        edit(document)
        (root / rel).write_text(json.dumps(document))

    return apply


def edit_entry(rid: str, edit: Callable[[dict[str, Any]], None]) -> Damage:
    """A damage: the inventory.json entry of resource `rid` edited in place."""
    return edit_json("inventory.json", lambda inventory: edit(next(e for e in inventory if e["id"] == rid)))


def damaged_copy(tree: Path, at: Path, damage: Damage) -> Path:
    """A copy of `tree` at `at` with `damage` applied."""
    shutil.copytree(tree, at)
    damage(at)
    return at


def reading_argv(command: str, intact: Path, damaged: Path) -> list[str]:
    """The command line on which `command` reads the damaged tree: check reads it alone, diff as the new tree."""
    return [command, str(damaged)] if command == "check" else [command, str(intact), str(damaged)]
