"""Run the real promtool on the rule groups the stage builders render (Debian's `prometheus` package ships it;
.ci/run installs it). Locally, tests skip with a reason when promtool is absent; in CI (CI=true) they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "golden" / "cases"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is missing in CI: .ci/run must install Debian's `prometheus` package")
        pytest.skip("promtool not installed (apt-get install prometheus; .ci/run does it in CI)")
    return path


def stage_rule_groups(spec: Path, env: str, stage: str) -> list[dict[str, Any]]:
    """The rule groups of every PrometheusRule object the stage renders for `spec` / `env`."""
    fleet = load_fleet(str(spec), env).environments[env]
    plan = build_plan(fleet, env)
    content = next(s for s in plan.stages if s.name == stage).content
    groups: list[dict[str, Any]] = []
    for res in content.resources:
        obj = res.args.get("object", {})
        if obj.get("kind") == "PrometheusRule":
            groups += obj["spec"]["groups"]
    assert groups, f"{stage} renders no PrometheusRule"
    return groups


def _write_rules(tmp_path: Path, groups: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def check_rules(tmp_path: Path, groups: list[dict[str, Any]]) -> str:
    rules = _write_rules(tmp_path, groups)
    proc = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_rule_tests(tmp_path: Path, groups: list[dict[str, Any]], tests: list[dict[str, Any]]) -> None:
    """promtool test rules with `tests` (promtool's unit-test format) against `groups`."""
    _write_rules(tmp_path, groups)
    spec = tmp_path / "tests.yaml"
    spec.write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    proc = subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}
