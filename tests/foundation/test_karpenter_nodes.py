"""The shape of a Karpenter group's nodes: an ordered capacity fallback (Karpenter tries reserved, then Spot, then
On-Demand within one NodePool), reservations selected by tags, and what the model makes of them. Every NodePool and
EC2NodeClass validates against the pinned Karpenter 1.14.1 CRDs."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pulumi_aws
import pytest
import yaml

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.simulate.nodes import node_model
from tests.foundation.test_karpenter import _deployed, _object, mixed, mixed_spec

__all__ = ["mixed"]  # the fixture, shared
from tests.upstream import require_shared, validate_object

TAGS = {"ai-on-eks": "true"}
SNAPSHOT = "snap-0123456789abcdef0"
# notebooks (g5.xlarge, one A10G) may also get the larger one-A10G sizes
FLEXIBLE = ["g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge"]


def nodes_spec() -> dict[str, Any]:
    """The mixed fleet, with l40s falling back from reservations selected by tag to Spot and On-Demand (ai-on-eks's
    GPU pools), and a100-mig from Spot to On-Demand."""
    data = mixed_spec()
    groups = {g["name"]: g for g in data["nodeGroups"]}
    groups["l40s"]["capacity"] = {
        "fallback": ["Reserved", "Spot", "OnDemand"],
        "reservation": {"tags": TAGS, "instanceCount": 2},
    }
    groups["a100-mig"]["capacity"] = {"fallback": ["Spot", "OnDemand"]}
    groups["notebooks"]["instanceTypes"] = FLEXIBLE
    # Bottlerocket serving with its images cached on the data-volume snapshot
    data["nodeGroups"].append(
        {
            "name": "br-cache",
            "instanceType": "g6e.xlarge",
            "workloadClass": "Inference",
            "provisioner": "Karpenter",
            "ami": {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"},
            "scaling": {"maxSize": 2},
            "images": ["serving"],
            "dataVolumeSnapshotId": SNAPSHOT,
            "snapshotInitialization": {"mode": "ProvisionedRate", "volumeInitializationRate": 300},
        }
    )
    return data


def plan_of(data: dict[str, Any], tmp: Path) -> RolloutPlan:
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return build_plan(load_fleet(str(path), "prod").environments["prod"], "prod")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> RolloutPlan:
    return plan_of(nodes_spec(), tmp_path_factory.mktemp("karpenter-nodes"))


def _requirements(plan: RolloutPlan, name: str) -> dict[str, list[str]]:
    spec = _object(plan, "NodePool", name)["spec"]["template"]["spec"]
    return {r["key"]: r["values"] for r in spec["requirements"]}


def test_fallback_is_the_pools_capacity_types_in_karpenters_order(nodes: RolloutPlan) -> None:
    assert _requirements(nodes, "l40s")["karpenter.sh/capacity-type"] == ["reserved", "spot", "on-demand"]
    assert _requirements(nodes, "a100-mig")["karpenter.sh/capacity-type"] == ["spot", "on-demand"]
    # a reservation without fallback stays reserved only
    assert _requirements(nodes, "br")["karpenter.sh/capacity-type"] == ["reserved"]


def test_reservations_selected_by_tags(nodes: RolloutPlan) -> None:
    assert _object(nodes, "EC2NodeClass", "l40s")["spec"]["capacityReservationSelectorTerms"] == [{"tags": TAGS}]
    assert "capacityReservationSelectorTerms" not in _object(nodes, "EC2NodeClass", "a100-mig")["spec"]


@pytest.mark.parametrize("kind", ["NodePool", "EC2NodeClass"])
@pytest.mark.parametrize("name", ["l40s", "a100-mig", "notebooks", "br-cache"])
def test_fallback_pools_validate_against_the_pinned_crds(nodes: RolloutPlan, kind: str, name: str) -> None:
    require_shared()
    assert validate_object(_deployed(_object(nodes, kind, name))) == []


def test_the_model_lets_a_fallback_pool_grow_past_its_reservation(nodes: RolloutPlan) -> None:
    """Once the 2 reserved instances are taken, l40s goes on with Spot and On-Demand: the reservation caps neither
    maxSize (rule capacity) nor the model's scale-up; a pool reserved only stays capped by it."""
    fleet = nodes.fleet
    l40s = node_model(nodes, fleet.node_group("l40s"))
    assert l40s.reserved is None and l40s.max_size == 12
    assert l40s.labels["karpenter.sh/capacity-type"] == "reserved"  # the first Karpenter tries
    assert node_model(nodes, fleet.node_group("a100-mig")).labels["karpenter.sh/capacity-type"] == "spot"
    assert node_model(nodes, fleet.node_group("br")).reserved == 2


def test_instance_types_of_one_gpu_are_the_pools_requirement(nodes: RolloutPlan) -> None:
    assert _requirements(nodes, "notebooks")["node.kubernetes.io/instance-type"] == FLEXIBLE
    # one A10G on every type, time-sliced 4 ways: the GPU limit is still maxSize nodes, in the replicas the
    # pool's NodeOverlay has Karpenter count (maxSize 20 x 1 GPU x 4)
    assert _object(nodes, "NodePool", "notebooks")["spec"]["limits"] == {"nvidia.com/gpu": "80"}


def _cluster_queue(plan: RolloutPlan, team: str) -> dict[str, Any]:
    return _object(plan, "ClusterQueue", team)


def test_quotas_and_the_model_use_the_reference_shape(nodes: RolloutPlan, mixed: RolloutPlan) -> None:
    """The Kueue quota on notebooks and the modelled node are those of instanceType g5.xlarge, the smallest type the
    pool may launch: the flexible pool promises no more CPU or memory per GPU than every one of its nodes has."""
    for team in ("vision", "language", "speech"):
        flexible = [f for f in _cluster_queue(nodes, team)["spec"]["resourceGroups"][0]["flavors"]]
        single = [f for f in _cluster_queue(mixed, team)["spec"]["resourceGroups"][0]["flavors"]]
        assert [f for f in flexible if f["name"] == "notebooks"] == [f for f in single if f["name"] == "notebooks"]
    group = nodes.fleet.node_group("notebooks")
    assert node_model(nodes, group).allocatable == node_model(mixed, mixed.fleet.node_group("notebooks")).allocatable


def test_bottlerocket_nodes_join_with_the_images_of_their_data_volume_snapshot(nodes: RolloutPlan) -> None:
    """Bottlerocket runs no user-data script, so no boot-time pull: the data volume /dev/xvdb is created from the
    snapshot that holds the images, the prepuller DaemonSet keeps them current, and no SSM image list is made."""
    devices = _object(nodes, "EC2NodeClass", "br-cache")["spec"]["blockDeviceMappings"]
    assert devices[1] == {
        "deviceName": "/dev/xvdb",
        "ebs": {
            "volumeSize": "300Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
            "snapshotID": SNAPSHOT,
            # snapshotInitialization mode ProvisionedRate: the pinned CRD's ebs.volumeInitializationRate
            "volumeInitializationRate": 300,
        },
    }
    assert "snapshotID" not in devices[0]["ebs"]
    ids = {r.id for s in nodes.stages for r in s.content.resources}
    assert "prepull-br-cache" in {
        r.args["object"]["metadata"]["name"]
        for s in nodes.stages
        for r in s.content.resources
        if "object" in r.args and r.args["object"]["kind"] == "DaemonSet"
    }
    assert "br-cache-image-list" not in ids
    userdata = _object(nodes, "EC2NodeClass", "br-cache")["spec"]["userData"]
    assert "prepull" not in userdata and userdata.lstrip().startswith("[settings.")


def test_a_managed_bottlerocket_group_gets_the_snapshot_in_its_launch_template(tmp_path: Path) -> None:
    """The same cache on a managed node group: the launch template's data volume names the snapshot, with the
    pinned pulumi-aws input name (LaunchTemplateBlockDeviceMappingEbsArgs.snapshot_id)."""
    data = mixed_spec()
    group = next(g for g in data["nodeGroups"] if g["name"] == "br")
    group.update(
        provisioner="ManagedNodeGroup",
        localStorage="None",
        dataVolumeSnapshotId=SNAPSHOT,
        snapshotInitialization={"mode": "ProvisionedRate", "volumeInitializationRate": 250},
    )
    group["capacity"] = {"type": "OnDemand"}
    plan = plan_of(data, tmp_path)
    template = next(r for s in plan.stages for r in s.content.resources if r.id == "br-launch-template")
    (device,) = template.args["blockDeviceMappings"]
    assert device["deviceName"] == "/dev/xvdb" and device["ebs"]["snapshotId"] == SNAPSHOT
    assert device["ebs"]["volumeInitializationRate"] == 250
    notes = "\n".join(line for s in plan.stages for line in s.content.notes)
    assert (
        "- br: the Provisioned Rate for Volume Initialization bills each node launch by the snapshot data its data"
        " volume initializes (at most diskSizeGiB, 300 GiB); gpufleet has no sourced price for it"
        " (aws.amazon.com/ebs/pricing), so it is not counted." in notes
    )
    params = inspect.signature(pulumi_aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs.__init__).parameters
    assert {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower() for k in device["ebs"]} <= set(params)


def test_plan_md_says_when_bottlerocket_nodes_get_their_images(nodes: RolloutPlan) -> None:
    notes = "\n".join(line for s in nodes.stages for line in s.content.notes)
    assert (
        "Bottlerocket nodes (br-cache) run no user-data script: they join with the images of their data-volume"
        " snapshot (dataVolumeSnapshotId), and the prepuller DaemonSet pulls what it lacks once they have joined."
        in notes
    )


def test_fast_snapshot_restore_is_enabled_in_each_zone_before_the_nodes_launch(tmp_path: Path) -> None:
    """snapshotInitialization mode FastSnapshotRestore: one aws.ebs.FastSnapshotRestore per snapshot and zone
    (pulumi-aws's resource, its inputs availabilityZone and snapshotId), shared by two groups restoring the same
    snapshot, and the launch template waits for them; the volume carries no rate (a rate would override fast
    snapshot restore); the cost estimate counts each snapshot-zone pair at $0.75 per DSU-hour, 730 hours."""
    data = mixed_spec()
    br = next(g for g in data["nodeGroups"] if g["name"] == "br")
    fsr = {"mode": "FastSnapshotRestore", "availabilityZones": ["us-east-1b", "us-east-1a"]}
    br.update(
        provisioner="ManagedNodeGroup", localStorage="None", dataVolumeSnapshotId=SNAPSHOT, snapshotInitialization=fsr
    )
    br["capacity"] = {"type": "OnDemand"}
    twin = {**br, "name": "br-twin", "snapshotInitialization": {**fsr, "availabilityZones": ["us-east-1a"]}}
    data["nodeGroups"].append(twin)
    plan = plan_of(data, tmp_path)
    resources = {r.id: r for s in plan.stages for r in s.content.resources}
    restores = sorted(r for r in resources if r.endswith("-fast-snapshot-restore"))
    assert restores == [f"{SNAPSHOT}-us-east-1a-fast-snapshot-restore", f"{SNAPSHOT}-us-east-1b-fast-snapshot-restore"]
    first = resources[restores[0]]
    assert first.type == "aws:ebs/fastSnapshotRestore:FastSnapshotRestore"
    assert first.args == {"availabilityZone": "us-east-1a", "snapshotId": SNAPSHOT}
    params = inspect.signature(pulumi_aws.ebs.FastSnapshotRestoreArgs.__init__).parameters
    assert {"availability_zone", "snapshot_id"} <= set(params)
    assert set(restores) <= set(resources["br-launch-template"].depends_on)
    assert resources["br-twin-launch-template"].depends_on == (restores[0],)
    (device,) = resources["br-launch-template"].args["blockDeviceMappings"]
    assert "volumeInitializationRate" not in device["ebs"]
    notes = "\n".join(line for s in plan.stages for line in s.content.notes)
    assert (
        "- EBS fast snapshot restore: 2 snapshot-zone pair(s) x $0.75/DSU-hour x 730 hours = $1,095, at every size."
        in notes
    )
