"""The fleet-wide diff (issue 44 item 2): `gpufleet diff OLD NEW` over directories of one synth tree per stack prints
each stack in deploy order (workers in the manager's MultiKueueConfig order, then the manager) with its counts,
then each stack's diff; a stack on one side only is compared with an empty fleet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gpufleet.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "golden" / "cases" / "multikueue" / "fleet.yaml"
TREES = ROOT / "tests" / "golden" / "trees" / "multikueue"
STACKS = ("prod.research-manager", "prod.research-use1", "prod.research-usw2")


def _golden(into: Path, stacks: tuple[str, ...] = STACKS) -> Path:
    for stack in stacks:
        shutil.copytree(TREES / stack, into / stack)
    return into


def _table(out: str) -> list[list[str]]:
    lines = out.splitlines()
    return [line.split() for line in lines[2 : lines.index("", 2)]]


def test_a_new_worker_and_a_changed_manager_in_deploy_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _golden(tmp_path / "old", STACKS[:2])
    data = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    data["admission"]["multiKueue"]["stepSize"] = 2
    spec = tmp_path / "fleet.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    new = tmp_path / "new"
    for stack in STACKS:
        assert main(["synth", str(spec), "--env", stack, "--out", str(new / stack)]) == 0
    capsys.readouterr()
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"gpufleet diff {old} -> {new}: 3 stacks, in the order they deploy"
    rows = _table(out)
    assert [r[1:4] for r in rows[1:]] == [
        ["prod.research-use1", "Worker", "changed"],
        ["prod.research-usw2", "Worker", "added"],
        ["prod.research-manager", "Manager", "changed"],
    ]
    east, west, manager = rows[1:]
    assert east[4:8] == ["0", "0", "0", "0"] and west[5:8] == ["0", "0", "0"] and int(west[4]) > 0
    assert manager[4:8] == ["0", "0", "1", "0"]  # the kueue release's stepSize
    assert f"gpufleet diff {old / 'prod.research-usw2'} -> {new / 'prod.research-usw2'}" in out
    assert "compared with an empty fleet, so every resource is added" in out


def test_a_removed_worker_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _golden(tmp_path / "old")
    new = _golden(tmp_path / "new", (STACKS[0], STACKS[1]))
    assert main(["diff", str(old), str(new), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"### gpufleet diff {old} -> {new}: 3 stacks, in the order they deploy"
    assert lines[2].startswith("| # | stack | role | stack is |")
    assert lines[6].startswith("| 3 | prod.research-manager | Manager | changed | 0 | 0 | 0 | 0 |")
    removed = lines[5].split(" | ")
    assert removed[1:4] == ["prod.research-usw2", "Worker", "removed"] and removed[4] == "0" and int(removed[5]) > 0


def test_a_stack_directory_against_a_missing_old_is_every_stack_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = _golden(tmp_path / "new")
    assert main(["diff", str(tmp_path / "absent"), str(new)]) == 0
    assert [r[3] for r in _table(capsys.readouterr().out)[1:]] == ["added", "added", "added"]


def test_a_single_tree_is_diffed_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(TREES / STACKS[1]), str(TREES / STACKS[1])]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == "no changes" and "stacks, in the order" not in out
