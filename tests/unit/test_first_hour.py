"""A first hour that starts small (issue 14 item 9): a hand-written minimal spec validates, plans and synthesises;
unpinned components take the release this gpufleet is tested with and the tree records it; explicit pins stay;
mode Create without systemNodes gets the default system node group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.facts import ami_releases
from gpufleet.facts.versions import COMPONENTS, default_release
from gpufleet.rules.pipeline import validate_loaded
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.load import load_text
from tests.trees import resources

ROOT = Path(__file__).resolve().parents[2]
FIRST_HOUR = ROOT / "tests" / "specs" / "valid" / "first-hour.yaml"


def _fleet(text: str, env: str = "dev") -> Fleet:
    return validate_loaded(load_text(text, "fleet.yaml"), env).environments[env]


def test_the_minimal_spec_is_about_twenty_lines() -> None:
    body = [line for line in FIRST_HOUR.read_text().splitlines() if line and not line.startswith("#")]
    assert len(body) <= 21


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_the_minimal_spec_validates_plans_and_synthesises(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, env: str
) -> None:
    assert main(["validate", str(FIRST_HOUR)]) == 0
    assert capsys.readouterr().out == f"{FIRST_HOUR}: valid (environments: dev, prod)\n"
    assert main(["plan", "--env", env, str(FIRST_HOUR)]) == 0
    capsys.readouterr()
    out = tmp_path / env
    assert main(["synth", "--env", env, "--out", str(out), str(FIRST_HOUR)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    expected = {"gpuOperator", "clusterAutoscaler", "kubePrometheusStack", "kueue"} | (
        {"nodeProblemDetector"} if env == "prod" else set()
    )
    assert plan["versions"] == {key: {"version": default_release(key), "from": "tested"} for key in sorted(expected)}
    assert (
        f"| Kueue | {default_release('kueue')} | tested with this gpufleet (not pinned in the spec) |"
        in (out / "plan.md").read_text()
    )
    inventory = resources(out)
    system = next(r for r in inventory if r["id"] == "system-node-group")
    assert system["inputs"]["releaseVersion"] == ami_releases.newest(ami_releases.SYSTEM_NODES_AMI_TYPE, "1.33")


def test_the_default_release_is_the_newest_supported_release() -> None:
    assert default_release("kueue") == "0.19.2" == COMPONENTS["kueue"].supported[-1]


def test_an_explicit_pin_stays_and_is_recorded_as_from_the_spec() -> None:
    data = yaml.safe_load(FIRST_HOUR.read_text())
    data["versions"] = {"kueue": {"chart": "0.18.1"}}
    fleet = _fleet(yaml.safe_dump(data))
    assert fleet.versions.kueue == "0.18.1"
    assert "kueue" not in fleet.versions.defaulted
    assert fleet.versions.gpu_operator == default_release("gpuOperator") and "gpuOperator" in fleet.versions.defaulted


def test_mode_create_without_system_nodes_gets_the_default_group() -> None:
    fleet = _fleet(FIRST_HOUR.read_text())
    system = fleet.cluster.system_nodes
    assert system is not None
    assert (system.instance_type, system.release_version, system.min_size, system.max_size) == (
        "m7i.xlarge",
        "1.33.13-20260714",
        2,
        6,
    )


def test_mode_existing_gets_no_system_group() -> None:
    data = yaml.safe_load(FIRST_HOUR.read_text())
    data["cluster"]["mode"] = "Existing"
    assert _fleet(yaml.safe_dump(data)).cluster.system_nodes is None
