"""The distribution owns one top-level package, gpufleet: the top-level folders components/ and policies/ of the
checkout install as gpufleet.components and gpufleet.policies (pyproject.toml; issue 15 item 6)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINKED = ("components", "policies")


@pytest.mark.parametrize("folder", LINKED)
def test_the_folder_is_linked_into_the_package(folder: str) -> None:
    link = ROOT / "gpufleet" / folder
    assert link.is_symlink() and link.readlink() == Path("..") / folder


def test_nothing_imports_the_folders_by_their_bare_names() -> None:
    # In a checkout both `components` and `gpufleet.components` would import, as two module objects of one file;
    # installed, only the second exists.
    files = [ROOT / "__main__.py"] + [p for top in ("gpufleet", *LINKED, "tools", "tests") for p in (ROOT / top).rglob("*.py")]
    bare = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bare += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in LINKED]
    assert bare == []
