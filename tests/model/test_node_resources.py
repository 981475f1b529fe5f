"""The model computes node resources itself (gpufleet.simulate.node_resources: from the rendered launch template,
device-plugin and MIG configs, nodeadm's reservations and the catalog), so it can disagree with the renderer's
helpers; here the two are held equal on every golden fleet and environment, and a renderer bug the model now
catches is shown."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gpufleet.facts import catalog, stages
from gpufleet.plan.manifests import kueue, node_bootstrap
from gpufleet.plan.manifests.autoscaler import template_resources
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.simulate import node_resources
from gpufleet.simulate.nodes import fleet_nodes
from gpufleet.spec.devices import counted

ROOT = Path(__file__).resolve().parents[2]
SPECS = [ROOT / "fleet.yaml", *sorted((ROOT / "tests/golden/cases").glob("*/fleet.yaml"))]
CASES = [(spec, env) for spec in SPECS for env in load_fleet(str(spec)).environments]


def _quantity(value: str) -> int:
    return int(value[:-2]) if value.endswith("Mi") else int(value)


@pytest.mark.parametrize(("spec", "env"), CASES, ids=[f"{s.parent.name}-{e}" for s, e in CASES])
def test_the_models_node_resources_agree_with_the_renderers(spec: Path, env: str) -> None:
    fleet = load_fleet(str(spec)).environments[env]
    plan = build_plan(fleet, env)
    for node in fleet_nodes(plan):
        group = fleet.node_group(node.group)
        # devices DRA: the model counts the drivers' devices by DeviceClass where the renderer names the device
        # plugins' resources (gpufleet.spec.devices.counted)
        renderer: dict[str, Any] = {
            counted(group, name): _quantity(v)
            for name, v in template_resources(
                fleet,
                group,
                with_sharing=stages.included("sharing", plan.through),
                with_network=stages.included("network", plan.through),
            ).items()
        }
        cpu, memory = kueue.node_reserve(group)
        info = catalog.lookup(group.instance_type)
        assert info is not None
        assert node.allocatable["cpu"] + cpu == info.vcpus * 1000, node.group
        assert node.allocatable["memory"] + memory == info.memory_mib, node.group
        assert {r: v for r, v in node.allocatable.items() if r not in ("cpu", "memory", "pods")} == renderer, node.group
        assert (node.topology_policy, node.topology_scope, node.cpu_manager_policy) == node_bootstrap.topology(group)
        assert len(node.numa_nodes) == node_bootstrap.numa_nodes(group)


def test_the_reservations_follow_nodeadm_and_the_rendered_node_config(make_model: Any) -> None:
    """p5.48xlarge (192 vCPUs, 2 TiB): kubeReserved CPU 60 + 10 + 10 + 470 = 550m (nodeadm
    getCPUMillicoresToReserve), memory 11 x 100 pods + 255 MiB; the rendered NodeConfig's systemReserved (1 CPU,
    2Gi, topology policy restricted) and the DaemonSet budget (1 CPU, 2 GiB) come off too."""
    model = make_model()
    node = model.nodes["h100"]
    assert node_resources.kube_reserved_cpu_milli(192) == 550
    assert node.allocatable["cpu"] == 192_000 - 550 - 1000 - 1000
    assert node.allocatable["memory"] == 2_097_152 - (11 * 100 + 255) - 100 - 2048 - 2048
    # RAID0 over 8 x 3800 GB of instance store (EC2 GB): the kubelet's nodefs, less 1Gi and 10%
    total = 30400 * 10**9 // 2**20
    assert node.allocatable["ephemeral-storage"] == total - 1024 - -(-total // 10)
    # l40s: RAID0 over g6e.12xlarge's 2 x 1900 GB
    total = 3800 * 10**9 // 2**20
    assert model.nodes["l40s"].allocatable["ephemeral-storage"] == total - 1024 - -(-total // 10)
    # a100-mig has no RAID0: its root volume of diskSizeGiB
    a100 = model.nodes["a100-mig"]
    disk = model.plan.fleet.node_group("a100-mig").disk_size_gib * 1024
    assert a100.allocatable["ephemeral-storage"] == disk - 1024 - -(-disk // 10)


def test_the_model_reads_what_is_rendered_not_what_the_spec_meant(make_model: Any) -> None:
    """A renderer slip the model now sees: if the launch template carried fewer EFA interfaces than the spec's group
    should have, the node model offers what the node gets (the EFA interfaces attached), not what the renderer's
    helper computes from the catalog."""
    model = make_model()
    plan = model.plan
    resources = [r for s in plan.stages for r in s.content.resources]
    template = next(r for r in resources if r.id == "h100-launch-template")
    fewer = dict(template.args, networkInterfaces=template.args["networkInterfaces"][:4])
    stages_ = tuple(
        dataclasses.replace(
            s,
            content=dataclasses.replace(
                s.content,
                resources=tuple(
                    dataclasses.replace(r, args=fewer) if r.id == "h100-launch-template" else r
                    for r in s.content.resources
                ),
            ),
        )
        for s in plan.stages
    )
    changed = dataclasses.replace(plan, stages=stages_)
    node = next(n for n in fleet_nodes(changed) if n.group == "h100")
    assert node.allocatable["vpc.amazonaws.com/efa"] == 4
