"""Recorded registrations -> the synth tree of docs/architecture.md section 6. Pure: plain data in, files out.

Why, with sources: docs/synth-tree.md, "Design notes", gpufleet/tree/write.py.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpufleet.facts import stages
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.pins import pins

TREE_FORMAT = "gpufleet synth tree"
TREE_FORMAT_VERSION = 2  # 2: inventory.json references each resource's file instead of repeating its inputs
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_FILE_KEYS = ("chart", "version", "namespace", "values")
# The directories and files a tree may hold, relative to its root (the layout above).
TREE_DIR = re.compile(r"[0-9][0-9]-[a-z]+(/(k8s|helm|aws))?\Z")
TREE_FILE = re.compile(r"(plan\.json|plan\.md|inventory\.json|[0-9][0-9]-[a-z]+/(k8s|helm|aws)/[^/]+\.yaml)\Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class Registration:
    """One resource as the Pulumi engine would be asked to register it."""

    name: str
    type: str
    parent: str | None
    depends_on: tuple[str, ...]
    protect: bool
    retain_on_delete: bool
    ignore_changes: tuple[str, ...]
    inputs: Mapping[str, Any]
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False


def _stage_of(reg: Registration, by_name: Mapping[str, Registration]) -> str | None:
    node: Registration | None = reg
    while node is not None:
        if node.type.startswith("gpufleet:stage:"):
            return node.name
        node = by_name.get(node.parent) if node.parent else None
    return None


def decode_user_data(value: str) -> str:
    """Launch template user data is base64; show it as the text nodeadm / Bottlerocket will read."""
    if value.startswith("<ref:"):
        return value
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return value


def file_for(entry: Mapping[str, Any]) -> str | None:
    """Path of an inventory entry's file within the tree, or None (inventory only: components, providers)."""
    if entry["stage"] is None:
        return None
    stage_dir, inputs = stages.directory(entry["stage"]), entry["inputs"]
    if entry["type"] == HELM_RELEASE:
        return f"{stage_dir}/helm/{inputs.get('name', entry['name'])}.yaml"
    if entry["type"].startswith("kubernetes:") and "kind" in inputs:
        meta = inputs.get("metadata", {})
        namespace, name = meta.get("namespace", "cluster"), meta.get("name", entry["name"])
        return f"{stage_dir}/k8s/{inputs['kind']}-{namespace}-{name}.yaml"
    if entry["type"].startswith("aws:"):
        return f"{stage_dir}/aws/{entry['name']}.yaml"
    return None


def split_inputs(entry: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An entry's inputs as (the document its file holds, the inputs the file does not hold).

    Why: docs/synth-tree.md, "Design notes", write.split_inputs."""
    inputs = dict(entry["inputs"])
    if entry["type"] == HELM_RELEASE:
        repository = dict(inputs.pop("repositoryOpts", None) or {})
        document = {key: inputs.pop(key, None) for key in HELM_FILE_KEYS}
        document["repository"] = repository.pop("repo", None)
        document["values"] = document["values"] or {}
        return document, {**inputs, **({"repositoryOpts": repository} if repository else {})}
    if entry["type"].startswith("aws:"):
        data = inputs.get("userData")
        if isinstance(data, str):
            inputs["userData"] = decode_user_data(data)
        return {"type": entry["type"], "name": entry["name"], "inputs": inputs}, {}
    return inputs, {}


def join_inputs(entry: Mapping[str, Any], document: Any) -> dict[str, Any]:
    """The inputs of an entry whose file holds `document` (the inverse of `split_inputs`; user data stays text)."""
    rest = dict(entry.get("inputs", {}))
    if entry["type"] == HELM_RELEASE:
        inputs = {**rest, **{key: document[key] for key in HELM_FILE_KEYS if document[key] is not None}}
        if document["repository"] is not None:
            inputs["repositoryOpts"] = {**rest.get("repositoryOpts", {}), "repo": document["repository"]}
        return inputs
    if entry["type"].startswith("aws:"):
        return dict(document["inputs"])
    return dict(document)


@dataclass(frozen=True, slots=True)
class Tree:
    """Relative path -> file text."""

    files: Mapping[str, str]


# The options an inventory entry states only when they differ from these (what Pulumi assumes when not given).
OPTION_DEFAULTS: Mapping[str, Any] = {
    "parent": None,
    "dependsOn": [],
    "protect": False,
    "retainOnDelete": False,
    "ignoreChanges": [],
    "replaceOnChanges": [],
    "deleteBeforeReplace": False,
}


def inventory_entries(registrations: list[Registration]) -> list[dict[str, Any]]:
    """Every registration as one resource entry (what `check`, `diff` and the policies read), sorted by stage then
    id."""
    by_name = {r.name: r for r in registrations}
    entries = []
    for reg in registrations:
        stage_dir = _stage_of(reg, by_name)
        entries.append(
            {
                "id": reg.name,
                "stage": stage_dir.split("-", 1)[1] if stage_dir else None,
                "type": reg.type,
                "name": reg.name,
                "parent": reg.parent,
                "dependsOn": sorted(reg.depends_on),
                "protect": reg.protect,
                "retainOnDelete": reg.retain_on_delete,
                "ignoreChanges": sorted(reg.ignore_changes),
                "replaceOnChanges": sorted(reg.replace_on_changes),
                "deleteBeforeReplace": reg.delete_before_replace,
                "inputs": reg.inputs,
            }
        )
    return sorted(entries, key=lambda e: (stages.index(e["stage"]) if e["stage"] else 0, e["id"]))


def build_tree(plan: RolloutPlan, registrations: list[Registration], plan_md: str) -> Tree:
    entries = inventory_entries(registrations)
    summary: dict[str, Any] = {
        "format": TREE_FORMAT,
        "formatVersion": TREE_FORMAT_VERSION,
        "fleet": fleet_identity(plan),
        "environment": plan.environment,
        "through": plan.through,
        "stages": [
            {
                "index": s.index,
                "name": s.name,
                "included": s.included,
                "resources": sorted(e["id"] for e in entries if e["stage"] == s.name),
            }
            for s in plan.stages
        ],
        "versions": pins(plan),
        "warnings": list(plan.warnings),
    }
    return render(summary, entries, plan_md)


def _str_presenter(dumper: yaml.representer.SafeRepresenter, data: str) -> yaml.ScalarNode:
    # Multi-line strings (user data, scripts, JSON configs) as literal blocks, so reviewers read them as text.
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


# LibYAML's emitter (PyYAML's C extension, in its wheels); PyYAML's own emitter where the extension is missing,
# which writes the same text for every document of the golden trees.
_DUMPER: type[yaml.SafeDumper] | type[yaml.CSafeDumper] = type(
    "TreeDumper", (yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper,), {}
)
_DUMPER.add_representer(str, _str_presenter)


def dump_yaml(document: Any) -> str:
    """A resource file's text: sorted keys, block style, width 120, Unicode, `|` blocks for multi-line strings."""
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=True, default_flow_style=False, allow_unicode=True, width=120)


def dump_json(data: Any) -> str:
    """inventory.json's and plan.json's text (and the digest's): indented, sorted, Unicode, a final newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render(summary: Mapping[str, Any], entries: list[dict[str, Any]], plan_md: str) -> Tree:
    """The files of a tree: each resource's file, inventory.json referencing it, plan.md, and plan.json sealing them.

    Why: docs/synth-tree.md, "Design notes", write.render."""
    files: dict[str, str] = {}
    inventory: list[dict[str, Any]] = []
    for entry in entries:
        record = {
            key: value
            for key, value in entry.items()
            if key not in ("name", "inputs") and value != OPTION_DEFAULTS.get(key, ...)
        }
        path = file_for(entry)
        if path is None:
            inventory.append({**record, "inputs": entry["inputs"]})
            continue
        if path in files:
            raise AssertionError(f"two resources render to {path}")
        document, rest = split_inputs(entry)
        files[path] = dump_yaml(document)
        inventory.append({**record, "file": path, "sha256": sha256(files[path]), **({"inputs": rest} if rest else {})})
    files["inventory.json"] = dump_json(inventory)
    files["plan.md"] = plan_md
    files["plan.json"] = dump_json({**summary, "digest": digest(summary, inventory, plan_md)})
    return Tree(files=dict(sorted(files.items())))


def fleet_identity(plan: RolloutPlan) -> dict[str, str]:
    """What makes two trees trees of the same fleet: its name and the cluster it deploys to."""
    return {"name": plan.fleet.name, "cluster": plan.fleet.cluster.name, "region": plan.fleet.cluster.region}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(summary: Mapping[str, Any], inventory: list[dict[str, Any]], plan_md: str) -> str:
    """sha256 over plan.json without its digest, inventory.json without the files' hashes, and plan.md.

    Why: docs/synth-tree.md, "Design notes", write.digest."""
    sealed = [{key: value for key, value in entry.items() if key != "sha256"} for entry in inventory]
    return "sha256:" + sha256(f"{dump_json(summary)}\0{dump_json(sealed)}\0{plan_md}")
