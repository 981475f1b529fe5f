"""The pure core never imports pulumi: decisions stay testable without the engine (docs/architecture.md section 1).

The only door from the core to the Pulumi layer is the synth command, which imports `gpufleet.components.recording`
inside a function, when synth actually runs."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.syntax import syntax_tree

# rglob does not descend into the links gpufleet/components and gpufleet/policies (the Pulumi layer and the policy
# pack, installed under gpufleet but not part of the core).
CORE = Path(__file__).resolve().parents[2] / "gpufleet"
PULUMI = ("pulumi", "pulumi_aws", "pulumi_kubernetes", "pulumi_policy")
LAZY_DOOR = {("gpufleet/commands/synth.py", "gpufleet.components.recording")}


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node, [node.module]


def test_core_never_imports_pulumi_or_components() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert files, "no core modules found"
    offenders = []
    for path in files:
        rel = str(path.relative_to(CORE.parent))
        tree = syntax_tree(path)
        top_level = {id(n) for n in tree.body}
        for node, names in _imports(tree):
            for name in names:
                root = name.split(".")[0]
                if root in PULUMI:
                    offenders.append(f"{rel}:{node.lineno} imports {name}")
                elif name.startswith("gpufleet.components") and ((rel, name) not in LAZY_DOOR or id(node) in top_level):
                    offenders.append(f"{rel}:{node.lineno} imports {name}")
    assert offenders == []


def test_importing_every_core_module_loads_no_pulumi() -> None:
    modules = sorted(
        ".".join(p.relative_to(CORE.parent).with_suffix("").parts).removesuffix(".__init__") for p in CORE.rglob("*.py")
    )
    code = (
        "import importlib, sys\n"
        + "".join(f"importlib.import_module({m!r})\n" for m in modules)
        + (
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {PULUMI!r}"
            " or m.startswith('gpufleet.components'))\n"
        )
        + "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=CORE.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_model_is_a_pure_layer_below_the_cli() -> None:
    """gpufleet.simulate reads spec, catalog, plan and the manifest builders; the CLI and commands sit above it."""
    offenders = []
    for path in sorted((CORE / "model").rglob("*.py")):
        rel = str(path.relative_to(CORE.parent))
        for node, names in _imports(syntax_tree(path)):
            for name in names:
                if name in (
                    "gpufleet.cli",
                    "gpufleet.commands.explain",
                    "gpufleet.commands.synth",
                    "gpufleet.plan.report",
                ) or name.startswith("gpufleet.components"):
                    offenders.append(f"{rel}:{node.lineno} imports {name}")
    assert offenders == []
