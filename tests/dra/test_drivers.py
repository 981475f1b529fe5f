"""The DRA drivers (issue 43 item 2): the NVIDIA DRA driver for GPUs in stage 1 and, on EFA groups with devices DRA,
the EFA DRA driver in the network stage, each only on DRA nodes, with value keys of the pinned charts; the EFA device
plugin stays off DRA nodes."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.plan.parts import Resource, RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import fleet_from
from gpufleet.spec.deployed import deployed_components
from tests.dra.fleets import dra_data
from tests.upstream import chart_values, unknown_value_keys

DRA_NODES = {"gpufleet.io/device-manager": "DRA"}


def _release(plan: RolloutPlan, rid: str) -> tuple[str, Resource]:
    return next((s.name, r) for s in plan.stages for r in s.content.resources if r.id == rid)


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    data = dra_data()
    data["environments"]["dev"]["rollout"]["through"] = "network"
    # An EFA group with the device plugin beside the DRA one.
    data["nodeGroups"].append(
        {
            "name": "p5-plugin",
            "instanceType": "p5en.48xlarge",
            "workloadClass": "Training",
            "fabric": "EFA",
            "zone": "use1-az4",
            "subnetIds": ["subnet-0aa"],
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.34.9-20260714"},
            "scaling": {"maxSize": 2},
        }
    )
    return build_plan(fleet_from(data), "dev")


def test_the_nvidia_dra_driver_runs_in_stage_one_on_dra_nodes_with_gpu_allocation_on(plan: RolloutPlan) -> None:
    stage, release = _release(plan, "helm-dra-driver-nvidia-gpu")
    values: dict[str, Any] = release.args["values"]
    assert stage == "foundation"
    assert release.args["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert release.args["version"] == "0.4.1"
    assert release.args["namespace"] == "dra-driver-nvidia-gpu"
    assert "helm-gpu-operator" in release.depends_on
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"] == {"gpus": {"enabled": True}}  # compute domains: the chart's default
    assert values["kubeletPlugin"]["nodeSelector"] == DRA_NODES
    assert values["nvidiaDriverRoot"] == "/"
    # The chart's own GPU toleration first, then each taint of the DRA groups (the EFA taint of h100).
    tolerations = values["kubeletPlugin"]["tolerations"]
    assert tolerations[0] == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert "vpc.amazonaws.com/efa" in {t["key"] for t in tolerations}


def test_the_efa_dra_driver_runs_on_dra_efa_nodes_and_the_efa_device_plugin_on_the_others(plan: RolloutPlan) -> None:
    stage, dranet = _release(plan, "helm-aws-dranet")
    _, plugin = _release(plan, "helm-aws-efa-k8s-device-plugin")
    assert stage == "network"
    assert dranet.args["values"]["nodeSelector"] == {**DRA_NODES, "gpufleet.io/fabric": "EFA"}
    assert dranet.args["values"]["supportedInstanceLabels"]["values"] == ["p5.48xlarge"]
    assert plugin.args["values"]["nodeSelector"] == {
        "gpufleet.io/fabric": "EFA",
        "gpufleet.io/device-manager": "DevicePlugin",
    }
    assert plugin.args["values"]["supportedInstanceLabels"]["values"] == ["p5en.48xlarge"]


def test_the_dra_group_gets_its_nccl_gate_and_a_warning_at_minsize_0(plan: RolloutPlan) -> None:
    # its pods claim the GPUs with their EFA interfaces (tests/dra/test_claims.py); the group scales from 0, which
    # the Cluster Autoscaler does not do for claims
    network = next(s for s in plan.stages if s.name == "network")
    assert {g.name for g in network.content.gates} >= {"nccl-bandwidth-h100", "nccl-bandwidth-p5-plugin"}
    assert any(
        w.startswith('node group "h100" has minSize 0: the Cluster Autoscaler never scales a DRA group up')
        for w in network.content.warnings
    )


def _deployed(data: dict[str, Any]) -> set[str]:
    data["environments"]["dev"]["rollout"]["through"] = "network"
    return deployed_components(fleet_from(data))


def test_only_a_fleet_with_dra_groups_installs_the_drivers() -> None:
    dra = _deployed(dra_data())
    assert {"nvidiaDraDriver", "efaDraDriver"} <= dra and "efaDevicePlugin" not in dra
    no_efa = _deployed(dra_data(fabric="None"))
    assert "nvidiaDraDriver" in no_efa and "efaDraDriver" not in no_efa
    data = dra_data()
    data["nodeGroups"][1]["devices"] = "DevicePlugin"
    plugin_only = _deployed(data)
    assert not {"nvidiaDraDriver", "efaDraDriver"} & plugin_only and "efaDevicePlugin" in plugin_only


@pytest.mark.parametrize(
    ("rid", "chart", "version"),
    [("helm-dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu", "0.4.1"), ("helm-aws-dranet", "aws-dranet", "1.0.0")],
)
def test_every_value_key_is_one_of_the_pinned_chart(plan: RolloutPlan, rid: str, chart: str, version: str) -> None:
    _, release = _release(plan, rid)
    assert list(unknown_value_keys(release.args["values"], chart_values(chart, version))) == []
