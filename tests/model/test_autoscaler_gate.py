"""Scale-from-zero template vectors from kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md
("Auto-Discovery Setup", scale from 0): an empty group offers what its node-template tags say and nothing more, and
a group never grows past maxSize."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpufleet.model.autoscaler import scale_up_blocker
from gpufleet.model.explain import FleetModel
from gpufleet.model.workload import Container, PodSpec
from tests.model.conftest import group

MakeModel = Callable[..., FleetModel]


def _pod(requests: dict[str, int]) -> PodSpec:
    return PodSpec(containers=(Container(name="c", requests=requests, limits={}),))


def test_template_offers_the_tagged_extended_resources(make_model: MakeModel) -> None:
    node = make_model().nodes["h100"]  # minSize 0: every pod needs a scale-up
    tolerations = [{"operator": "Exists"}]
    assert scale_up_blocker(node, _pod({"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}), tolerations, 2) is None


def test_untagged_resource_blocks_scale_from_zero(make_model: MakeModel) -> None:
    # README: "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage: 100G" is needed for a pod that
    # requests ephemeral storage; gpufleet does not tag it.
    node = make_model().nodes["h100"]
    blocked = scale_up_blocker(
        node, _pod({"nvidia.com/gpu": 1, "ephemeral-storage": 1024}), [{"operator": "Exists"}], 1
    )
    assert blocked is not None
    assert (
        blocked[0]
        == "the scale-from-zero template of node group h100 does not offer ephemeral-storage (no node-template resource"
        " tag)"
    )


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
