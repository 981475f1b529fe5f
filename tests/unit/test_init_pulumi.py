"""`gpufleet init --pulumi DIR` (issue 35 item 2): a fleet repository that deploys from the installed package alone.
It validates and synthesises where it is written, its program entry registers exactly what synth records, and its
workflow, Checkov configuration and policy pack are gpufleet's own (tests/unit/test_packaging.py checks that the
entries import nothing the wheel lacks)."""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import site as sitelib
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest
import yaml

from gpufleet import __version__
from gpufleet.base.errors import UsageError
from gpufleet.cli import main
from gpufleet.commands import init
from gpufleet.components.recording import RecordingMocks, record
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    ".checkov.yaml",
    ".github/workflows/gpufleet.yml",
    ".gitignore",
    "Pulumi.yaml",
    "README.md",
    "__main__.py",
    "fleet.yaml",
    "policies/PulumiPolicy.yaml",
    "policies/__main__.py",
    "requirements.txt",
    "stacks/Pulumi.dev.yaml",
    "stacks/Pulumi.prod.yaml",
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("init-pulumi") / "my-fleet"
    assert main(["init", "--pulumi", str(path)]) == 0
    return path


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_repository_holds_what_a_deploy_needs(repo: Path) -> None:
    files = {name: text.decode() for name, text in _files(repo).items()}
    assert sorted(files) == FILES
    # The program and the pack are entries into the installed package; this checkout's __main__.py is the same.
    assert files["__main__.py"] == init.PROGRAM == (ROOT / "__main__.py").read_text()
    for entry in ("__main__.py", "policies/__main__.py"):
        assert len([line for line in files[entry].splitlines() if line]) == 2, entry
    # The review workflow and the Checkov configuration are the checkout's, byte for byte.
    assert files[".github/workflows/gpufleet.yml"] == (ROOT / ".github" / "workflows" / "gpufleet.yml").read_text()
    assert files[".checkov.yaml"] == (ROOT / ".checkov.yaml").read_text()
    project = yaml.safe_load(files["Pulumi.yaml"])
    assert project["name"] == "my-fleet" and project["stackConfigDir"] == "stacks"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
    # The oldest Pulumi CLI, stated where the CLI enforces it, and the same in this checkout's project.
    assert project["requiredPulumiVersion"] == f">={init.MINIMUM_PULUMI_CLI}" == ">=3.219.0"
    assert yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["requiredPulumiVersion"] == ">=3.219.0"
    assert "The Pulumi CLI 3.219.0 or newer" in files["README.md"]
    pack = yaml.safe_load(files["policies/PulumiPolicy.yaml"])
    assert pack["runtime"] == {"name": "python", "options": {"virtualenv": "../.venv"}}
    for env in ("dev", "prod"):
        stack = yaml.safe_load(files[f"stacks/Pulumi.{env}.yaml"])
        assert stack == {"config": {"aws:region": "us-east-1", "gpufleet:spec": "fleet.yaml"}}
    requirements = [line for line in files["requirements.txt"].splitlines() if not line.startswith("#")]
    pack_requirements = (ROOT / "policies" / "requirements.txt").read_text().splitlines()
    assert requirements == [f"gpufleet=={__version__}", *[r for r in pack_requirements if not r.startswith("#")]]
    assert files["fleet.yaml"] == init.starter_spec(init.instance_types(init.DEFAULT_INSTANCE_TYPES))
    assert "`dev` through admission, `prod` through cost" in files["README.md"]


def test_the_repository_validates_and_synthesises_where_it_is(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    assert main(["validate"]) == 0
    assert main(["synth", "--env", "dev", "--out", str(repo.parent / "out-dev")]) == 0
    assert json.loads((repo.parent / "out-dev" / "plan.json").read_text())["environment"] == "dev"


def test_the_program_entry_registers_what_synth_records(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `pulumi preview` runs in the repository: its __main__.py, with the stack's config."""
    plan = build_plan(load_fleet(str(repo / "fleet.yaml"), "dev").environments["dev"], "dev")
    expected = sorted((r.name, r.type) for r in record(plan))
    mocks = RecordingMocks(plan)
    monkeypatch.chdir(repo)
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.settings.reset_options()
    pulumi.runtime.set_mocks(mocks, project="my-fleet", stack="dev", preview=False)
    config = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    pulumi.runtime.set_all_config({k: v for k, v in config.items() if k.startswith("gpufleet:")})

    @pulumi.runtime.test
    def program() -> None:
        runpy.run_path(str(repo / "__main__.py"), run_name="__main__")

    try:
        program()
    finally:
        pulumi.runtime.set_all_config({})
    assert sorted((name, typ) for name, (typ, _) in mocks.inputs.items()) == expected


def test_refusals_leave_everything_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    (tmp_path / "a-file").write_text("mine")
    before = _files(tmp_path)
    for argv, message in [
        (["--pulumi", str(tmp_path / "taken")], "exists and is not an empty directory; give a new one"),
        (["--pulumi", str(tmp_path / "a-file")], "exists and is not an empty directory; give a new one"),
        (["--pulumi", str(tmp_path / "no" / "parent")], "cannot write in"),
        (["--pulumi", str(tmp_path / "new"), "--out", "x.yaml"], "--out and --pulumi: give one"),
        (["--gpufleet", "0.1.0", "--out", str(tmp_path / "x.yaml")], "--gpufleet: only with --pulumi"),
        (["--pulumi", str(tmp_path / "new"), "--gpufleet", "latest"], "--gpufleet latest: give a version on your"),
        (
            ["--pulumi", str(tmp_path / "new"), "--gpufleet", str(tmp_path / "gpufleet-0.1.0-py3-none-any.whl")],
            "no such file",
        ),
    ]:
        assert main(["init", *argv]) == 2
        assert message in capsys.readouterr().err
    assert _files(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "taken"]


def test_an_empty_directory_is_filled(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["init", "--pulumi", str(tmp_path / "empty"), "--instance-types", "g6e.xlarge"]) == 0
    assert sorted(_files(tmp_path / "empty")) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]  # no staging directory left beside it


WHEEL = "/srv/dist/gpufleet-0.1.0-py3-none-any.whl"
GIT = "git+https://git.example.com/platform/gpufleet.git"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (None, f"gpufleet=={__version__}"),
        ("0.1.0", "gpufleet==0.1.0"),
        ("0.2.0rc1", "gpufleet==0.2.0rc1"),
        (f"{GIT}@v0.1.0", f"gpufleet @ {GIT}@v0.1.0"),
        (
            f"{GIT}@0123456789abcdef0123456789abcdef01234567",
            f"gpufleet @ {GIT}@0123456789abcdef0123456789abcdef01234567",
        ),
    ],
)
def test_where_the_repository_installs_gpufleet_from(source: str | None, line: str) -> None:
    assert init.requirement(source) == line


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("latest", "--gpufleet latest: give a version on your package index (0.1.0), a wheel file (dist/gpufleet-0.1.0-py3-none-any.whl) or a git URL at a tag (git+https://git.example.com/platform/gpufleet.git@v0.1.0)"),
        (GIT, f"--gpufleet {GIT}: pin a tag, as in {GIT}@v0.1.0"),
        ("dist/other-1.0-py3-none-any.whl", "--gpufleet dist/other-1.0-py3-none-any.whl: not a gpufleet wheel (its name starts with gpufleet-)"),
        (WHEEL, f"--gpufleet {WHEEL}: no such file; build it with `pip wheel --no-deps .` in gpufleet"),
    ],
)  # fmt: skip
def test_a_source_it_cannot_install_from_is_a_usage_error(source: str, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        init.requirement(source)
    assert str(raised.value) == message


def test_a_wheel_is_written_as_its_absolute_file_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "gpufleet-0.1.0-py3-none-any.whl").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    line = init.requirement("dist/gpufleet-0.1.0-py3-none-any.whl")
    assert line == f"gpufleet @ file://{tmp_path}/dist/gpufleet-0.1.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(gpufleet's wheel, built from this checkout; a virtual environment without gpufleet that sees this one's
    other packages), so a fleet repository's `pip install --no-index -r requirements.txt` needs no network."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(root / "dist"),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (root / "dist").glob("gpufleet-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    deps = root / "deps"
    deps.mkdir()
    # Debian's Python names a venv's local/lib/pythonX.Y/dist-packages too, which its venv does not create.
    for site in (p for p in map(Path, sitelib.getsitepackages()) if p.is_dir()):
        for entry in site.iterdir():
            if not entry.name.startswith(("gpufleet", "__editable__")) and entry.suffix != ".pth":
                (deps / entry.name).symlink_to(entry)
    (purelib,) = (root / "venv" / "lib").glob("python*/site-packages")
    (purelib / "deps.pth").write_text(f"{deps}\n")
    return wheel, root / "venv"


def test_a_repository_that_installs_gpufleet_from_a_wheel_installs_and_synthesises(
    wheel_venv: tuple[Path, Path], tmp_path: Path
) -> None:
    wheel, venv = wheel_venv
    assert main(["init", "--pulumi", str(tmp_path / "repo"), "--gpufleet", str(wheel)]) == 0
    repo = tmp_path / "repo"
    assert (repo / "requirements.txt").read_text().splitlines()[3] == f"gpufleet @ {wheel.as_uri()}"
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUFLEET_UPSTREAM_DIR")}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, check=False)

    installed = run(str(python), "-m", "pip", "install", "--quiet", "--no-index", "-r", "requirements.txt")
    assert installed.returncode == 0, installed.stderr
    where = run(str(python), "-c", "import gpufleet; print(gpufleet.__file__)")
    assert where.stdout.startswith(str(venv)), where  # the wheel's gpufleet, not this checkout's
    synth = run(str(venv / "bin" / "gpufleet"), "synth", "--env", "dev", "--out", "out/dev")
    assert synth.returncode == 0, synth.stderr
    assert json.loads((repo / "out" / "dev" / "plan.json").read_text())["environment"] == "dev"
