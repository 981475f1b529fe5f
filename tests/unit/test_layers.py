"""Imports run one way: each module imports only modules of its own or a lower layer, there is no import cycle,
and no import hides inside a function to dodge one (docs/architecture.md section 1; issue 15).

Read bottom up, a layer may use everything below it, and each layer is a folder of gpufleet/:
base (errors, interrupts, templates) -> facts (catalog, versions, stages) -> spec (the model, its loading, defaults
and names) -> rules, and apart from them (neither imports the other) plan (its parts, then manifests, then the
builders the stages share, then the stages, then the rollout and plan.md) with the tree -> what reads trees and accounts (review, preflight, diagnose) and the behavioural model (simulate) -> the
Pulumi layer (components) and the policy pack -> the commands and the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpufleet.cli import COMMANDS
from tests.syntax import syntax_tree

ROOT = Path(__file__).resolve().parents[2]
# Folder of the checkout -> the package it installs as: components/ and policies/ install under gpufleet
# (gpufleet/components and gpufleet/policies link to them; pyproject.toml).
PACKAGES = {
    "gpufleet": "gpufleet",
    "components": "gpufleet.components",
    "policies": "gpufleet.policies",
    "tools": "tools",
}

# The layers are folders, lowest first: a module belongs to the layer of the longest folder (or module) below that
# contains it, so a new module takes its folder's layer and a new folder must be placed here. Within gpufleet/plan/,
# the parts of a plan lie below the manifests, the manifests below the builders (the seams and shared resources),
# those below the stages, and the stages below the rollout and its review (the rest of the folder).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("gpufleet", "gpufleet.base"),
    ("gpufleet.facts",),
    ("gpufleet.spec",),
    ("gpufleet.rules",),
    ("gpufleet.plan.parts",),
    ("gpufleet.plan.manifests",),
    ("gpufleet.plan.builders",),
    ("gpufleet.plan.stages",),
    ("gpufleet.plan", "gpufleet.tree"),
    ("gpufleet.review", "gpufleet.preflight", "gpufleet.diagnose", "gpufleet.simulate"),
    ("gpufleet.components", "gpufleet.policies"),
    ("gpufleet.commands", "gpufleet.cli", "tools"),
)
FOLDERS = {prefix for layer in LAYERS for prefix in layer}
# Folders that know nothing of each other although the table orders them: the rules judge a spec and the plan renders
# a valid one, so a fact both need (what a fleet deploys, how many EFA interfaces a group attaches) is the spec
# layer's (gpufleet.spec.deployed, gpufleet.spec.efa), and the plan never depends on how a spec is judged (issue 42).
APART: tuple[tuple[str, str], ...] = (("gpufleet.plan", "gpufleet.rules"), ("gpufleet.tree", "gpufleet.rules"))
# The only imports allowed inside a function, with the reason. gpufleet.commands.synth is the core's one door to the
# Pulumi layer, opened only when synth runs (tests/unit/test_purity.py). gpufleet.cli imports the module of the command
# that runs, by name from its COMMANDS table, and no other: importing every command's modules made `validate` take a
# second instead of a fifth (tests/unit/test_cli_imports.py).
LAZY = {("gpufleet.commands.synth", "gpufleet.components.recording")} | {
    ("gpufleet.cli", module) for module, _ in COMMANDS.values()
}
# The policy pack runs where gpufleet is not installed (policies/__main__.py puts the checkout on sys.path): what it
# reaches of gpufleet must be standard-library only.
PACK_MAY_REACH = {
    "gpufleet",
    "gpufleet.spec.names",
    "gpufleet.tree.entries",
    "gpufleet.spec.fleet",
    "gpufleet.spec.fields",
    "gpufleet.base.errors",
    "gpufleet.facts.versions",
    "gpufleet.facts.ami_releases",
    "gpufleet.facts.stages",
    "gpufleet.facts.images",
}


def _module_name(path: Path) -> str:
    folder, *parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join([PACKAGES[folder]] + (parts[:-1] if parts[-1:] == ["__init__"] else parts))


def _sources() -> dict[str, Path]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "data" not in p.relative_to(ROOT).parts]
    return {_module_name(p): p for p in files}


SOURCES = _sources()


def _resolve(module: str, name: str | None) -> str:
    """`from module import name`: the submodule when `name` is one, else the module."""
    if name is not None and f"{module}.{name}" in SOURCES:
        return f"{module}.{name}"
    return module


def _imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported project module, line, at module level) for every import of a project module."""
    path = SOURCES[module]
    tree = syntax_tree(path)
    nested = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(f)
        if n is not f
    }
    out: list[tuple[str, int, bool]] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [_resolve(base, a.name) for a in node.names]
        for target in targets:
            if target.split(".")[0] in ("gpufleet", "tools") and target != module:
                out.append((target, node.lineno, id(node) not in nested))
    return out


def _commands() -> list[tuple[str, int, bool]]:
    """The imports by name of gpufleet.cli (importlib.import_module of a COMMANDS module): inside a function."""
    tree = ast.parse(SOURCES["gpufleet.cli"].read_text())
    [line] = [
        n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "importlib.import_module"
    ]
    return [(module, line, False) for module, _ in COMMANDS.values()]


GRAPH = {module: _imports(module) + (_commands() if module == "gpufleet.cli" else []) for module in SOURCES}


def _layer(module: str) -> int:
    best, layer = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or (prefix != "gpufleet" and module.startswith(prefix + "."))) and len(prefix) > best:
                best, layer = len(prefix), i
    return layer


def test_every_module_has_a_layer() -> None:
    assert [m for m in SOURCES if _layer(m) < 0] == []


def test_every_module_lives_in_a_layer_folder() -> None:
    # The package's top level holds only the CLI and the folders: the folders are the architecture.
    top = sorted(m for m in SOURCES if m.count(".") == 1 and m.startswith("gpufleet.") and m not in FOLDERS)
    assert top == []
    folders = {p.name for p in (ROOT / "gpufleet").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {f"gpufleet.{f}" for f in folders} <= FOLDERS


def test_imports_point_down() -> None:
    upward = [
        f"{SOURCES[m].relative_to(ROOT)}:{line}: {m} (layer {_layer(m)}) imports {target} (layer {_layer(target)})"
        for m, imports in GRAPH.items()
        for target, line, _ in imports
        if _layer(target) > _layer(m)
    ]
    assert upward == []


def _in(module: str, folder: str) -> bool:
    return module == folder or module.startswith(folder + ".")


def test_apart_folders_import_nothing_of_each_other() -> None:
    crossing = [
        f"{SOURCES[m].relative_to(ROOT)}:{line}: {m} imports {target}"
        for m, imports in GRAPH.items()
        for target, line, _ in imports
        for a, b in APART
        if (_in(m, a) and _in(target, b)) or (_in(m, b) and _in(target, a))
    ]
    assert crossing == []


def test_no_import_hides_in_a_function() -> None:
    lazy = [
        f"{SOURCES[m].relative_to(ROOT)}:{line}: {m} imports {target} inside a function"
        for m, imports in GRAPH.items()
        for target, line, top in imports
        if not top and (m, target) not in LAZY
    ]
    assert lazy == []


def test_no_import_cycle() -> None:
    edges = {m: sorted({t for t, _, _ in imports if t in SOURCES}) for m, imports in GRAPH.items()}
    state: dict[str, int] = {}  # 1 visiting, 2 done
    cycles: list[list[str]] = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        for target in edges[module]:
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_policy_pack_reaches_only_standard_library_leaves_of_gpufleet() -> None:
    reached: set[str] = set()
    todo = [m for m in SOURCES if m.startswith("gpufleet.policies")]
    while todo:
        module = todo.pop()
        for target, _, _ in GRAPH[module]:
            if (
                target.split(".")[0] == "gpufleet"
                and not target.startswith("gpufleet.policies")
                and target not in reached
            ):
                reached.add(target)
                todo.append(target)
    assert reached <= PACK_MAY_REACH


@pytest.mark.parametrize(
    "forbidden",
    [
        "gpufleet.plan.manifests -> gpufleet.plan.builders",
        "gpufleet.plan.builders -> gpufleet.plan.stages",
        "gpufleet.rules.cross_field -> gpufleet.plan.manifests",
        "gpufleet.review.impact -> gpufleet.policies",
    ],
)
def test_the_layers_forbid_the_old_tangles(forbidden: str) -> None:
    # The directions issue 15 removed stay upward in the table, so test_imports_point_down catches them again.
    low, high = forbidden.split(" -> ")
    assert _layer(low) < _layer(high)


def test_no_private_name_is_imported_from_another_module() -> None:
    # A leading underscore says "this module's own": a second module that needs it makes it public API instead.
    private = [
        f"{SOURCES[m].relative_to(ROOT)}:{node.lineno}: {alias.name} from {node.module}"
        for m in SOURCES
        for node in ast.walk(syntax_tree(SOURCES[m]))
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpufleet"
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert private == []
