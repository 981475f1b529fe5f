"""Read a synth tree for `check` and `diff`, refusing anything but a complete tree exactly as synth wrote it.

A tree is trusted only when its plan.json names the tree format in a version this gpufleet reads, nothing in
the directory lies outside the tree layout, and the digest in plan.json matches the files (gpufleet.tree.digest).
A tree that holds only inventory.json, an emptied inventory, YAML replaced by garbage or a hand-edited file is
"not a synth tree" (exit 2) rather than a clean result or a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.tree import TREE_DIR, TREE_FILE, TREE_FORMAT, TREE_FORMAT_VERSION, digest

# plan.json of the largest fleet is a few hundred KB; anything far bigger is not one
_MAX_PLAN_BYTES = 16 * 1024 * 1024


class NotATree(Exception):
    """The directory is not a synth tree gpufleet can trust; the message says why."""


@dataclass(frozen=True, slots=True)
class SynthTree:
    plan: dict[str, Any]  # plan.json
    resources: list[dict[str, Any]]  # inventory.json

    @property
    def fleet(self) -> dict[str, str]:
        """The fleet identity (name, cluster, region) the tree was synthesised for."""
        identity: dict[str, str] = self.plan["fleet"]
        return identity


def describe_fleet(identity: dict[str, str]) -> str:
    return f"fleet {identity['name']} (cluster {identity['cluster']} in {identity['region']})"


def _plan(root: Path) -> dict[str, Any]:
    try:
        with (root / "plan.json").open("rb") as f:
            raw = f.read(_MAX_PLAN_BYTES + 1)
    except FileNotFoundError:
        raise NotATree("no plan.json") from None
    except OSError as exc:
        raise NotATree(f"plan.json: {exc.strerror or exc}") from None
    if len(raw) > _MAX_PLAN_BYTES:
        raise NotATree(f"plan.json is larger than {_MAX_PLAN_BYTES // (1024 * 1024)} MB")
    try:
        plan = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotATree(f"plan.json is not valid JSON: {exc}") from None
    if not isinstance(plan, dict) or plan.get("format") != TREE_FORMAT:
        raise NotATree(f'plan.json does not say format "{TREE_FORMAT}"')
    version = plan.get("formatVersion")
    if version != TREE_FORMAT_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > TREE_FORMAT_VERSION
        why = "written by a newer gpufleet; upgrade it" if newer else "not a version gpufleet writes"
        raise NotATree(f"plan.json: format version {json.dumps(version)}: {why} (this gpufleet reads version {TREE_FORMAT_VERSION})")
    if not isinstance(plan.get("digest"), str):
        raise NotATree("plan.json has no digest")
    return plan


def _files(root: Path) -> dict[str, str]:
    """Every file of the tree but plan.json; anything outside the layout is refused."""
    files: dict[str, str] = {}
    try:
        entries = sorted(root.rglob("*"))
    except OSError as exc:
        raise NotATree(f"cannot be read: {exc.strerror or exc}") from None
    for path in entries:
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            raise NotATree(f"{rel} is a symbolic link")
        if not (TREE_DIR if path.is_dir() else TREE_FILE).match(rel):
            raise NotATree(f"{rel} is not part of a synth tree")
        if path.is_dir() or rel == "plan.json":
            continue
        try:
            files[rel] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise NotATree(f"{rel} is not UTF-8 text") from None
        except OSError as exc:
            raise NotATree(f"{rel}: {exc.strerror or exc}") from None
    return files


def read_tree(directory: str | Path) -> SynthTree:
    """The tree at `directory`; raises NotATree with the reason when it is not one to trust."""
    root = Path(directory)
    if not root.is_dir():
        raise NotATree("not a directory" if root.exists() else "no such directory")
    plan = _plan(root)
    files = _files(root)
    for required in ("inventory.json", "plan.md"):
        if required not in files:
            raise NotATree(f"no {required}")
    summary = {key: value for key, value in plan.items() if key != "digest"}
    if plan["digest"] != digest(summary, files):
        raise NotATree("its files differ from what synth wrote (the digest in plan.json does not match); synthesise it again")
    # The digest matches: both files are exactly as gpufleet.tree.build_tree wrote them.
    return SynthTree(plan=plan, resources=json.loads(files["inventory.json"]))
