"""Every Kubernetes object the documentation shows a user: each object of docs/examples/*.yaml and each whole object
in a ```yaml block of README.md and docs/**/*.md (a block of fields, such as a probe or a spec section, is not one;
nor is a Fleet spec). The tests that hold the examples to what the fleet accepts (the pinned schemas and CRDs, the
team's access, explain's verdict, KEDA's semantics) read them all from here, so a recipe in prose is tested as the
examples are (issue 41 item 10)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"


def yaml_blocks(path: Path) -> Iterator[tuple[int, str]]:
    """(line of the opening fence, text) of every ```yaml block of a Markdown file."""
    text = path.read_text()
    for match in re.finditer(r"^```yaml\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        yield text.count("\n", 0, match.start()) + 1, match.group(1)


def _is_object(doc: Any) -> bool:
    return (
        isinstance(doc, Mapping)
        and isinstance(doc.get("apiVersion"), str)
        and isinstance(doc.get("kind"), str)
        and doc["kind"] != "Fleet"
        and isinstance(doc.get("metadata"), Mapping)
    )


def recipes() -> list[tuple[str, dict[str, Any]]]:
    """(where: FILE:LINE of the block, object) of every whole object in the prose's YAML blocks."""
    out = []
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for line, block in yaml_blocks(path):
            for doc in yaml.safe_load_all(block):
                if _is_object(doc):
                    out.append((f"{path.relative_to(ROOT)}:{line}", doc))
    return out


def examples() -> list[tuple[str, dict[str, Any]]]:
    """(where: FILE#INDEX, object) of every object of docs/examples/*.yaml."""
    return [
        (f"{path.relative_to(ROOT)}#{index}", doc)
        for path in sorted(EXAMPLES.glob("*.yaml"))
        for index, doc in enumerate(yaml.safe_load_all(path.read_text()))
        if _is_object(doc)
    ]


def documented() -> list[tuple[str, dict[str, Any]]]:
    """The examples, then the recipes."""
    return examples() + recipes()
