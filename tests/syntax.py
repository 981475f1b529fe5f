"""Test helper: the syntax tree of a source file, parsed once per test session (several tests walk every module of
the checkout: the layers, the packaging rules). Callers must not change the tree they get."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def syntax_tree(path: Path) -> ast.Module:
    return _parsed(path.resolve())  # one parse for a module reached through gpufleet/components or components/


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))
