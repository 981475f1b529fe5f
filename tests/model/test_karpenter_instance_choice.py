"""A Karpenter pool of several instance types (issue 41 item 16): Karpenter launches, for the pending pods, the
cheapest type of the pool's list that fits them, packing pods onto a NodeClaim while one of its types still takes
them all (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling nodeclaim.go CanAdd @ v1.14.1; its
instance selection test "should schedule on an instance with enough resources": three pods on one node, every
option of which holds the three). The model judged every pod against the reference (smallest) type only."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.simulate.autoscaler import karpenter_launch
from gpufleet.simulate.verdict import FleetModel, explain, fleet_model
from gpufleet.simulate.workload import pod_spec, workload

AI_ON_EKS = Path(__file__).resolve().parents[2] / "examples" / "ai-on-eks.yaml"


@cache
def _model() -> FleetModel:
    fleet = load_fleet_text(AI_ON_EKS.read_text(), env="prod").environments["prod"]
    return fleet_model(build_plan(fleet, "prod"))


def _pod(group: str, cpu: int, selector: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"cpu": str(cpu), "memory": "8Gi", "nvidia.com/gpu": 1}
    return {
        "restartPolicy": "Never",
        "nodeSelector": {"gpufleet.io/node-group": group, **(selector or {})},
        "containers": [
            {
                "name": "main",
                "image": "registry.example/x:1",
                "resources": {"requests": resources, "limits": {"nvidia.com/gpu": 1, "memory": "8Gi"}},
            }
        ],
    }


def _job(group: str, cpu: int, pods: int, selector: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {"parallelism": pods, "completions": pods, "template": {"spec": _pod(group, cpu, selector)}},
    }


def test_the_pool_orders_its_instance_types_by_price() -> None:
    options = _model().nodes["g5"].instance_options
    assert [o.instance_type for o in options] == ["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.16xlarge"]
    # each option is a node of its own type: its labels, what Karpenter sees of it, its allocatable CPU
    assert {o.labels["node.kubernetes.io/instance-type"] for o in options} == {o.instance_type for o in options}
    assert [o.template["resources"]["cpu"] for o in options if o.template] == [4000, 8000, 16000, 32000, 64000]
    assert [o.allocatable["cpu"] for o in options] == sorted(o.allocatable["cpu"] for o in options)
    # a pool of one type has none, nor has a managed node group
    assert _model().nodes["g5-8gpu"].instance_options == ()


@pytest.mark.parametrize(
    ("group", "cpu", "pods", "selector", "launched"),
    [
        # more CPU than g5.xlarge's allocatable: the cheapest size that holds it (before: Insufficient cpu)
        ("g5", 2, 1, None, ["1 new g5.2xlarge node"]),
        ("g5", 12, 1, None, ["1 new g5.4xlarge node"]),
        # a pod selecting one size of the pool gets that size (before: no node group matches)
        ("g5", 1, 1, {"node.kubernetes.io/instance-type": "g5.8xlarge"}, ["1 new g5.8xlarge node"]),
        # packing: four 20-CPU pods fit one g6e.24xlarge (96 vCPUs), two a g6e.12xlarge; Karpenter fills the
        # NodeClaim while a type takes them all (before: two g6e.12xlarge)
        ("g6e-4gpu", 20, 4, None, ["1 new g6e.24xlarge node"]),
        ("g6e-4gpu", 20, 3, None, ["1 new g6e.24xlarge node"]),
        ("g6e-4gpu", 20, 1, None, ["1 new g6e.12xlarge node"]),
    ],
)
def test_karpenter_launches_the_cheapest_type_that_fits(
    group: str, cpu: int, pods: int, selector: dict[str, str] | None, launched: list[str]
) -> None:
    verdict = explain(_model(), workload(_job(group, cpu, pods, selector)))
    assert verdict.runs, verdict.reasons
    assert verdict.node_group == group
    texts = [p.text() for p in verdict.provisioned]
    assert texts == [
        f"provisioned by Karpenter NodePool {group}: {n} (spot or on-demand) launched for the pending pods"
        for n in launched
    ]


def test_the_last_nodeclaim_takes_the_rest_on_the_cheapest_type_that_holds_it() -> None:
    """Five 20-CPU pods: a full g6e.24xlarge of four, and the fifth on a g6e.12xlarge (the rest's NodeClaim)."""
    node = _model().nodes["g6e-4gpu"]
    pod = pod_spec({"spec": _pod("g6e-4gpu", 20)}, "pod")
    assert [(o.instance_type, n) for o, n in karpenter_launch(node, pod, 5)] == [
        ("g6e.24xlarge", 1),
        ("g6e.12xlarge", 1),
    ]
    assert [(o.instance_type, n) for o, n in karpenter_launch(node, pod, 8)] == [("g6e.24xlarge", 2)]


def _bare_pod(cpu: int) -> dict[str, Any]:
    """A Pod outside the teams' namespaces (Kueue's quota does not hold it back), tolerating the GPU taint."""
    spec = {**_pod("g5", cpu), "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def test_a_pod_only_the_largest_type_fits_gets_it_and_one_none_fits_is_refused_naming_the_largest() -> None:
    verdict = explain(_model(), workload(_bare_pod(40)))
    assert verdict.runs, verdict.reasons
    assert [p.instance_type for p in verdict.provisioned] == ["g5.16xlarge"]
    verdict = explain(_model(), workload(_bare_pod(100)))
    assert [r.message for r in verdict.reasons] == [
        "Insufficient cpu on node group g5 (g5.16xlarge, the roomiest of its instance types the pod may get): cpu"
        " (asks 100, a node offers 61770m)"
    ]
