"""The distribution owns one top-level package, gpufleet: the top-level folders components/ and policies/ of the
checkout install as gpufleet.components and gpufleet.policies (pyproject.toml; issue 15 item 6), and the wheel holds
every file an installed gpufleet reads (issue 14 item 8). .ci/run installs the built wheel outside the checkout and
synthesises the example with it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from setuptools.dist import Distribution

from tests.syntax import syntax_tree

ROOT = Path(__file__).resolve().parents[2]
LINKED = ("components", "policies", "schemas")


@pytest.mark.parametrize("folder", LINKED)
def test_the_folder_is_linked_into_the_package(folder: str) -> None:
    link = ROOT / "gpufleet" / folder
    assert link.is_symlink() and link.readlink() == Path("..") / folder


def test_nothing_imports_the_folders_by_their_bare_names() -> None:
    # In a checkout both `components` and `gpufleet.components` would import, as two module objects of one file;
    # installed, only the second exists.
    files = [ROOT / "__main__.py"] + [
        p for top in ("gpufleet", "components", "policies", "tools", "tests") for p in (ROOT / top).rglob("*.py")
    ]
    bare = []
    for path in files:
        for node in ast.walk(syntax_tree(path)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            bare += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {n}"
                for n in names
                if n.split(".")[0] in ("components", "policies")
            ]
    assert bare == []


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The wheel's files as setuptools lists them from pyproject.toml, without building (build_py's outputs)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # setuptools reads pyproject.toml and finds the packages from the working directory
        dist = Distribution()
        dist.script_name = "setup.py"  # build_py reads it; pyproject.toml is the only configuration
        dist.parse_config_files()
        # The egg-info goes to a fresh directory: one left in the checkout would add the files it lists.
        dist.get_command_obj("egg_info").egg_base = str(tmp_path_factory.mktemp("egg-info"))
        build_py = dist.get_command_obj("build_py")
        build_py.ensure_finalized()
        return {
            Path(out).relative_to(build_py.build_lib).as_posix() for out in build_py.get_outputs(include_bytecode=False)
        }


def test_the_wheel_holds_every_file_of_the_package(wheel_files: set[str]) -> None:
    # What the installed CLI, the Pulumi program and the pack read is inside gpufleet/ (through its links to
    # components/, policies/ and schemas/), loaded with importlib.resources; all of it must ship (issue 14 item 8).
    package = sorted(
        Path(top, name).relative_to(ROOT).as_posix()
        for top, dirs, files in os.walk(ROOT / "gpufleet", followlinks=True)
        if "__pycache__" not in Path(top).parts
        for name in files
    )
    assert "gpufleet/schemas/fleet.schema.json" in package and "gpufleet/components/recording.py" in package
    assert sorted(set(package) - wheel_files) == []


def test_the_fleet_repository_entries_import_from_the_wheel_alone(wheel_files: set[str], tmp_path: Path) -> None:
    """What `gpufleet init --pulumi` writes runs the installed package only (issue 35 item 2): the program entry's
    imports, run isolated (no working directory or PYTHONPATH on sys.path) from a directory outside the checkout,
    load only gpufleet modules the wheel holds, and the pack's entry finds gpufleet.policies' __main__ there."""
    code = (
        "import importlib.util, json, sys\n"
        "import gpufleet.components.program\n"
        "pack = importlib.util.find_spec('gpufleet.policies.__main__').origin\n"
        "print(json.dumps([pack] + [getattr(m, '__file__', None) or '' for m in list(sys.modules.values())]))\n"
    )
    done = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    files = json.loads(done.stdout)
    # The checkout's own files (an environment inside the checkout, as .ci/run and .venv make, is not the checkout).
    # The checkout is the one the environment installs gpufleet from (its pack entry's <checkout>/gpufleet/policies/).
    checkout = Path(files[0]).parents[2] if "site-packages" not in Path(files[0]).parts else ROOT
    if checkout != ROOT:
        # An editable install of another worktree of the repository: import this checkout, as an editable install of
        # it would (ahead of the installed finder), so its modules are compared with its own wheel.
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code
        done = subprocess.run(
            [sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        files = json.loads(done.stdout)
        checkout = ROOT
    inside = sorted(
        {
            Path(f).relative_to(checkout).as_posix()
            for f in files
            if f and Path(f).is_relative_to(checkout) and "site-packages" not in Path(f).parts
        }
    )
    assert "gpufleet/components/program.py" in inside and "gpufleet/policies/__main__.py" in inside
    assert [f for f in inside if f not in wheel_files] == []


def test_the_distribution_installs_only_gpufleet(wheel_files: set[str]) -> None:
    assert {f.split("/")[0] for f in wheel_files} == {"gpufleet"}


def test_no_module_locates_files_from_its_own_path() -> None:
    # A path built from __file__ points into the checkout, which an installed gpufleet does not have. Exceptions:
    # the scripts shipped to nodes (they run as files there) and the pack's entry point, which puts the checkout
    # on sys.path when the Pulumi CLI runs it from policies/.
    allowed = {"gpufleet/policies/__main__.py"}
    files = [
        Path(top, name)
        for top, _, names in os.walk(ROOT / "gpufleet", followlinks=True)
        if "data" not in Path(top).relative_to(ROOT).parts
        for name in names
        if name.endswith(".py")
    ]
    located = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in files
        if path.relative_to(ROOT).as_posix() not in allowed
        for node in ast.walk(syntax_tree(path))
        if isinstance(node, ast.Name) and node.id == "__file__"
    ]
    assert located == []


def test_ci_synthesises_the_example_with_the_wheel_outside_the_checkout() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    block = script[script.index("pip wheel") : script.index("diff -r out/prod")]
    assert 'cd "$wheel_home"' in block and "pip install -e" not in block
    for command in ("validate fleet.yaml", "plan fleet.yaml --env dev", "synth fleet.yaml --env prod --out out/prod"):
        assert f"venv/bin/gpufleet {command}" in block
