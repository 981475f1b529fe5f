"""The command line contract (docs/architecture.md section 5): exit codes, and what `plan` says about each stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.facts import stages

ROOT = Path(__file__).resolve().parents[2]
BROKEN = "tests/specs/invalid/unknown-key.yaml"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["validate", "fleet.yaml"], 0),
        (["validate"], 0),  # SPEC defaults to fleet.yaml
        (["validate", "fleet.yaml", "--env", "dev"], 0),
        (["validate", "tests/specs/valid/minimal.yaml"], 0),
        (["validate", BROKEN], 1),
        (["validate", "fleet.yaml", "--env", "staging"], 1),
        (["validate", "no-such-fleet.yaml"], 2),
        (["validate", "tests/specs"], 2),  # a directory is not a spec
        (["frobnicate"], 2),
        ([], 2),
        (["validate", "--no-such-flag"], 2),
        (["plan", "fleet.yaml"], 2),  # --env is required
        (["plan", "fleet.yaml", "--env", "dev"], 0),
        (["plan", "fleet.yaml", "--env", "staging"], 1),
        (["plan", BROKEN, "--env", "dev"], 1),
        (["plan", "no-such-fleet.yaml", "--env", "dev"], 2),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_exit_codes(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> None:
    assert run(capsys, *argv)[0] == code


def test_validate_prints_the_environments_on_success(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "validate", "fleet.yaml") == (0, "fleet.yaml: valid (environments: dev, prod)\n", "")
    assert run(capsys, "validate", "fleet.yaml", "--env", "prod") == (0, "fleet.yaml: valid (environments: prod)\n", "")


def test_invalid_spec_writes_nothing_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", BROKEN)
    assert (code, out) == (1, "")
    assert err.startswith(f"{BROKEN}:")


def test_missing_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "validate", "no-such-fleet.yaml") == (
        2,
        "",
        "gpufleet validate: error: cannot read no-such-fleet.yaml: No such file or directory\n",
    )


def test_unknown_environment_names_the_ones_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "fleet.yaml", "--env", "staging")
    assert (code, out) == (1, "")
    assert 'environments: no environment "staging" in the spec' in err
    assert "hint: allowed: dev, prod" in err


def _included(table: str) -> dict[str, str]:
    """stage -> included ("yes"/"no") from the rows of `gpufleet plan`'s table."""
    rows = [line.split() for line in table.splitlines() if line[:1].isdigit()]
    return {row[1]: row[2] for row in rows}


@pytest.mark.parametrize(
    ("env", "through"),
    [("dev", "admission"), ("prod", "cost")],
)
def test_plan_includes_the_stages_through_the_environment_rollout(
    capsys: pytest.CaptureFixture[str], env: str, through: str
) -> None:
    code, out, err = run(capsys, "plan", "fleet.yaml", "--env", env)
    assert code == 0, err
    assert out.startswith(
        f"fleet research, environment {env}: rollout through {through} (stage {stages.index(through)} of 8)\n"
    )
    last = stages.STAGES.index(through)
    assert _included(out) == {stage: "yes" if i <= last else "no" for i, stage in enumerate(stages.STAGES)}
    assert list(_included(out)) == list(stages.STAGES)  # in rollout order


def test_plan_dev_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "plan", "fleet.yaml", "--env", "dev")[1]
    assert _included(out) == {
        "foundation": "yes",
        "telemetry": "yes",
        "admission": "yes",
        "sharing": "no",
        "network": "no",
        "storage": "no",
        "health": "no",
        "cost": "no",
    }
