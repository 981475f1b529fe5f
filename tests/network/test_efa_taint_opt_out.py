"""nodeGroups[].efaTaint Disabled (issue 18, item 5): the EFA group keeps only the GPU taint, and everything that
derives from the group's taints follows: the node group, the Kueue flavor, the autoscaler's scale-from-zero
template in the model, and the tolerations gpufleet's own pods carry."""

from __future__ import annotations

from typing import Any

from gpufleet.plan.parts import Resource
from gpufleet.simulate.canonical import rendered
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload
from tests.model.conftest import group, model_of

GPU_ONLY = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
EFA = {"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NoSchedule"}


def _disabled(d: dict[str, Any]) -> None:
    group(d, "h100")["efaTaint"] = "Disabled"


def _resource(model: FleetModel, rid: str) -> Resource:
    return next(r for s in model.plan.included() for r in s.content.resources if r.id == rid)


def test_default_keeps_the_efa_taint_everywhere() -> None:
    model = model_of()
    assert list(model.nodes["h100"].taints) == [*GPU_ONLY, EFA]
    assert _resource(model, "resourceflavor-cluster-h100").args["object"]["spec"]["nodeTaints"] == [*GPU_ONLY, EFA]


def test_disabled_leaves_only_the_gpu_taint_on_group_flavor_and_template() -> None:
    model = model_of(_disabled)
    node = model.nodes["h100"]
    assert list(node.taints) == GPU_ONLY
    assert node.template is not None and list(node.template["taints"]) == GPU_ONLY
    spec = _resource(model, "resourceflavor-cluster-h100").args["object"]["spec"]
    assert spec["nodeTaints"] == GPU_ONLY
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    # The group still is an EFA group: its nodes advertise the interfaces and gpufleet's bandwidth gate runs there.
    assert node.allocatable["vpc.amazonaws.com/efa"] == 32
    gate = next(w for w in rendered(model) if w.name == "nccl-gate-h100")
    assert explain(model, gate).runs


def test_disabled_lets_a_pod_without_the_efa_toleration_onto_the_group() -> None:
    """What the opt-out is for: a pod outside Kueue (which would add the flavor's tolerations) that tolerates only
    the GPU taint, as EKS's ExtendedResourceToleration adds it, schedules on the EFA group; with the taint it is
    refused.
    """
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"gpufleet.io/node-group": "h100"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
                }
            }
        },
    }
    assert explain(model_of(_disabled), workload(job)).runs
    refused = explain(model_of(), workload(job))
    assert not refused.runs and "vpc.amazonaws.com/efa" in refused.reasons[0].message
