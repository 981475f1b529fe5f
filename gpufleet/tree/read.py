"""Read a synth tree for `check` and `diff`, refusing anything but a complete tree exactly as synth wrote it.

Why, with sources: docs/synth-tree.md, "Design notes", gpufleet/tree/read.py.
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

from gpufleet.base.errors import format_path
from gpufleet.base.inputs import is_count, name_problem, read_bounded, yaml_beyond_bounds
from gpufleet.facts import stages
from gpufleet.facts.versions import KUBERNETES_VERSIONS
from gpufleet.spec import object_shapes
from gpufleet.spec.names import TAG_RESERVED_INSTANCES
from gpufleet.tree.entries import LAUNCH_TEMPLATE, NODE_GROUP
from gpufleet.tree.write import (
    HELM_FILE_KEYS,
    HELM_RELEASE,
    OPTION_DEFAULTS,
    TREE_DIR,
    TREE_FILE,
    TREE_FORMAT,
    TREE_FORMAT_VERSION,
    digest,
    file_for,
    join_inputs,
    sha256,
)

# LibYAML's loader (PyYAML's C extension) reads what either emitter wrote, several times faster
_LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
_INDEX = ("plan.json", "inventory.json", "plan.md")

# plan.json of the largest fleet is a few hundred KB, inventory.json a few MB, the whole tree tens of MB; anything far
# bigger is not one
_MAX_PLAN_BYTES = 16 * 1024 * 1024
_MAX_TREE_BYTES = 256 * 1024 * 1024


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
    total = 0
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
            raw = read_bounded(str(path), _MAX_PLAN_BYTES, "no file of a synth tree needs")
            files[rel] = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise NotATree(f"{rel} is not UTF-8 text") from None
        except OSError as exc:
            raise NotATree(f"{rel}: {exc.strerror or exc}") from None
        total += len(raw)
        if total > _MAX_TREE_BYTES:
            raise NotATree(f"larger than {_MAX_TREE_BYTES // (1024 * 1024)} MB, which no synth tree needs")
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


# An inventory entry's keys and the types synth writes for them (gpufleet.tree.write.render): id, stage and type
# always, an option only where it differs from its default, file and sha256 together, inputs where no file holds them.
_ENTRY_KEYS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "stage": (str, type(None)),
    "type": (str,),
    "parent": (str, type(None)),
    "dependsOn": (list,),
    "protect": (bool,),
    "retainOnDelete": (bool,),
    "ignoreChanges": (list,),
    "replaceOnChanges": (list,),
    "deleteBeforeReplace": (bool,),
    "file": (str,),
    "sha256": (str,),
    "inputs": (dict,),
}
_LISTS_OF_NAMES = ("dependsOn", "ignoreChanges", "replaceOnChanges")


def _entry_problem(entry: Mapping[str, Any]) -> str | None:
    """Why an inventory entry does not have the shape synth writes, or None. The digest proves only that the files
    agree with each other: an entry edited and sealed again by hand passes it."""
    for key in ("id", "stage", "type"):
        if key not in entry:
            return f"has no {key}"
    for key, value in entry.items():
        if key not in _ENTRY_KEYS:
            return f"has {json.dumps(key)}, which synth does not write"
        if not isinstance(value, _ENTRY_KEYS[key]):
            return f"{key} is {json.dumps(value)[:40]}, not the {_ENTRY_KEYS[key][0].__name__} synth writes"
    if not entry["id"]:
        return "has an empty id"
    if entry["stage"] is not None and entry["stage"] not in stages.STAGES:
        return f"stage {json.dumps(entry['stage'])} is no stage of gpufleet's"
    for key in _LISTS_OF_NAMES:
        if not all(isinstance(item, str) for item in entry.get(key, [])):
            return f"{key} must list names"
    if ("file" in entry) != ("sha256" in entry):
        return "names a file without its sha256, or a sha256 without its file"
    if "file" not in entry and "inputs" not in entry:
        return "has neither a file nor inputs"
    return None


def _check_entries(inventory: list[dict[str, Any]]) -> None:
    seen: set[str] = set()
    for i, entry in enumerate(inventory):
        problem = _entry_problem(entry)
        name = json.dumps(entry["id"]) if isinstance(entry.get("id"), str) else f"[{i}]"
        if problem is not None:
            raise NotATree(f"inventory.json: entry {name} {problem}")
        if entry["id"] in seen:
            raise NotATree(f"inventory.json: two entries have the id {name}")
        seen.add(entry["id"])


def _verify_files(inventory: list[dict[str, Any]], files: Mapping[str, str]) -> None:
    """Every file an entry names is there as synth wrote it, and every other file is some entry's."""
    _check_entries(inventory)
    named = set(_INDEX)
    for entry in inventory:
        if "file" not in entry:
            continue
        rel = entry["file"]
        if rel in named:
            raise NotATree(f"inventory.json: two entries name the file {rel}")
        named.add(rel)
        if rel not in files:
            raise NotATree(f"no {rel} (inventory.json lists it)")
        if sha256(files[rel]) != entry["sha256"]:
            reason = f"{rel} differs from what synth wrote (its sha256 in inventory.json does not match)"
            raise NotATree(reason + _AGAIN, reason=reason)
    stray = sorted(set(files) - named)
    if stray:
        raise NotATree(f"{stray[0]} is the file of no resource in inventory.json")


class _Unparsable(Exception):
    pass


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> bytes:
    """A file's document, parsed once per content: `diff` reads two trees that share most of their files, and
    unpickling a private copy costs a tenth of parsing the YAML again.

    Why: docs/synth-tree.md, "Design notes", read._parsed."""
    too_big = yaml_beyond_bounds(text)
    if too_big is not None:
        raise _Unparsable(too_big)
    try:
        document = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        said = ", ".join(filter(None, (getattr(exc, "context", None), getattr(exc, "problem", None)))) or str(exc)
        raise _Unparsable(f"not the YAML synth writes: {said}") from None
    except (ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError):
        raise _Unparsable("not the YAML synth writes: a value its tag cannot read") from None
    problem = _not_plain(document)
    if problem is not None:
        raise _Unparsable(problem)
    return pickle.dumps(document)


def _not_plain(document: Any) -> str | None:
    """Why a document is not the plain data synth writes (mappings with string keys, lists, strings, numbers,
    booleans, null), or None. Iterative; the bounds have kept it small."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not all(isinstance(key, str) for key in node):
                return "a mapping has a key that is not a string"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif not isinstance(node, (str, int, float, type(None))):  # bool is an int
            return f"holds a {type(node).__name__}, which synth never writes"
    return None


_HELM_DOCUMENT = {*HELM_FILE_KEYS, "repository"}


def _DIGITS(value: Any, where: str) -> str | None:  # noqa: N802 (a shape, named like the types beside it)
    return None if is_count(value) else f"{where} must be a count"


def _document_problem(entry: Mapping[str, Any], document: Any) -> str | None:
    """Why a file's document is not what synth writes for its entry's type (gpufleet.tree.write.split_inputs)."""
    kind = entry["type"]
    if not isinstance(document, dict):
        return "does not hold a mapping"
    if kind == HELM_RELEASE:
        if set(document) != _HELM_DOCUMENT:
            return f"is not a Helm release's file ({', '.join(sorted(_HELM_DOCUMENT))})"
        if not isinstance(document["values"], dict):
            return "values must be a mapping"
        if not all(isinstance(document[k], (str, type(None))) for k in _HELM_DOCUMENT - {"values"}):
            return "chart, version, namespace and repository must be text"
        if not isinstance(entry.get("inputs", {}).get("repositoryOpts", {}), dict):
            return "its entry's repositoryOpts must be a mapping"
    elif kind.startswith("aws:"):
        if set(document) != {"type", "name", "inputs"} or not isinstance(document["inputs"], dict):
            return "is not an AWS resource's file (type, name, inputs)"
        if document["type"] != kind or document["name"] != entry["id"]:
            return "names another resource than its inventory entry"
    else:
        meta = document.get("metadata", {})
        if not isinstance(document.get("kind"), str) or not isinstance(meta, dict):
            return "is not a Kubernetes object (kind, metadata)"
        if not all(isinstance(meta.get(k, ""), str) for k in ("name", "namespace")):
            return "metadata.name and metadata.namespace must be text"
        for key in ("labels", "annotations"):  # ObjectMeta: map[string]string
            value = meta.get(key, {})
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                return f"metadata.{key} must map names to text"
    return None


def _file_of(resource: Mapping[str, Any]) -> str | None:
    """file_for, or "?" for inputs it cannot name a file from (a metadata that is not a mapping)."""
    meta = resource["inputs"].get("metadata", {})
    return file_for(resource) if isinstance(meta, dict) else "?"


# The shape check and diff need of the inputs they read of what is not a Kubernetes object (an AWS resource, a Helm
# release), per resource type: a dict is a mapping whose listed keys, where present, have their shapes ("*": every
# value's), a one-item list a list of such items, a type (or tuple) the value's type. A Kubernetes object has the
# shape its schema gives (gpufleet.spec.object_shapes, `_object_problem`). What synth writes always has it; a tree
# edited and sealed again may not, and is refused before a consumer meets it.
_MAP: dict[str, Any] = {}
_TEXT_MAP = {"*": str}
_TYPE_SHAPES: dict[str, Any] = {
    NODE_GROUP: {
        "instanceTypes": [str],
        "launchTemplate": _MAP,
        "scalingConfig": {"minSize": int, "maxSize": int, "desiredSize": int},
        "warmPoolConfig": {"minSize": int, "maxGroupPreparedCapacity": int},
        "labels": _TEXT_MAP,
        "tags": {**_TEXT_MAP, TAG_RESERVED_INSTANCES: _DIGITS},
        "taints": [{"key": str, "value": str, "effect": str}],
    },
    LAUNCH_TEMPLATE: {"blockDeviceMappings": [{"ebs": {"volumeSize": int}}], "tags": _TEXT_MAP},
    HELM_RELEASE: {"values": _MAP, "version": (str, type(None))},
}


def _shape_problem(value: Any, shape: Any, where: str) -> str | None:
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} must be a mapping"
        for key, item in value.items():
            inner = shape.get(key, shape.get("*"))
            problem = None if inner is None else _shape_problem(item, inner, f"{where}.{key}")
            if problem is not None:
                return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} must be a list"
        return next((p for i, item in enumerate(value) if (p := _shape_problem(item, shape[0], f"{where}[{i}]"))), None)
    if callable(shape) and not isinstance(shape, type):
        return shape(value, where)  # type: ignore[no-any-return]
    return None if isinstance(value, shape) else f"{where} must be {_TYPE_NAMES.get(shape, 'text')}"


_TYPE_NAMES: dict[Any, str] = {int: "a number", str: "text"}


def _inputs_problem(resource: dict[str, Any], kubernetes_version: str) -> str | None:
    """Why the resource's inputs do not have the shape check and diff need, or None; a Kubernetes object's are then
    made what the API server reads (object_shapes.as_read: no null)."""
    inputs = resource["inputs"]
    shape = _TYPE_SHAPES.get(resource["type"])
    if shape is None and str(resource["type"]).startswith("kubernetes:"):
        text = json.dumps(inputs, sort_keys=True)
        problem = _object_problem(text, kubernetes_version)
        if problem is None and "null" in text:
            resource["inputs"] = object_shapes.as_read(inputs, kubernetes_version)
        return problem
    problem = None if shape is None else _shape_problem(inputs, shape, "inputs")
    return None if problem is None else f"{problem} (resource {json.dumps(resource['name'])}), as synth writes it"


@functools.lru_cache(maxsize=4096)
def _object_problem(text: str, kubernetes_version: str) -> str | None:
    """Why a Kubernetes object (as JSON text: `diff` reads two trees that share most of their objects, each checked
    once) does not have the shape its schema gives, in the spec loader's words; None when it does (or no schema
    gpufleet ships knows its kind: its metadata's shape is _document_problem's)."""
    obj = json.loads(text)
    if object_shapes.conforms(obj, kubernetes_version):
        return None
    issue = object_shapes.issues(obj, kubernetes_version, {})[0]
    return f"{format_path(issue.path)}: {issue.message}, which the API server refuses of a {obj.get('kind')}"


def resources(inventory: list[dict[str, Any]], files: Mapping[str, str]) -> list[dict[str, Any]]:
    """The entries of a verified tree with their inputs, read back from the files that hold them. Raises NotATree
    where a file or entry is not what synth writes for the entry's type, or an entry's file is not the one synth
    would name for it (a Helm file where a Kubernetes object's belongs)."""
    out = []
    kubernetes_version = _kubernetes_version(inventory, files)
    for entry in inventory:
        record = {key: value for key, value in entry.items() if key not in ("file", "sha256", "inputs")}
        if "file" in entry:
            rel = entry["file"]
            try:
                document = pickle.loads(_parsed(files[rel]))
            except _Unparsable as exc:
                raise NotATree(f"{rel}: {exc}") from None
            problem = _document_problem(entry, document)
            if problem is not None:
                raise NotATree(f"{rel} {problem}")
            inputs = join_inputs(entry, document)
        else:
            inputs = entry["inputs"]
        resource = {**copy.deepcopy(OPTION_DEFAULTS), **record, "name": entry["id"], "inputs": inputs}
        expected = _file_of(resource)
        if expected != entry.get("file"):
            raise NotATree(
                f"inventory.json: the entry {json.dumps(entry['id'])} is not where synth puts it"
                f" ({expected or 'in inventory.json only'}, not {entry.get('file') or 'in inventory.json only'})"
            )
        problem = _inputs_problem(resource, kubernetes_version)
        if problem is not None:
            where = entry.get("file") or "inventory.json"
            raise NotATree(f"{where}: {problem}")
        out.append(resource)
    return out


_EKS_CLUSTER = "aws:eks/cluster:Cluster"


def _kubernetes_version(inventory: list[dict[str, Any]], files: Mapping[str, str]) -> str:
    """The Kubernetes version of the tree's EKS cluster (its `version` input), whose built-in schemas its objects
    are checked against; a cluster of mode Existing has no such resource: the newest gpufleet supports."""
    for entry in inventory:
        if entry["type"] == _EKS_CLUSTER and "file" in entry:
            try:
                document = pickle.loads(_parsed(files[entry["file"]]))
            except _Unparsable:
                break  # refused with its reason where the entry is read
            version = document.get("inputs", {}).get("version") if isinstance(document, dict) else None
            if isinstance(version, str) and version in KUBERNETES_VERSIONS:
                return version
    return KUBERNETES_VERSIONS[-1]


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
    too_long = name_problem(str(root))
    if too_long is not None:
        raise NotATree(too_long)
    try:
        if not root.is_dir():
            raise NotATree("not a directory" if root.exists() else "no such directory")
    except OSError as exc:  # a loop of symbolic links, a directory that cannot be searched
        raise NotATree(exc.strerror or str(exc)) from None
    plan = _plan(root)
    files = _files(root)
    inventory = _inventory(plan, files)
    _verify_files(inventory, files)
    return plan, files, inventory


def tree_problem(root: Path) -> str | None:
    """Why the directory `root` is not exactly a tree gpufleet wrote, or None: the only kind `synth --out` replaces.

    Why: docs/synth-tree.md, "Design notes", read.tree_problem."""
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
