"""The pull request workflow's script steps, run as GitHub Actions runs them (bash -eo pipefail, GITHUB_OUTPUT,
GITHUB_ENV, the `${{ }}` expressions they use) in a scratch git repository (issue 35 item 3). The steps that
install from a package index or run another action are left out; gpufleet is this test's own. The first pull
request (no spec at the base) and a new environment used to write `[]` into the base inventory, which
`gpufleet diff` refuses: both now diff against an empty fleet."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "gpufleet.yml"
BIN = Path(sys.executable).parent
# Steps that need the network (a package index) or are another action: what the test does instead is below.
LEFT_OUT = {"Install gpufleet (head)", "Install gpufleet (base)", "Checkov (Kubernetes objects)"}

SPEC: dict[str, Any] = yaml.safe_load((ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text())
SPEC["cluster"]["publicEndpoint"] = {"cidrs": ["203.0.113.0/24"]}  # what `gpufleet check` requires
SPEC["teams"][0]["members"] = [{"principalArn": "arn:aws:iam::111122223333:role/vision"}]
SPEC["environments"] = {"dev": {"rollout": {"through": "foundation"}}}


def _git(cwd: Path, *argv: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, spec: dict[str, Any] | None, message: str) -> str:
    if spec is None:
        (repo / "README.md").write_text("a fleet\n")
    else:
        (repo / "fleet.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


def _expand(script: str, outputs: dict[str, str], base_sha: str) -> str:
    """The `${{ }}` expressions the review job's scripts use; any other fails the test (teach it here)."""
    # upload-artifact is another action (not run here): no artifact URL
    known = {"github.event.pull_request.base.sha": base_sha, "steps.artifact.outputs.artifact-url": ""} | {
        f"steps.envs.outputs.{k}": v for k, v in outputs.items()
    }

    def value(match: re.Match[str]) -> str:
        assert match.group(1) in known, f"the test does not know the expression {match.group(0)}"
        return known[match.group(1)]

    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", value, script)


def _run_review(repo: Path, base_sha: str, tmp: Path) -> tuple[Path, list[str]]:
    """Run the review job's script steps in `repo` (checked out at the head); (the diff comment, the skipped steps)."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    runner_temp, files = tmp / "runner", tmp / "files"
    runner_temp.mkdir()
    files.mkdir()
    env = {**os.environ, **{k: str(v) for k, v in workflow["env"].items()}}
    env |= {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(runner_temp)}
    env |= {"GITHUB_WORKSPACE": str(repo), "GITHUB_STEP_SUMMARY": str(files / "summary")}
    env |= {"BASE_GPUFLEET": str(BIN / "gpufleet")}  # what "Install gpufleet (base)" records (same gpufleet here)
    env.pop("PYTHONPATH", None)
    outputs: dict[str, str] = {}
    skipped = []
    for step in workflow["jobs"]["review"]["steps"]:
        if "run" not in step or step["name"] in LEFT_OUT:
            skipped.append(step.get("name") or step["uses"])
            continue
        output, github_env = files / "output", files / "env"
        output.write_text("")
        github_env.write_text("")
        script = _expand(step["run"], outputs, base_sha)
        step_env = env | {"GITHUB_OUTPUT": str(output), "GITHUB_ENV": str(github_env)}
        step_env |= {k: _expand(str(v), outputs, base_sha) for k, v in (step.get("env") or {}).items()}
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=repo,
            env=step_env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"step {step['name']!r} failed:\n{done.stdout}\n{done.stderr}"
        assert "[]" not in done.stdout
        if step.get("id"):
            outputs |= dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        env |= dict(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
    return repo / "diff.md", skipped


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if not (BIN / "gpufleet").exists() or shutil.which("git") is None:
        pytest.skip(f"needs git and the gpufleet console script beside {sys.executable}")
    path = tmp_path / "fleet-repo"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    return path


def test_the_first_pull_request_diffs_against_an_empty_fleet(repo: Path, tmp_path: Path) -> None:
    base = _commit(repo, None, "an empty repository")
    _commit(repo, SPEC, "the fleet")
    comment, skipped = _run_review(repo, base, tmp_path)
    assert sorted(skipped) == sorted(
        [
            "Check out the head commit",
            "Set up Python",
            *LEFT_OUT,
            "Keep the whole diff as an artifact",
            "Post the diff as a pull request comment",
        ]
    )
    text = comment.read_text()
    assert text.startswith("<!-- gpufleet-diff -->\n<!-- gpufleet-diff:dev -->\n")
    assert "No tree at the base (a new environment, or the first pull request)" in text
    actions = set(re.findall(r"^\| (\S+) \| `", text, re.M))
    assert actions == {"+"} and "| + | `01-foundation` |" in text
    assert not (repo / "out" / "base" / "dev").exists()
    assert (repo / "comment.md").read_text() == text  # it fits in one comment: posted whole


def test_a_new_environment_diffs_against_an_empty_fleet_and_the_others_against_the_base(
    repo: Path, tmp_path: Path
) -> None:
    base = _commit(repo, SPEC, "the fleet")
    head = yaml.safe_load(yaml.safe_dump(SPEC))
    head["nodeGroups"][0]["scaling"]["maxSize"] = 6
    head["environments"]["staging"] = {"rollout": {"through": "foundation"}}
    _commit(repo, head, "staging, and a smaller group")
    comment, _ = _run_review(repo, base, tmp_path)
    dev, staging = comment.read_text().split("<!-- gpufleet-diff:staging -->")
    assert "No tree at the base" not in dev and "scalingConfig.maxSize" in dev
    assert set(re.findall(r"^\| (\S+) \| `", dev, re.M)) == {"~"}
    assert "No tree at the base" in staging and set(re.findall(r"^\| (\S+) \| `", staging, re.M)) == {"+"}
    assert (repo / "out" / "base" / "dev" / "plan.json").is_file()
    assert not (repo / "out" / "base" / "staging").exists()
