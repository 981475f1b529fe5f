"""Scale-from-zero template vectors from kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md
("Auto-Discovery Setup", scale from 0): an empty group offers what its node-template tags say and nothing more, and
a group never grows past maxSize."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpufleet.simulate.autoscaler import scale_up_blocker
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import Container, PodSpec, workload
from tests.model.conftest import group

MakeModel = Callable[..., FleetModel]


def _pod(requests: dict[str, int]) -> PodSpec:
    return PodSpec(containers=(Container(name="c", requests=requests, limits={}),))


def test_template_offers_the_tagged_extended_resources(make_model: MakeModel) -> None:
    node = make_model().nodes["h100"]  # minSize 0: every pod needs a scale-up
    tolerations = [{"operator": "Exists"}]
    assert scale_up_blocker(node, _pod({"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}), tolerations, 2) is None


def test_scale_from_zero_offers_the_groups_ephemeral_storage(make_model: MakeModel) -> None:
    # README: a pod requesting ephemeral storage scales an empty group only with a
    # "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage" tag. h100 (p5.48xlarge, RAID0) offers its
    # instance-store array: 30400 GB = 28991699 MiB, less kubelet's 1 GiB and 10% nodefs eviction threshold.
    node = make_model().nodes["h100"]
    assert node.template is not None
    assert node.template["resources"]["ephemeral-storage"] == node.allocatable["ephemeral-storage"] == 26091505
    tolerations = [{"operator": "Exists"}]
    one_tib = 1024 * 1024
    assert scale_up_blocker(node, _pod({"nvidia.com/gpu": 8, "ephemeral-storage": one_tib}), tolerations, 1) is None
    blocked = scale_up_blocker(node, _pod({"nvidia.com/gpu": 1, "ephemeral-storage": 30 * one_tib}), tolerations, 1)
    assert blocked is not None
    assert (
        blocked[0]
        == "the scale-from-zero template of node group h100 does not offer ephemeral-storage (beyond what its"
        " node-template resource tags give)"
    )


def test_ephemeral_storage_is_the_root_volume_without_raid0(make_model: MakeModel) -> None:
    # a100-mig has no localStorage (its p4d.24xlarge's 8000 GB of instance store unused): kubelet's nodefs is the
    # 300 GiB root volume (diskSizeGiB).
    assert make_model().nodes["a100-mig"].allocatable["ephemeral-storage"] == 300 * 1024 - 1024 - 30 * 1024


def test_fixed_groups_without_the_autoscaler_offer_what_their_device_plugins_advertise(make_model: MakeModel) -> None:
    """cluster.autoscaler None writes no node-template tags; the nodes still advertise EFA, huge pages and
    ephemeral storage (the EKS Blueprints nvidia-gpu-efa pattern: a fixed 2-node EFA group, no autoscaler)."""

    def fixed(data: dict[str, Any]) -> None:
        data["cluster"]["autoscaler"] = "None"
        group(data, "h100")["scaling"] = {"minSize": 2, "maxSize": 2}
        for team in data["teams"]:
            for quota in team["quotas"]:
                if quota["nodeGroup"] == "h100":
                    quota.update(gpus=8, borrowingLimit=8, lendingLimit=8)

    node = make_model(fixed).nodes["h100"]
    assert node.template is None
    assert {r: node.allocatable[r] for r in ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "hugepages-2Mi")} == {
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
        "hugepages-2Mi": 10256,
    }
    assert node.allocatable["ephemeral-storage"] == make_model().nodes["h100"].allocatable["ephemeral-storage"]


def test_never_past_max_size(make_model: MakeModel) -> None:
    node = make_model().nodes["h100"]  # maxSize 16 nodes of 8 GPUs
    blocked = scale_up_blocker(node, _pod({"nvidia.com/gpu": 8}), [{"operator": "Exists"}], 17)
    assert blocked == (
        "node group h100 may grow to 16 node(s); 17 pod(s) of this shape need 17",
        "raise nodeGroups[h100].scaling.maxSize to 17, or ask for fewer pods",
    )


def test_existing_nodes_need_no_scale_up(make_model: MakeModel) -> None:
    node = make_model().nodes["l40s"]  # minSize 2 nodes of 4 GPUs
    assert scale_up_blocker(node, _pod({"nvidia.com/gpu": 4, "ephemeral-storage": 1024}), [], 2) is None


def test_a_targeted_reservation_caps_the_scale_up_and_its_fix_enlarges_the_reservation(make_model: MakeModel) -> None:
    """A group targeting an ODCR by id may not outgrow it (a launch into a full targeted reservation fails, and
    maxSize may not exceed instanceCount): the gate's fix is a larger reservation, not only a larger maxSize."""

    def reserve(data: dict[str, Any]) -> None:
        h100 = group(data, "h100")
        h100["capacity"] = {"type": "OnDemand", "reservation": {"id": "cr-0a1b2c3d4e5f60718", "instanceCount": 16}}
        h100["scaling"]["minSize"] = 16

    node = make_model(reserve).nodes["h100"]
    assert node.reserved == 16
    blocked = scale_up_blocker(node, _pod({"nvidia.com/gpu": 8}), [{"operator": "Exists"}], 17)
    assert blocked == (
        (
            "node group h100 may grow to 16 node(s), within the 16 instance(s) of the capacity reservation it targets;"
            " 17 pod(s) of this shape need 17"
        ),
        (
            "enlarge the reservation, then raise nodeGroups[h100].capacity.reservation.instanceCount and"
            " scaling.maxSize to 17; or ask for fewer pods"
        ),
    )
    assert make_model().nodes["h100"].reserved is None


def test_every_pod_takes_one_of_a_nodes_pods(make_model: MakeModel) -> None:
    """NodeResourcesFit counts each pod against the node's allocatable pods (issue 47 item 5): pods that request
    nothing still fill a group at maxSize times the kubelet's maxPods."""
    node = make_model().nodes["h100"]
    tolerations = [{"operator": "Exists"}]
    fits = node.max_size * node.allocatable["pods"]
    assert scale_up_blocker(node, _pod({}), tolerations, fits) is None
    blocked = scale_up_blocker(node, _pod({}), tolerations, fits + 1)
    assert blocked is not None
    assert blocked[0] == (
        f"node group h100 may grow to {node.max_size} node(s); {fits + 1} pod(s) of this shape need {node.max_size + 1}"
    )


def test_the_system_group_holds_max_size_times_max_pods(make_model: MakeModel) -> None:
    model = make_model()
    system = model.plan.fleet.cluster.system_nodes
    assert system is not None and model.system_pods is not None
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "many", "namespace": "default"},
        "spec": {"parallelism": 10**9, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    verdict = explain(model, workload(job))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert (reason.stage, reason.message, reason.spec_path) == (
        "autoscaler",
        f"node group system may grow to {system.max_size} node(s) of at most {model.system_pods // system.max_size}"
        f" pods each ({system.instance_type}); 1000000000 pod(s) need more",
        ("cluster", "systemNodes", "maxSize"),
    )
    job["spec"]["parallelism"] = model.system_pods
    assert explain(model, workload(job)).runs
