"""Recorded registrations -> the synth tree of DESIGN.md section 5. Pure: plain data in, files out.

Layout:
  plan.json, inventory.json, plan.md
  NN-<stage>/k8s/<Kind>-<namespace|cluster>-<name>.yaml
  NN-<stage>/helm/<release>.yaml
  NN-<stage>/aws/<resource>.yaml
plan.json names the tree format (`format`, `formatVersion`): it marks a directory as one gpufleet wrote, the only
kind `synth --out` replaces (gpufleet.output writes it). It also names the fleet (`fleet`: name, cluster, region)
and carries a digest of the whole tree, which `check` and `diff` verify (gpufleet.tree_reader). Output is byte-identical for the same input: sorted keys,
no timestamps, no absolute paths.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from gpufleet import stages
from gpufleet.plan import RolloutPlan
from gpufleet.pins import pins

TREE_FORMAT = "gpufleet synth tree"
TREE_FORMAT_VERSION = 1
# The directories and files a tree may hold, relative to its root (the layout above).
TREE_DIR = re.compile(r"\d\d-[a-z]+(/(k8s|helm|aws))?\Z")
TREE_FILE = re.compile(r"(plan\.json|plan\.md|inventory\.json|\d\d-[a-z]+/(k8s|helm|aws)/[^/]+\.yaml)\Z")


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


def _str_presenter(dumper: yaml.representer.SafeRepresenter, data: str) -> yaml.ScalarNode:
    # Multi-line strings (user data, scripts, JSON configs) as literal blocks, so reviewers read them as text.
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


Dumper = type[yaml.SafeDumper] | type[yaml.CSafeDumper]


def _dumper(base: Dumper) -> Dumper:
    dumper: Dumper = type("Dumper", (base,), {})
    dumper.add_representer(str, _str_presenter)
    return dumper


# LibYAML's emitter (PyYAML's C extension, in its wheels) writes the same text several times faster than the
# pure-Python one, except where the two break long quoted lines, long keys or escape characters differently
# (found by running both over random strings); a document with any such string is written by the pure-Python
# emitter. tests/unit/test_yaml_c.py holds the two to identical output.
PURE_DUMPER = _dumper(yaml.SafeDumper)
DUMPER = _dumper(yaml.CSafeDumper) if yaml.__with_libyaml__ else PURE_DUMPER
_SHORT = 60  # no line break or quoting choice of either emitter depends on a string this short
_KEY = 100  # a simple key (`key: value`) to both: LibYAML limits them at 128 bytes of UTF-8, PyYAML at 128 characters
_SPECIAL = re.compile(r"[^\x20-\x7e\n\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
_BLANK_AT_END = re.compile(r" \n| $")  # a line ending in a blank rules out the literal style: a quoted string follows


def _alike(value: Any) -> bool:
    """Whether LibYAML writes `value` exactly as PyYAML does."""
    if isinstance(value, str):
        return not _SPECIAL.search(value) and (len(value) <= _SHORT and "\n" not in value or not _BLANK_AT_END.search(value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and 0 < len(k.encode()) <= _KEY and "\n" not in k and not _SPECIAL.search(k) and _alike(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_alike(v) for v in value)
    return True


def dump_yaml(data: Any, dumper: Dumper | None = None) -> str:
    chosen = dumper or (DUMPER if _alike(data) else PURE_DUMPER)
    return yaml.dump(data, Dumper=chosen, sort_keys=True, default_flow_style=False, allow_unicode=True, width=120)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


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


def file_for(reg: Registration) -> str | None:
    """Path of a registration's file within its stage directory, or None (inventory only)."""
    inputs = reg.inputs
    if reg.type == "kubernetes:helm.sh/v3:Release":
        return f"helm/{inputs.get('name', reg.name)}.yaml"
    if reg.type.startswith("kubernetes:") and "kind" in inputs:
        meta = inputs.get("metadata", {})
        return f"k8s/{inputs['kind']}-{meta.get('namespace', 'cluster')}-{meta.get('name', reg.name)}.yaml"
    if reg.type.startswith("aws:"):
        return f"aws/{reg.name}.yaml"
    return None


def document_for(reg: Registration) -> Any:
    inputs = dict(reg.inputs)
    if reg.type == "kubernetes:helm.sh/v3:Release":
        return {
            "chart": inputs.get("chart"),
            "repository": (inputs.get("repositoryOpts") or {}).get("repo"),
            "version": inputs.get("version"),
            "namespace": inputs.get("namespace"),
            "values": inputs.get("values", {}),
        }
    if reg.type.startswith("aws:"):
        data = inputs.get("userData")
        if isinstance(data, str):
            inputs["userData"] = decode_user_data(data)
        return {"type": reg.type, "name": reg.name, "inputs": inputs}
    return inputs


@dataclass(frozen=True, slots=True)
class Tree:
    """Relative path -> file text."""

    files: Mapping[str, str]


def build_tree(plan: RolloutPlan, registrations: list[Registration], plan_md: str) -> Tree:
    by_name = {r.name: r for r in registrations}
    files: dict[str, str] = {}
    inventory: list[dict[str, Any]] = []
    per_stage: dict[str, list[str]] = {s.directory: [] for s in plan.stages}
    for reg in registrations:
        stage_dir = _stage_of(reg, by_name)
        if stage_dir is not None:
            per_stage[stage_dir].append(reg.name)
        inventory.append(
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
        rel = file_for(reg)
        if rel is not None and stage_dir is not None:
            path = f"{stage_dir}/{rel}"
            if path in files:
                raise AssertionError(f"two resources render to {path}")
            files[path] = dump_yaml(document_for(reg))
    inventory.sort(key=lambda e: (stages.index(e["stage"]) if e["stage"] else 0, e["id"]))
    files["inventory.json"] = dump_json(inventory)
    files["plan.md"] = plan_md
    summary: dict[str, Any] = {
        "format": TREE_FORMAT,
        "formatVersion": TREE_FORMAT_VERSION,
        "fleet": fleet_identity(plan),
        "environment": plan.environment,
        "through": plan.through,
        "stages": [
            {"index": s.index, "name": s.name, "included": s.included, "resources": sorted(per_stage.get(s.directory, []))}
            for s in plan.stages
        ],
        "versions": pins(plan),
        "warnings": list(plan.warnings),
    }
    files["plan.json"] = dump_json({**summary, "digest": digest(summary, files)})
    return Tree(files=dict(sorted(files.items())))


def fleet_identity(plan: RolloutPlan) -> dict[str, str]:
    """What makes two trees trees of the same fleet: its name and the cluster it deploys to."""
    return {"name": plan.fleet.name, "cluster": plan.fleet.cluster.name, "region": plan.fleet.cluster.region}


def digest(summary: Mapping[str, Any], files: Mapping[str, str]) -> str:
    """sha256 over plan.json without its digest and every other file of the tree (path, NUL, text, NUL; sorted).

    It lets `check` and `diff` tell a tree as synth wrote it from one that was edited, truncated or damaged
    since, instead of trusting (and crashing on) whatever the files hold.
    """
    sha = hashlib.sha256(dump_json(summary).encode("utf-8"))
    for path in sorted(files):
        if path != "plan.json":
            sha.update(f"{path}\0{files[path]}\0".encode("utf-8"))
    return f"sha256:{sha.hexdigest()}"


def tree_problem(root: Path) -> str | None:
    """Why the directory `root` is not a tree gpufleet wrote (its plan.json marker, nothing outside the layout)."""
    try:
        plan = json.loads((root / "plan.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no plan.json"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"plan.json is unreadable: {exc}"
    if not isinstance(plan, dict) or plan.get("format") != TREE_FORMAT:
        return f'plan.json does not say format "{TREE_FORMAT}"'
    try:
        entries = sorted(root.rglob("*"))
    except OSError as exc:  # changed or unreadable while walked
        return f"cannot be read: {exc.strerror or exc}"
    for path in entries:
        rel = path.relative_to(root).as_posix()
        expected = TREE_DIR if path.is_dir() else TREE_FILE
        if path.is_symlink() or not expected.match(rel):
            return f"{rel} is not part of a synth tree"
    return None
