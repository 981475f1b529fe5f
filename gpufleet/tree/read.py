"""Read a synth tree for `check` and `diff`, refusing anything but a complete tree exactly as synth wrote it.

A tree is trusted only when its plan.json names the tree format in a version this gpufleet reads, nothing in
the directory lies outside the tree layout, the digest in plan.json matches plan.json, plan.md and inventory.json
(gpufleet.tree.write.digest), and every resource file is there, matches the sha256 its inventory entry gives and is
some entry's file. A tree that holds only inventory.json, an emptied inventory, YAML replaced by garbage or a
hand-edited file is "not a synth tree" (exit 2) rather than a clean result or a crash.
"""

from __future__ import annotations

import copy
import functools
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpufleet.tree.write import (
    OPTION_DEFAULTS,
    TREE_DIR,
    TREE_FILE,
    TREE_FORMAT,
    TREE_FORMAT_VERSION,
    digest,
    join_inputs,
    sha256,
)

# LibYAML's loader (PyYAML's C extension) reads what either emitter wrote, several times faster
_LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
_INDEX = ("plan.json", "inventory.json", "plan.md")

# plan.json of the largest fleet is a few hundred KB; anything far bigger is not one
_MAX_PLAN_BYTES = 16 * 1024 * 1024


class NotATree(Exception):
    """The directory is not a synth tree gpufleet can trust; the message says why, `reason` without the advice to
    synthesise it again (which `synth --out`, refusing to replace it, cannot give)."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


@dataclass(frozen=True, slots=True)
class SynthTree:
    plan: dict[str, Any]  # plan.json
    resources: list[
        dict[str, Any]
    ]  # inventory.json's entries, each with its inputs (gpufleet.tree.write.inventory_entries)

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
        why = "not a version gpufleet writes"
        if isinstance(version, int) and not isinstance(version, bool) and version > 0:
            why = (
                "written by a newer gpufleet; upgrade it"
                if version > TREE_FORMAT_VERSION
                else "written by an older gpufleet; synthesise it again"
            )
        raise NotATree(
            f"plan.json: format version {json.dumps(version)}: {why} (this gpufleet reads version"
            f" {TREE_FORMAT_VERSION})",
            reason=(
                f"plan.json: format version {json.dumps(version)} (this gpufleet reads version {TREE_FORMAT_VERSION})"
            ),
        )
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
        if not path.is_file():  # a FIFO would block the read forever, a device read without end
            raise NotATree(f"{rel} is not a regular file")
        try:
            files[rel] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise NotATree(f"{rel} is not UTF-8 text") from None
        except OSError as exc:
            raise NotATree(f"{rel}: {exc.strerror or exc}") from None
    return files


_AGAIN = "; synthesise it again"
_DIGEST_REASON = (
    "plan.json, plan.md or inventory.json differ from what synth wrote (the digest in plan.json does not match)"
)
DIGEST = _DIGEST_REASON + _AGAIN


def _digest_differs() -> NotATree:
    return NotATree(DIGEST, reason=_DIGEST_REASON)


def _inventory(plan: dict[str, Any], files: Mapping[str, str]) -> list[dict[str, Any]]:
    """inventory.json, once the digest proves it, plan.json and plan.md as synth wrote them."""
    for required in ("inventory.json", "plan.md"):
        if required not in files:
            raise NotATree(f"no {required}")
    try:
        inventory = json.loads(files["inventory.json"])
    except (ValueError, RecursionError):
        raise _digest_differs() from None
    if not isinstance(inventory, list) or not all(isinstance(entry, dict) for entry in inventory):
        raise _digest_differs()
    summary = {key: value for key, value in plan.items() if key != "digest"}
    if plan["digest"] != digest(summary, inventory, files["plan.md"]):
        raise _digest_differs()
    return inventory


def _verify_files(inventory: list[dict[str, Any]], files: Mapping[str, str]) -> None:
    """Every file an entry names is there as synth wrote it, and every other file is some entry's."""
    named = set(_INDEX)
    for entry in inventory:
        if "file" not in entry:
            continue
        rel = entry["file"]
        named.add(rel)
        if rel not in files:
            raise NotATree(f"no {rel} (inventory.json lists it)")
        if sha256(files[rel]) != entry["sha256"]:
            reason = f"{rel} differs from what synth wrote (its sha256 in inventory.json does not match)"
            raise NotATree(reason + _AGAIN, reason=reason)
    stray = sorted(set(files) - named)
    if stray:
        raise NotATree(f"{stray[0]} is the file of no resource in inventory.json")


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> bytes:
    """A file's document, parsed once per content: `diff` reads two trees that share most of their files, and
    unpickling a private copy costs a tenth of parsing the YAML again."""
    return pickle.dumps(yaml.load(text, Loader=_LOADER))


def resources(inventory: list[dict[str, Any]], files: Mapping[str, str]) -> list[dict[str, Any]]:
    """The entries of a verified tree with their inputs, read back from the files that hold them."""
    out = []
    for entry in inventory:
        record = {key: value for key, value in entry.items() if key not in ("file", "sha256", "inputs")}
        inputs = join_inputs(entry, pickle.loads(_parsed(files[entry["file"]]))) if "file" in entry else entry["inputs"]
        out.append({**copy.deepcopy(OPTION_DEFAULTS), **record, "name": entry["id"], "inputs": inputs})
    return out


def _check_plan_shape(plan: Mapping[str, Any]) -> None:
    """What check and diff read of plan.json has the shape synth writes. The digest only proves the files agree
    with each other: a tree edited and sealed again by hand passes it."""
    fleet = plan.get("fleet")
    if not isinstance(fleet, dict) or not all(isinstance(fleet.get(k), str) for k in ("name", "cluster", "region")):
        raise NotATree("plan.json: fleet must name the fleet, its cluster and region")
    if not isinstance(plan.get("environment"), str):
        raise NotATree("plan.json: environment must be a name")
    stages = plan.get("stages")
    if not isinstance(stages, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str) for s in stages):
        raise NotATree("plan.json: stages must be a list of named stages")


def _sealed(root: Path) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    """plan.json, the other files and the inventory of the tree at `root`, once each file is proven to be as synth
    wrote it and every file to be plan.json, plan.md, inventory.json or an inventory entry's file."""
    if not root.is_dir():
        raise NotATree("not a directory" if root.exists() else "no such directory")
    plan = _plan(root)
    files = _files(root)
    inventory = _inventory(plan, files)
    _verify_files(inventory, files)
    return plan, files, inventory


def tree_problem(root: Path) -> str | None:
    """Why the directory `root` is not exactly a tree gpufleet wrote, or None: the only kind `synth --out` replaces.

    The proof is the one `check` and `diff` ask for (format, layout, digest, each file's sha256, no file that is no
    entry's): a file of the user's in the tree, even one whose name fits the layout, or an edit
    to a file synth wrote, keeps the directory from being replaced, so nothing of the user's is lost.
    """
    try:
        _sealed(root)
    except NotATree as exc:
        return exc.reason
    return None


def read_tree(directory: str | Path) -> SynthTree:
    """The tree at `directory`; raises NotATree with the reason when it is not one to trust."""
    plan, files, inventory = _sealed(Path(directory))
    _check_plan_shape(plan)
    # Every file is exactly as gpufleet.tree.write.render wrote it.
    return SynthTree(plan=plan, resources=resources(inventory, files))
