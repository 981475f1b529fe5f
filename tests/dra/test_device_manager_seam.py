"""devices: DevicePlugin | DRA through the DeviceManager seam (gpufleet.spec.devices for the facts the rules and the
plan share, gpufleet.plan.builders.device_managers for the plan's side): a node label says which device manager runs
on a node, the GPU Operator's device plugin stays off DRA nodes, and Bottlerocket's own device plugin is turned off
there."""

from __future__ import annotations

import base64

from gpufleet.plan.builders import device_managers
from gpufleet.plan.parts import RolloutPlan, bottlerocket_settings
from gpufleet.plan.rollout import build_plan
from gpufleet.spec import devices
from tests.dra.fleets import BOTTLEROCKET_163, dra_fleet


def _node_group(plan: RolloutPlan, name: str) -> dict[str, object]:
    return next(r.args for s in plan.stages for r in s.content.resources if r.id == f"{name}-node-group")


def _user_data(plan: RolloutPlan, name: str) -> str:
    template = next(r.args for s in plan.stages for r in s.content.resources if r.id == f"{name}-launch-template")
    return base64.b64decode(str(template["userData"])).decode()


def test_every_device_manager_of_the_model_has_its_plan_side() -> None:
    assert set(device_managers.MANAGERS) == set(devices.DEVICE_MANAGING)
    assert [m.managing for m in device_managers.MANAGERS.values()] == list(devices.DEVICE_MANAGING.values())


def test_the_node_label_names_the_device_manager_and_keeps_the_operators_device_plugin_off_dra_nodes() -> None:
    plan = build_plan(dra_fleet(), "dev")
    dra = _node_group(plan, "h100")["labels"]
    plugin = _node_group(plan, "l4")["labels"]
    assert isinstance(dra, dict) and isinstance(plugin, dict)
    assert dra[devices.LABEL_DEVICE_MANAGER] == "DRA"
    assert dra["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert plugin[devices.LABEL_DEVICE_MANAGER] == "DevicePlugin"
    assert "nvidia.com/gpu.deploy.device-plugin" not in plugin


def test_bottlerocket_turns_its_own_device_plugin_off_on_dra_nodes_only() -> None:
    plan = build_plan(dra_fleet(ami=BOTTLEROCKET_163), "dev")
    assert "enabled = false" in _user_data(plan, "h100")
    fleet = plan.fleet
    assert bottlerocket_settings(fleet.node_group("h100"), [device_managers.at_foundation()]) == {"enabled": False}
    assert bottlerocket_settings(fleet.node_group("l4"), [device_managers.at_foundation()]) is None
