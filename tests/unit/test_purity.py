"""The pure core never imports pulumi: decisions stay testable without the engine (DESIGN.md section 1)."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "gpufleet"


def test_core_never_imports_pulumi() -> None:
    offenders = []
    files = sorted(CORE.rglob("*.py"))
    assert files, "no core modules found"
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(CORE.parent)}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in ("pulumi", "pulumi_aws", "pulumi_kubernetes", "components")]
    assert offenders == []
