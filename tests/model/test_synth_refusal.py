"""Synth refuses a fleet that contradicts itself (issue 11): an error of the spec, positioned at the field to change,
exit 1, nothing written; plan.md carries the "will it run" table."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from tests.model.conftest import EXAMPLE, group
from tests.synthesized import tree_of


def _spec(tmp_path: Path, **h100_topology: str) -> Path:
    data: dict[str, Any] = copy.deepcopy(EXAMPLE)
    group(data, "h100")["topology"] = dict(h100_topology)
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_single_numa_node_with_full_node_pods_on_p5_is_refused_at_the_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, policy="single-numa-node", scope="pod", podShape="FullNode")
    out = tmp_path / "out"
    assert main(["synth", str(spec), "--env", "prod", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    line = _line_of(spec, "policy: single-numa-node")
    assert f"{spec}:{line}:" in err
    assert (
        "nodeGroups[0].topology.policy: gpufleet's own Job gpufleet-network/nccl-gate-h100 would not run (kubelet):"
        " TopologyAffinityError on node group h100" in err
    )
    assert (
        "hint: set topology.policy: restricted on node group h100 (admits the narrowest NUMA set), or ask for at most 4"
        " GPUs per pod" in err
    )
    assert "node group h100: a full node pod (its workload class's shape) would not run (kubelet)" in err
    assert not out.exists() or not any(out.iterdir())


def test_tas_on_a_group_that_scales_from_zero_is_refused_at_the_placement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, policy="restricted", placement="Preferred")
    assert main(["synth", str(spec), "--env", "prod", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{spec}:{_line_of(spec, 'placement: Preferred')}:" in err
    assert (
        "nodeGroups[0].topology.placement: node group h100: a full node pod (its workload class's shape) would not run"
        ' (admission): couldn\'t assign flavors to pod set main: Flavor "h100" supports only TopologyAwareScheduling'
        in err
    )


def test_plan_md_has_the_will_it_run_table() -> None:
    plan = tree_of(Path(__file__).parents[2] / "fleet.yaml", "prod").files["plan.md"]
    assert (
        "| node group | workload | runs | ClusterQueue | flavor | Karpenter NodePool (nodes it launches) | stopped by |"
        in plan
    )
    assert "| h100 | full node | yes | vision | h100 | - | - |" in plan
    assert "| notebooks | one shared unit | yes | vision | notebooks | - | - |" in plan


def test_plan_md_names_the_pool_that_launches_a_karpenter_groups_nodes() -> None:
    plan = tree_of(Path(__file__).parents[2] / "tests/golden/cases/karpenter-mixed/fleet.yaml", "prod").files["plan.md"]
    assert "| h100 | full node | yes | vision | h100 | - | - |" in plan  # the managed group: no pool
    assert "| l40s | one GPU | yes | language | l40s | `l40s`: 1 new (on-demand) | - |" in plan
    assert "| a100-mig | one shared unit | yes | speech | a100-mig | `a100-mig`: 1 new (spot) | - |" in plan
    assert "| h200 | full node | yes | - | - | `h200`: 1 new (reserved) | - |" in plan


def test_a_fixed_efa_group_without_the_autoscaler_synths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cluster.autoscaler None and a fixed 2-node EFA group (EKS Blueprints' nvidia-gpu-efa pattern): the gate and
    the canonical pod fit nodes whose EFA devices come from the catalog, not from autoscaler tags (issue 29 item 9;
    it failed with "a node offers 0 vpc.amazonaws.com/efa")."""
    data: dict[str, Any] = copy.deepcopy(EXAMPLE)
    data["cluster"]["autoscaler"] = "None"
    for other in data["nodeGroups"]:  # nothing scales a group up: every one keeps a node
        other["scaling"]["minSize"] = max(1, other["scaling"]["minSize"])
    group(data, "h100")["scaling"] = {"minSize": 2, "maxSize": 2}
    for team in data["teams"]:
        for quota in team["quotas"]:
            if quota["nodeGroup"] == "h100":
                quota.update(gpus=8, borrowingLimit=8, lendingLimit=8)
    spec = tmp_path / "fleet.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    assert main(["synth", str(spec), "--env", "prod", "--out", str(out)]) == 0, capsys.readouterr().err
    assert (out / "plan.md").exists()
