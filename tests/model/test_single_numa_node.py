"""single-numa-node, as the seed recommends (issue 29 item 17): a Training group declares the pod shape its work uses
(topology.podShape), and the NCCL gate (one pod per NUMA node, each on that NUMA node's GPUs and EFA devices) and the
canonical pod follow it. Before, synth refused single-numa-node on every 8-GPU Training group, because the gate and the
canonical pod took the whole node, which the policy rejects outright (policy_single_numa_node.go)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from tests.model.conftest import EXAMPLE, group


def _spec(tmp_path: Path, **topology: str) -> Path:
    data: dict[str, Any] = copy.deepcopy(EXAMPLE)
    group(data, "h100")["topology"] = dict(topology)
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _gate(spec: Path) -> dict[str, Any]:
    plan = build_plan(load_fleet(str(spec), "prod").environments["prod"], "prod")
    network = next(s for s in plan.stages if s.name == "network")
    return next(
        r.args["object"]
        for r in network.content.resources
        if r.args.get("object", {}).get("kind") == "Job" and r.args["object"]["metadata"]["name"] == "nccl-gate-h100"
    )


def test_single_numa_node_on_p5_synthesizes_with_one_numa_node_pods(tmp_path: Path) -> None:
    spec = _spec(tmp_path, policy="single-numa-node")
    assert main(["synth", str(spec), "--env", "prod", "--out", str(tmp_path / "out")]) == 0
    job = _gate(spec)
    pod = job["spec"]["template"]["spec"]
    # Two p5.48xlarge nodes x two NUMA nodes: four pods of 4 GPUs and 16 EFA devices each.
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 4
    limits = pod["containers"][0]["resources"]["limits"]
    assert (limits["nvidia.com/gpu"], limits["vpc.amazonaws.com/efa"]) == (4, 16)
    assert pod["topologySpreadConstraints"] == [
        {
            "labelSelector": {"matchLabels": {"gpufleet.io/gate": "nccl-gate-h100"}},
            "topologyKey": "kubernetes.io/hostname",
            "maxSkew": 1,
            "whenUnsatisfiable": "DoNotSchedule",
        }
    ]
    assert "affinity" not in pod
    script = pod["containers"][0]["command"][2]
    assert "-np 16 " in script
    assert (
        ',nccl-gate-h100-1.nccl-gate-h100:4,nccl-gate-h100-2.nccl-gate-h100:4,nccl-gate-h100-3.nccl-gate-h100:4"'
        in (script)
    )
    subprocess.run(["bash", "-n", "-c", script], check=True)
    plan_md = (tmp_path / "out" / "plan.md").read_text()
    assert "topology.podShape" in plan_md and "OneNumaNode" in plan_md


def test_full_node_pods_under_single_numa_node_are_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, policy="single-numa-node", podShape="FullNode")
    assert main(["synth", str(spec), "--env", "prod", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "gpufleet's own Job gpufleet-network/nccl-gate-h100 would not run (kubelet)" in err
    assert "node group h100: a full node pod (its workload class's shape) would not run (kubelet)" in err


def test_restricted_keeps_full_node_pods() -> None:
    job = _gate(Path(__file__).resolve().parents[2] / "fleet.yaml")
    assert job["spec"]["completions"] == 2
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
