"""Defaults have one home (docs/architecture.md section 4): static ones in the schema, computed ones in gpufleet.spec.defaults.
The typed model reads the filled data as it is: a `.get(key, default)` there would be a third, unlisted home, and
the spec reference (generated from the two homes) would not show it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.syntax import syntax_tree

MODEL = Path(__file__).resolve().parents[2] / "gpufleet" / "spec" / "fleet.py"


def _defaults_named(tree: ast.AST) -> list[str]:
    """`.get(key, value)` calls whose value is not None, and module constants named as defaults."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and not (isinstance(node.args[1], ast.Constant) and node.args[1].value is None)
        ):
            found.append((node.lineno, ast.unparse(node)))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and "DEFAULT" in t.id.upper() for t in node.targets
        ):
            found.append((node.lineno, ast.unparse(node)[:80]))
    return [f"line {line}: {text}" for line, text in sorted(found)]


def test_the_model_names_no_default() -> None:
    assert _defaults_named(syntax_tree(MODEL)) == []


def test_the_check_finds_a_default() -> None:
    planted = ast.parse('x = d.get("open", False)\n_DEFAULT_PRIORITIES = ()\ny = d.get("id")\n')
    assert _defaults_named(planted) == ["line 1: d.get('open', False)", "line 2: _DEFAULT_PRIORITIES = ()"]
