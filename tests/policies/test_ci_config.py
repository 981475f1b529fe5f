"""CI wiring: every Checkov skip carries its reason; the example workflow and .ci/run run what docs promise."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from tests import fastyaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_global_checkov_skip_has_a_comment_with_its_reason() -> None:
    lines = (ROOT / ".checkov.yaml").read_text().splitlines()
    config = yaml.safe_load("\n".join(lines))
    assert config["framework"] == ["kubernetes"] and config["skip-download"] is True
    skips = config["skip-check"]
    assert skips, "nothing skipped: then drop the list"
    for check in skips:
        at = next(i for i, line in enumerate(lines) if line.strip() == f"- {check}")
        assert lines[at - 1].strip().startswith("#") and len(lines[at - 1].strip()) > 20, (
            f"{check} has no reason above it"
        )


def test_every_object_level_checkov_skip_has_a_reason() -> None:
    """Every `checkov.io/skipN` annotation in every golden tree names one check and says why. Checkov splits the
    value at "=", so the reason holds none (and an empty reason would be recorded as such)."""
    found = set()
    for path in (ROOT / "tests" / "golden" / "trees").glob("*/*/*/k8s/*.yaml"):
        for doc in fastyaml.load_all(path.read_text()):
            annotations = ((doc or {}).get("metadata") or {}).get("annotations") or {}
            for key, value in annotations.items():
                if key.startswith("checkov.io/skip"):
                    assert re.fullmatch(r"checkov\.io/skip\d+", key), f"{path}: {key}"
                    check, _, reason = value.partition("=")
                    assert re.fullmatch(r"CKV2?_K8S_\d+", check), f"{path}: {key}: {value!r}"
                    assert "=" not in reason and len(reason.strip()) >= 20, (
                        f"{path}: {key}: the reason is missing or too short: {value!r}"
                    )
                    found.add((doc["kind"], doc["metadata"]["name"], check))
    # Some of the objects that carry skips (every decision: docs/policies-and-diff.md, "Checkov").
    assert {
        ("DaemonSet", "prepull-h100", "CKV_K8S_8"),
        ("Job", "nccl-gate-h100", "CKV_K8S_23"),
        ("DaemonSet", "kube-multus-ds", "CKV_K8S_16"),
        ("Deployment", "gpufleet-remediator", "CKV_K8S_38"),
        ("Job", "gpufleet-planted-fault", "CKV_K8S_38"),
    } <= found


def test_no_checkov_baseline() -> None:
    """A baseline hides findings without a reason: every finding is fixed, or skipped on its object with one."""
    assert not (ROOT / ".checkov.baseline").exists()
    for path in (ROOT / ".ci" / "run", ROOT / ".github" / "workflows" / "gpufleet.yml", ROOT / ".checkov.yaml"):
        text = path.read_text()
        assert "--baseline" not in text and ".checkov.baseline" not in text and "baseline:" not in text, path


def test_example_workflow_reviews_every_pull_request() -> None:
    text = (ROOT / ".github" / "workflows" / "gpufleet.yml").read_text()
    workflow = yaml.safe_load(text)
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    for needle in (
        "gpufleet validate",
        'gpufleet synth "$SPEC" --env "$env" --out "out/head/$env"',
        "base.sha",
        "gpufleet check",
        "checkov==$CHECKOV_VERSION",
        'gpufleet diff "out/base/$env" "out/head/$env" --format markdown',
    ):
        assert needle in text, needle
    preview = workflow["jobs"]["preview"]
    assert "AWS_ROLE_ARN" in preview["if"]
    step = next(s for s in preview["steps"] if s.get("uses", "").startswith("pulumi/actions"))
    assert step["with"]["command"] == "preview" and step["with"]["policyPacks"] == "policies"
    assert step["with"]["upsert"] is True  # a new environment's stack is created
    assert workflow["jobs"]["review"]["if"] == "github.event_name == 'pull_request'"


# The newest release of each action the workflow uses, by the commit its tag points to (each repository's tag, read
# from its git history).
PINNED_ACTIONS = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/github-script": ("ed597411d8f924073f98dfc5c65a23a2325f34cd", "v8.0.0"),
    "aws-actions/configure-aws-credentials": ("e6de054238d6b7531b4efff3b6587d9aade6a06c", "v6.2.3"),
    "pulumi/actions": ("8e5e406f4007fca908480587cb9893c07090f58d", "v7.0.0"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
}


def test_every_action_is_pinned_by_commit_sha_with_its_tag_beside_it() -> None:
    text = (ROOT / ".github" / "workflows" / "gpufleet.yml").read_text()
    uses = re.findall(r"^\s*(?:- )?uses: (\S+)(.*)$", text, re.M)
    assert len(uses) == 12
    for ref, comment in uses:
        action, _, sha = ref.partition("@")
        assert (sha, comment.strip()) == (PINNED_ACTIONS[action][0], f"# {PINNED_ACTIONS[action][1]}"), ref


def test_any_backend_and_a_deploy_on_merge_that_is_off_by_default() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "gpufleet.yml").read_text())
    assert workflow[True]["push"] == {"branches": ["main"]}
    for job in ("preview", "deploy"):
        env = workflow["jobs"][job]["env"]
        assert env["PULUMI_BACKEND_URL"] == "${{ vars.PULUMI_BACKEND_URL }}", job
        assert env["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}", job
    deploy = workflow["jobs"]["deploy"]
    assert "vars.GPUFLEET_DEPLOY_ON_MERGE == 'true'" in deploy["if"] and "github.event_name == 'push'" in deploy["if"]
    script = next(s["run"] for s in deploy["steps"] if s.get("name") == "pulumi up, environment by environment")
    assert "pulumi stack select --create" in script and "pulumi up --yes --diff --policy-pack policies" in script
    # The CLI the jobs install is the Pulumi SDK release gpufleet pins.
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"pulumi=={workflow['env']['PULUMI_VERSION']}" in pins


def test_project_ci_runs_the_example_end_to_end() -> None:
    text = (ROOT / ".ci" / "run").read_text()
    for needle in (
        "gpufleet validate fleet.yaml",
        "--env dev --out out/dev",
        "--env prod --out out/prod",
        "gpufleet check out/dev",
        "gpufleet check out/prod",
        "checkov==3.3.30",
        "--config-file .checkov.yaml",
    ):
        assert needle in text, needle
    # The README's two test commands close it: the unit suite, then the real-cluster tests (docs/cluster-in-a-box.md).
    unit, e2e = "\npython -m pytest -n auto\n", "export GOTOOLCHAIN=go1.27.3 && python -m pytest e2e"
    assert text.rstrip().endswith(e2e), "the README's real-cluster command stays last"
    assert unit in text and text.index(unit) < text.index(e2e), "the README's unit test command runs first"
    readme = (ROOT / "README.md").read_text()
    assert "&& python -m pytest -n auto\n" in readme and e2e + "\n" in readme, "both are the README's commands"


def test_skip_annotations_refuse_a_reason_checkov_would_cut() -> None:
    from gpufleet.plan.manifests.checkov import skip_annotations

    assert skip_annotations({"CKV_K8S_8": "no endpoint to probe here", "CKV_K8S_9": "no Service reads readiness"}) == {
        "checkov.io/skip1": "CKV_K8S_8=no endpoint to probe here",
        "checkov.io/skip2": "CKV_K8S_9=no Service reads readiness",
    }
    for reason in ("", "  ", "limits=none"):
        with pytest.raises(ValueError):
            skip_annotations({"CKV_K8S_8": reason})
