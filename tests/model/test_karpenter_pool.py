"""`explain` on a Karpenter pool that starts empty (issue 32 items 4 and 5): Karpenter provisions for a pending pod
that Kueue admitted a node of the pool whose template fits it, so the multi-node 8-GPU-per-pod TrainJob example runs
on h100 as a Karpenter group, through its pool, as it does on the managed node group; the verdict names the NodePool
that launches the nodes and how many (the model's provisioning), which a managed group's verdict never does."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.simulate.autoscaler import template_blocker
from gpufleet.simulate.canonical import rendered
from gpufleet.simulate.self_check import canonical_rows
from gpufleet.simulate.verdict import FleetModel, Provision, explain, fleet_model
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


# --- What Karpenter sees (issue 41 items 1 and 3) -----------------------------------------------------------------
MIXED = Path(__file__).resolve().parents[1] / "golden" / "cases" / "karpenter-mixed" / "fleet.yaml"


@pytest.fixture(scope="module")
def mixed_plan() -> RolloutPlan:
    return build_plan(load_fleet(str(MIXED), "prod").environments["prod"], "prod")


def _without(plan: RolloutPlan, drop: Callable[[Any], Any]) -> RolloutPlan:
    """The plan with each resource passed through `drop` (None removes it)."""
    stages = []
    for stage in plan.stages:
        kept = tuple(r for r in (drop(res) for res in stage.content.resources) if r is not None)
        stages.append(replace(stage, content=replace(stage.content, resources=kept)))
    return replace(plan, stages=tuple(stages))


def _no_overlays(res: Any) -> Any:
    obj = res.args.get("object")
    return None if isinstance(obj, dict) and obj.get("kind") == "NodeOverlay" else res


def _old_interfaces(res: Any) -> Any:
    """The layout before issue 41: no efa-only interface on card 0."""
    obj = res.args.get("object")
    if not (isinstance(obj, dict) and obj.get("kind") == "EC2NodeClass" and "networkInterfaces" in obj["spec"]):
        return res
    spec = {**obj["spec"]}
    spec["networkInterfaces"] = [
        n for n in spec["networkInterfaces"] if (n["networkCardIndex"], n["deviceIndex"]) != (0, 1)
    ]
    return replace(res, args={**res.args, "object": {**obj, "spec": spec}})


def _gate(model: FleetModel, name: str) -> Any:
    return next(w for w in rendered(model) if w.name == name)


def test_karpenter_launches_the_nodes_of_the_pods_gpufleet_renders_for_its_pools(mixed_plan: RolloutPlan) -> None:
    """The golden case karpenter-mixed: every workload gpufleet renders for a Karpenter pool (the NCCL gate on the EFA
    Capacity Block pool h200, the prepullers) and every pool's canonical pod runs, the pool launching its nodes: what
    Karpenter sees of each instance type (EC2's capacity, the EC2NodeClass's efa-only interfaces, the NodeOverlay)
    carries what they ask for."""
    model = fleet_model(mixed_plan)
    pools = {g.name for g in mixed_plan.fleet.node_groups if g.provisioner == "Karpenter"}
    targeted = [
        w for w in rendered(model) if {ps.pod.node_selector.get("gpufleet.io/node-group") for ps in w.pod_sets} & pools
    ]
    assert {w.name for w in targeted} >= {"nccl-gate-h200", "prepull-l40s", "prepull-a100-mig", "prepull-notebooks"}
    for wl in targeted:
        verdict = explain(model, wl)
        assert verdict.runs, (wl.name, verdict.reasons)
    gate = explain(model, _gate(model, "nccl-gate-h200"))
    assert [(p.node_pool, p.nodes) for p in gate.provisioned] == [("h200", 2)]
    for row in canonical_rows(model):
        if row.group.name in pools:
            assert row.verdict.runs, (row.group.name, row.verdict.reasons)
    h200 = model.nodes["h200"]
    assert h200.template is not None
    seen = h200.template["resources"]
    # 32 EFA devices (one efa-only per card, card 0's too) and the EFA driver's hugepages through the NodeOverlay.
    assert (seen["vpc.amazonaws.com/efa"], seen["hugepages-2Mi"]) == (32, 5128 * 2)
    assert h200.allocatable["vpc.amazonaws.com/efa"] == 32
    # MIG and time-sliced pools: Karpenter counts the slices the node advertises, through the overlay.
    assert model.nodes["a100-mig"].template["resources"]["nvidia.com/gpu"] == 56  # type: ignore[index]
    assert model.nodes["notebooks"].template["resources"]["nvidia.com/gpu"] == 4  # type: ignore[index]


def test_without_card_0s_efa_device_or_the_overlay_the_gate_gets_no_node(mixed_plan: RolloutPlan) -> None:
    """Before issue 41: the primary `interface` on card 0 and efa-only on cards 1..31 only, and no NodeOverlay. The
    node has 31 EFA devices (the primary is launched as ENA) and Karpenter counts 31 (types.go efas()); without the
    overlay it sees no hugepages at all and makes no NodeClaim for the NCCL gate, which asks for 32 EFA devices and
    hugepages-2Mi: the gate would time out after 1800 s and stage 5 fail. The model says both."""
    old = fleet_model(_without(mixed_plan, _old_interfaces))
    assert old.nodes["h200"].allocatable["vpc.amazonaws.com/efa"] == 31
    reason = explain(old, _gate(old, "nccl-gate-h200")).reasons[0]
    assert reason.message == (
        "Insufficient vpc.amazonaws.com/efa on node group h200: vpc.amazonaws.com/efa (asks 32, a node offers 31)"
    )
    bare = fleet_model(_without(mixed_plan, _no_overlays))
    verdict = explain(bare, _gate(bare, "nccl-gate-h200"))
    assert not verdict.runs
    assert verdict.reasons[0].json() == {
        "stage": "autoscaler",
        "message": (
            "Karpenter makes no NodeClaim of NodePool h200 for the pod: a p5e.48xlarge offers hugepages-2Mi 0 (the pod"
            " asks for 5120) as Karpenter sees it (EC2's instance type, the EC2NodeClass's efa-only interfaces and the"
            " pool's NodeOverlay; a resource it does not list counts as 0)"
        ),
        "fix": (
            "ask for at most what Karpenter sees, or include the stage whose device plugin advertises it (gpufleet"
            " renders the NodeOverlay that tells Karpenter)"
        ),
    }

    # The feature gate off: Karpenter ignores the overlays, and so does the model.
    def gate_off(res: Any) -> Any:
        if res.id != "helm-karpenter":
            return res
        settings = {**res.args["values"]["settings"], "featureGates": {"nodeRepair": True}}
        return replace(res, args={**res.args, "values": {**res.args["values"], "settings": settings}})

    off = fleet_model(_without(mixed_plan, gate_off))
    assert "hugepages-2Mi 0" in explain(off, _gate(off, "nccl-gate-h200")).reasons[0].message


def _slices(n: int, pods: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "slices", "namespace": "speech", "labels": {"kueue.x-k8s.io/queue-name": "speech"}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "spec": {
                    "nodeSelector": {"gpufleet.io/node-group": "a100-mig"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                    "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": n}}}],
                }
            },
        },
    }


def test_a_mig_pool_is_sized_by_the_slices_it_advertises(mixed_plan: RolloutPlan) -> None:
    """Item 3: a100-mig (p4d.24xlarge, 8 A100 partitioned 7 x 1g.5gb, MIG strategy single) advertises 56
    nvidia.com/gpu; EC2 says 8. With the NodeOverlay Karpenter sees 56: a pod of 16 slices gets a node, and 28
    one-slice pods one node. Without it, no node for the 16-slice pod, and the 28 pods get 4 nodes (7 per node
    where one would do)."""
    model = fleet_model(mixed_plan)
    big = explain(model, workload(_slices(16)))
    assert big.runs, big.reasons
    burst = explain(model, workload(_slices(1, pods=28)))
    assert burst.runs and [p.nodes for p in burst.provisioned] == [1]
    bare = fleet_model(_without(mixed_plan, _no_overlays))
    refused = explain(bare, workload(_slices(16)))
    assert not refused.runs and "nvidia.com/gpu 8 (the pod asks for 16)" in refused.reasons[0].message
    over = explain(bare, workload(_slices(1, pods=28)))
    assert over.runs and [p.nodes for p in over.provisioned] == [4]
