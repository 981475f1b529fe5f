"""`gpufleet init` (issue 14 item 9): a commented starter spec for given instance types that validates, plans and
synthesises; written atomically and never over an existing file; every bad input exits 2 with its message and
leaves the directory as it was."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gpufleet.cli import main
from gpufleet.commands import init
from gpufleet.facts import catalog
from gpufleet.rules.pipeline import validate_loaded
from gpufleet.spec.load import load_text
from gpufleet.tree import output

ROOT = Path(__file__).resolve().parents[2]
# The golden starter for a fixed list; regenerate with GPUFLEET_UPDATE_GOLDEN=1 after an intended change.
GOLDEN = ROOT / "tests" / "specs" / "valid" / "init-p5-g6e.yaml"
TYPES = "p5.48xlarge,g6e.xlarge"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["init", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _entries(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_starter_for_a_fixed_list_is_the_golden(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    code, out, err = _run(capsys, "--instance-types", TYPES, "--out", "-")
    assert (code, err) == (0, "")
    if os.environ.get("GPUFLEET_UPDATE_GOLDEN"):
        GOLDEN.write_text(out)
    assert out == GOLDEN.read_text()
    assert _entries(workdir) == {}  # `--out -` writes nothing


def test_the_starter_is_about_twenty_to_thirty_lines() -> None:
    lines = GOLDEN.read_text().splitlines()
    assert (
        20 <= len(lines) <= 37
    )  # issue 31: the endpoint's CIDRs and the team's members; an EFA group: fabric, zone, subnet
    assert sum(1 for line in lines if "#" in line) >= 8  # commented: what to replace, what each section is


def test_init_writes_fleet_yaml_that_validates_plans_and_synthesises(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    assert _run(capsys, "--instance-types", TYPES) == (0, "wrote fleet.yaml; next: gpufleet validate fleet.yaml\n", "")
    assert (workdir / "fleet.yaml").read_text() == GOLDEN.read_text()
    assert [p.name for p in workdir.iterdir()] == ["fleet.yaml"]  # no staging file left
    assert main(["validate"]) == 0
    assert capsys.readouterr() == ("fleet.yaml: valid (environments: dev, prod)\n", "")
    for env in ("dev", "prod"):
        assert main(["plan", "--env", env]) == 0
        assert capsys.readouterr().err == ""
    assert main(["synth", "--env", "prod", "--out", "out/prod"]) == 0
    assert capsys.readouterr().err == ""
    plan = json.loads((workdir / "out/prod/plan.json").read_text())
    assert {v["from"] for v in plan["versions"].values()} == {"tested"}
    # issue 31 item 9: the starter passes gpufleet check (before, its open endpoint and its team without members
    # were two mandatory violations)
    assert main(["check", "out/prod"]) == 0
    assert "out/prod: passed" in capsys.readouterr().out


def test_the_starter_plans_with_one_addon_warning_that_says_why_and_how(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    # issue 41 item 19: the starter printed five "EKS add-on ... is not pinned" warnings, none saying why it matters.
    assert _run(capsys)[0] == 0
    assert main(["plan", "--env", "prod"]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if "warning:" in line]
    addons = [w for w in warnings if "add-on" in w]
    assert len(addons) == 1, warnings
    assert "the default moves with EKS releases: environments created apart run different versions" in addons[0]
    assert (
        "To silence this, pin each to a version `aws eks describe-addon-versions --kubernetes-version 1.35"
        in (addons[0])
    )


def test_the_placeholders_check_requires_are_called_out() -> None:
    text = GOLDEN.read_text()
    for line in ("  publicEndpoint: {cidrs: [203.0.113.0/24]}", '    members: [{principalArn: "arn:aws:iam::'):
        (found,) = [t for t in text.splitlines() if t.startswith(line)]
        assert "# REPLACE" in found


def test_the_written_file_has_the_usual_mode(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    umask = os.umask(0o022)
    try:
        assert _run(capsys)[0] == 0
    finally:
        os.umask(umask)
    assert (workdir / "fleet.yaml").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("name", catalog.gpu_instance_names())
def test_every_catalog_instance_type_gives_a_valid_starter(name: str) -> None:
    validated = validate_loaded(load_text(init.starter_spec(init.instance_types(name)), "fleet.yaml"))
    assert sorted(validated.environments) == ["dev", "prod"]
    assert validated.warnings == ()


def test_the_default_is_one_l4_group(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    code, out, _ = _run(capsys, "--out", "-")
    assert code == 0
    assert "  - name: g6-xlarge  # 1 x NVIDIA L4\n    instanceType: g6.xlarge\n" in out
    assert "      - {nodeGroup: g6-xlarge, gpus: 2}\n" in out


FAMILIES = ", ".join(sorted({t.family for t in catalog.CATALOG.values()}))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--instance-types", "p5.48xlage"],
            '--instance-types: "p5.48xlage" is not a GPU instance type gpufleet knows; did you mean "p5.48xlarge"?',
        ),
        (
            ["--instance-types", "g6.xlarge,zzz"],
            (
                '--instance-types: "zzz" is not a GPU instance type gpufleet knows; the GPU instance types gpufleet'
                f" knows: {FAMILIES} families (gpufleet/facts/catalog.py)"
            ),
        ),
        (["--instance-types", ""], "--instance-types: give at least one GPU instance type, e.g. g6.xlarge"),
        (["--instance-types", " , "], "--instance-types: give at least one GPU instance type, e.g. g6.xlarge"),
        (
            ["--instance-types", "g6.xlarge, g6.xlarge"],
            "--instance-types: g6.xlarge is given twice; each instance type becomes one node group",
        ),
        (
            ["--out", "existing.yaml"],
            "--out existing.yaml: exists; gpufleet init never overwrites a file: remove it or name another",
        ),
        (
            ["--out", "directory"],
            "--out directory: exists; gpufleet init never overwrites a file: remove it or name another",
        ),
        (
            ["--out", "dangling"],
            "--out dangling: exists; gpufleet init never overwrites a file: remove it or name another",
        ),
        (
            ["--out", "missing/fleet.yaml"],
            "--out missing/fleet.yaml: cannot write in missing: No such file or directory",
        ),
        (
            ["--out", "existing.yaml/fleet.yaml"],
            "--out existing.yaml/fleet.yaml: cannot write in existing.yaml: Not a directory",
        ),
    ],
)
def test_a_bad_input_exits_2_with_its_message_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], workdir: Path, argv: list[str], message: str
) -> None:
    (workdir / "existing.yaml").write_text("mine\n")
    (workdir / "directory").mkdir()
    (workdir / "dangling").symlink_to("nowhere")
    before = {p.name for p in workdir.iterdir()}
    assert _run(capsys, *argv) == (2, "", f"gpufleet init: error: {message}\n")
    assert {p.name for p in workdir.iterdir()} == before
    assert (workdir / "existing.yaml").read_text() == "mine\n" and not (workdir / "fleet.yaml").exists()


def test_a_file_created_while_init_runs_is_not_overwritten(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tempfile.mkstemp

    def racing(*args: Any, **kwargs: Any) -> tuple[int, str]:
        (workdir / "fleet.yaml").write_text("theirs\n")  # appears after the first check, before the file is linked
        return real(*args, **kwargs)

    monkeypatch.setattr(output.tempfile, "mkstemp", racing)
    assert _run(capsys) == (
        2,
        "",
        (
            "gpufleet init: error: --out fleet.yaml: exists; gpufleet init never overwrites a file: remove it or name"
            " another\n"
        ),
    )
    assert [p.name for p in workdir.iterdir()] == ["fleet.yaml"]
    assert (workdir / "fleet.yaml").read_text() == "theirs\n"


def test_the_readme_quick_start_shows_the_default_starter() -> None:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start") : readme.index("\n## ", readme.index("## Quick start") + 3)]
    block = quick_start.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert block == init.starter_spec(init.instance_types(init.DEFAULT_INSTANCE_TYPES))
    assert "gpufleet init --instance-types g6.xlarge --out first.yaml" in quick_start
