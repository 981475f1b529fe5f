"""The health stage's warnings and planted-fault gate say what the fleet really has (issue 18, item 6)."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from gpufleet.plan.parts import BuildContext, StageContent
from gpufleet.plan.stages import health
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.fleet import Fleet

EXAMPLE: dict[str, Any] = yaml.safe_load((Path(__file__).parents[2] / "fleet.yaml").read_text())
EXISTING_WARNING = (
    "health.autoRepair is Enabled on an existing cluster, where gpufleet manages no EKS add-ons: the"
    " eks-node-monitoring-agent add-on must be installed (EKS repairs GPU faults only from the conditions that agent"
    " reports)"
)


def _fleet(data: dict[str, Any], env: str = "prod") -> Fleet:
    return load_fleet_text(yaml.safe_dump(data), env=env).environments[env]


def _stage(data: dict[str, Any] | Fleet, env: str = "prod") -> StageContent:
    fleet = data if isinstance(data, Fleet) else _fleet(data, env)
    return health.build(BuildContext(fleet=fleet, environment=env, through="health"))


def _drain_step(content: StageContent) -> str:
    (gate,) = [g for g in content.gates if g.name == "planted-fault"]
    return next(step for step in gate.expectation.split("; ") if step.startswith("its GPU pods"))


def test_create_mode_installs_the_monitoring_agent_so_no_auto_repair_warning() -> None:
    data = copy.deepcopy(EXAMPLE)
    data["versions"].setdefault("addons", {}).pop("nodeMonitoringAgent", None)
    assert data["cluster"]["mode"] == "Create"
    assert not [w for w in _stage(data).warnings if "autoRepair" in w]


def _training_gate() -> dict[str, Any]:
    """The example with its h100 Training group always holding a node, so the planted fault lands there and drains."""
    data = copy.deepcopy(EXAMPLE)
    next(g for g in data["nodeGroups"] if g["name"] == "h100")["scaling"]["minSize"] = 1
    return data


def test_planted_fault_says_kueue_requeues_only_where_kueue_is_installed() -> None:
    assert (
        _drain_step(_stage(_training_gate()))
        == "its GPU pods are evicted and their jobs requeued by Kueue onto other nodes (no GPU pod left on the node)"
    )
    # Without teams the admission stage installs no Kueue (stages/admission.py).
    no_teams = replace(_fleet(_training_gate()), teams=())
    assert (
        _drain_step(_stage(no_teams))
        == "its GPU pods are evicted and their controllers recreate them on other nodes (no GPU pod left on the node)"
    )


def test_existing_cluster_auto_repair_warns_that_the_agent_must_be_installed() -> None:
    data = yaml.safe_load(
        (Path(__file__).parents[1] / "golden" / "cases" / "existing-capacity-block" / "fleet.yaml").read_text()
    )
    env = next(iter(data["environments"]))
    assert EXISTING_WARNING in _stage(data, env).warnings
