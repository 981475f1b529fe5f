"""`explain` on a Karpenter pool that starts empty (issue 32 items 4 and 5): Karpenter provisions for a pending pod
that Kueue admitted a node of the pool whose template fits it, so the multi-node 8-GPU-per-pod TrainJob example runs
on h100 as a Karpenter group, through its pool, as it does on the managed node group; the verdict names the NodePool
that launches the nodes and how many (the model's provisioning), which a managed group's verdict never does."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.simulate.autoscaler import template_blocker
from gpufleet.simulate.verdict import FleetModel, Provision, explain
from gpufleet.simulate.workload import PodSpec, pod_spec, workload
from tests import fastyaml
from tests.model.conftest import EXAMPLE as FLEET
from tests.model.conftest import group

MakeModel = Callable[..., FleetModel]
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "training.yaml"


def karpenter_h100(data: dict[str, Any]) -> None:
    g = group(data, "h100")
    g["provisioner"] = "Karpenter"
    g.pop("warmPool")
    g.pop("update")
    g["scaling"] = {"maxSize": g["scaling"]["maxSize"]}
    data["environments"]["dev"]["overrides"]["nodeGroups"]["h100"].pop("warmPool")


def test_an_8_gpu_per_pod_job_on_an_empty_karpenter_pool_runs_through_that_pool(make_model: MakeModel) -> None:
    model = make_model(karpenter_h100)
    node = model.nodes["h100"]
    assert node.min_size == 0 and node.template is not None  # empty, and Karpenter deployed
    assert node.labels["karpenter.sh/nodepool"] == "h100"
    assert node.allocatable["nvidia.com/gpu"] == 8 and node.allocatable["vpc.amazonaws.com/efa"] == 32
    assert (node.topology_policy, node.topology_scope) == ("restricted", "pod")
    # What the managed group's node offers, the pool's node offers (same user data, RAID0, reservation, EFA).
    managed = make_model().nodes["h100"]
    assert node.allocatable == managed.allocatable and node.per_numa == managed.per_numa
    verdict = explain(model, workload(fastyaml.load(EXAMPLE.read_text())))
    assert verdict.runs, verdict.reasons
    assert (verdict.flavor, verdict.node_group) == ("h100", "h100")
    assert verdict.json()["pods"] == {"total": 2, "admitted": 2}
    # Through which pool: NodePool h100 launches the two 8-GPU nodes the pods need (the pool keeps none).
    assert verdict.provisioned == (
        Provision(
            node_group="h100", node_pool="h100", nodes=2, instance_type="p5.48xlarge", capacity_types=("on-demand",)
        ),
    )
    assert verdict.json()["provisionedBy"] == [
        {
            "nodeGroup": "h100",
            "nodePool": "h100",
            "nodes": 2,
            "instanceType": "p5.48xlarge",
            "capacityTypes": ["on-demand"],
        }
    ]
    # The managed node group's verdict names no pool: the Cluster Autoscaler grows the group.
    assert explain(make_model(), workload(fastyaml.load(EXAMPLE.read_text()))).provisioned == ()


def test_explain_says_the_job_runs_through_the_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command's text for the 8-GPU-per-node TrainJob on the empty Karpenter pool: it runs, through NodePool h100."""
    data = copy.deepcopy(FLEET)
    karpenter_h100(data)
    spec = tmp_path / "fleet.yaml"
    spec.write_text(yaml.safe_dump(data))
    code = main(["explain", str(spec), "--env", "prod", str(EXAMPLE)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0] == (
        "TrainJob vision/finetune: runs, through ClusterQueue vision, flavor h100, on node group h100; provisioned"
        " by Karpenter NodePool h100: 2 new p5.48xlarge nodes (on-demand) launched for the pending pods"
    )


def test_a_karpenter_pool_never_grows_past_its_limit(make_model: MakeModel) -> None:
    def two_nodes(data: dict[str, Any]) -> None:
        karpenter_h100(data)
        group(data, "h100")["scaling"] = {"maxSize": 1}
        data["environments"]["dev"]["overrides"]["nodeGroups"]["h100"]["scaling"] = {"maxSize": 1}
        for team in data["teams"]:
            for quota in team["quotas"]:
                if quota["nodeGroup"] == "h100":
                    quota.update(gpus=8)
                    quota.pop("borrowingLimit", None)
                    quota.pop("lendingLimit", None)

    verdict = explain(make_model(two_nodes), workload(fastyaml.load(EXAMPLE.read_text())))
    assert [r.json() for r in verdict.reasons] == [
        {
            "stage": "autoscaler",
            "message": (
                "NodePool h100 may launch 1 node(s) (its limit nvidia.com/gpu: 8, 8 per p5.48xlarge); 2 pod(s) of this"
                " shape need 2"
            ),
            "fix": "raise nodeGroups[h100].scaling.maxSize to 2 (the NodePool's GPU limit follows it), or ask for fewer pods",
        }
    ]


def _pod(selector: dict[str, str]) -> PodSpec:
    return pod_spec(
        {
            "spec": {
                "nodeSelector": {"gpufleet.io/node-group": "h100", **selector},
                "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
            }
        },
        "pod",
    )


GPU_TOLERATION = [
    {"key": "nvidia.com/gpu", "operator": "Exists"},
    {"key": "vpc.amazonaws.com/efa", "operator": "Exists"},
]


def test_a_pod_may_select_any_capacity_and_instance_type_the_pool_launches(make_model: MakeModel) -> None:
    """A node of a pool falling back from Spot to On-Demand is labelled spot or on-demand, as Karpenter launches it:
    a pod selecting either fits the pool's template, one selecting reserved does not; the managed node group's
    template carries no Karpenter label at all."""

    def fallback(data: dict[str, Any]) -> None:
        karpenter_h100(data)
        group(data, "h100")["capacity"] = {"fallback": ["Spot", "OnDemand"]}

    node = make_model(fallback).nodes["h100"]
    for selector in (
        {"karpenter.sh/capacity-type": "spot"},
        {"karpenter.sh/capacity-type": "on-demand"},
        {"karpenter.sh/nodepool": "h100", "node.kubernetes.io/instance-type": "p5.48xlarge"},
    ):
        assert template_blocker(node, _pod(selector), GPU_TOLERATION) is None, selector
    blocked = template_blocker(node, _pod({"karpenter.sh/capacity-type": "reserved"}), GPU_TOLERATION)
    assert blocked is not None and "does not carry the labels the pod selects" in blocked[0]
    managed = make_model().nodes["h100"]
    refused = template_blocker(managed, _pod({"karpenter.sh/capacity-type": "spot"}), GPU_TOLERATION)
    assert refused is not None and "does not carry the labels the pod selects" in refused[0]
