"""CI wiring: every Checkov skip carries its reason; the example workflow and .ci/run run what docs promise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_global_checkov_skip_has_a_comment_with_its_reason() -> None:
    lines = (ROOT / ".checkov.yaml").read_text().splitlines()
    config = yaml.safe_load("\n".join(lines))
    assert config["framework"] == ["kubernetes"] and config["skip-download"] is True
    skips = config["skip-check"]
    assert skips, "nothing skipped: then drop the list"
    for check in skips:
        at = next(i for i, line in enumerate(lines) if line.strip() == f"- {check}")
        assert lines[at - 1].strip().startswith("#") and len(lines[at - 1].strip()) > 20, f"{check} has no reason above it"


def test_every_object_level_checkov_skip_has_a_reason() -> None:
    found = 0
    for path in (ROOT / "tests" / "golden" / "trees").glob("*/*/*/k8s/*.yaml"):
        annotations = (yaml.safe_load(path.read_text()).get("metadata") or {}).get("annotations") or {}
        for key, value in annotations.items():
            if key.startswith("checkov.io/skip"):
                found += 1
                assert re.fullmatch(r"CKV2?_K8S_\d+=.{20,}", value), f"{path}: {key}: {value!r}"
    assert found, "the prepuller's probe skips should appear in the golden trees"


def test_baseline_holds_only_other_stages_pending_decisions() -> None:
    baseline = json.loads((ROOT / ".checkov.baseline").read_text())
    files = [entry["file"] for entry in baseline["failed_checks"]]
    assert files and not any(f.startswith("/01-foundation/") for f in files), "foundation objects are fixed or annotated, never baselined"


def test_example_workflow_reviews_every_pull_request() -> None:
    text = (ROOT / ".github" / "workflows" / "gpufleet.yml").read_text()
    workflow = yaml.safe_load(text)
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    for needle in ("gpufleet validate", 'gpufleet synth "$SPEC" --env "$env" --out "out/head/$env"', "base.sha", "gpufleet check", "checkov==$CHECKOV_VERSION",
                   'gpufleet diff "out/base/$env" "out/head/$env" --format markdown'):
        assert needle in text, needle
    preview = workflow["jobs"]["preview"]
    assert "AWS_ROLE_ARN" in preview["if"]
    step = next(s for s in preview["steps"] if s.get("uses", "").startswith("pulumi/actions"))
    assert step["with"]["command"] == "preview" and step["with"]["policyPacks"] == "policies"


def test_project_ci_runs_the_example_end_to_end() -> None:
    text = (ROOT / ".ci" / "run").read_text()
    for needle in ("gpufleet validate fleet.yaml", "--env dev --out out/dev", "--env prod --out out/prod", "gpufleet check out/dev", "gpufleet check out/prod", "checkov==3.3.30", "--baseline .checkov.baseline"):
        assert needle in text, needle
    assert text.rstrip().endswith("python -m pytest"), "the README's test command stays last"
