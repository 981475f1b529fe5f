"""Write docs/spec-reference.md from schemas/fleet.schema.json (structure and static defaults) and
gpufleet.spec.defaults (the defaults computed from other fields, with their reasons).

Run `python -m tools.spec_reference` after changing the schema; tests/unit/test_spec_reference.py fails
while the committed reference is stale."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpufleet.spec.defaults import COMPUTED

COMPUTED_BY_PATH = {field: c for c in COMPUTED for field in c.fields or (c.path,)}

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schemas" / "fleet.schema.json"
OUT = ROOT / "docs" / "spec-reference.md"


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        merged = dict(defs[ref.rsplit("/", 1)[1]])
        merged.update({k: v for k, v in node.items() if k != "$ref"})
        return merged
    return node


def _type(node: dict[str, Any]) -> str:
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        const = node["const"]
        return f"`{const if isinstance(const, str) else json.dumps(const)}`"
    t = node.get("type", "")
    if t == "array":
        return "list"
    if t == "object":
        return "map" if "properties" not in node else "object"
    return str(t)


def _rows(node: dict[str, Any], path: str, required: bool, defs: dict[str, Any]) -> Iterator[str]:
    node = _resolve(node, defs)
    desc = " ".join(str(node.get("description", "")).split()).replace("|", "\\|")
    default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
    if path in COMPUTED_BY_PATH:
        default = f"computed: {COMPUTED_BY_PATH[path].rule}"
    if path:
        yield f"| `{path}` | {_type(node)} | {'yes' if required else ''} | {default} | {desc} |"
    props = node.get("properties", {})
    req = set(node.get("required", []))
    for key, child in props.items():
        yield from _rows(child, f"{path}.{key}" if path else key, key in req, defs)
    items = node.get("items")
    if isinstance(items, dict):
        yield from _rows(items, f"{path}[]", False, defs) if "properties" in _resolve(items, defs) else iter(())
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "properties" in extra:
        yield from _rows(extra, f"{path}.<name>", False, defs)


def render() -> str:
    schema = json.loads(SCHEMA.read_text())
    lines = [
        "# Fleet spec reference (gpufleet/v1alpha1)",
        "",
        (
            "Generated from `schemas/fleet.schema.json` and `gpufleet/spec/defaults.py` by"
            " `python -m tools.spec_reference`; do not edit by hand."
        ),
        "Every optional field says what happens when it is omitted. Validate a spec with `gpufleet validate`.",
        "",
        "| field | type | required | default | description |",
        "|---|---|---|---|---|",
    ]
    lines += list(_rows(schema, "", True, schema.get("$defs", {})))
    lines += [
        "",
        "## Computed defaults",
        "",
        "Resolved from other fields by `gpufleet/spec/defaults.py`; `plan.md` lists the ones a fleet took.",
        "",
    ]
    lines += ["| field | default | why |", "|---|---|---|"]
    lines += [f"| `{c.path}` | {c.rule} | {c.reason} |" for c in COMPUTED]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT.relative_to(ROOT)}\n")
