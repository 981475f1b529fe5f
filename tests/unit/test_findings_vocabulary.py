"""One name for one thing: every command's findings share one vocabulary (gpufleet.base.findings: severity, message,
hint), and no two modules define a class of the same name."""

from __future__ import annotations

import ast
import dataclasses
from collections import defaultdict
from pathlib import Path

import pytest

from gpufleet.base.errors import Issue
from gpufleet.base.findings import CatalogFinding
from gpufleet.diagnose.findings import LogFinding
from gpufleet.policies.rules import PolicyFinding
from gpufleet.preflight.findings import AccountFinding
from tests.syntax import syntax_tree

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", [Issue, AccountFinding, LogFinding, PolicyFinding, CatalogFinding])
def test_every_finding_says_severity_message_and_hint(kind: type) -> None:
    fields = {f.name for f in dataclasses.fields(kind)}
    assert {"severity", "message", "hint"} <= fields
    assert fields & {"what", "fix", "level", "blocking"} == set()


def _classes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for folder in ("gpufleet", "components", "policies"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "data" in parts or parts[:2] in (("gpufleet", "components"), ("gpufleet", "policies")):
                continue
            for node in syntax_tree(path).body:
                if isinstance(node, ast.ClassDef):
                    found[node.name].append("/".join(parts))
    return found


def test_no_two_modules_define_a_class_of_one_name() -> None:
    assert {name: where for name, where in _classes().items() if len(where) > 1} == {}
