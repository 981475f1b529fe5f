"""The rules of gpufleet/rules/node_groups.py (node groups' shape) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import BOTTLEROCKET, EFA_P5, Patch, build, found, group

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # known-instance-type
    pytest.param("known-instance-type", [group(instanceType="p5.48xlarge")], [], id="instance/known"),
    pytest.param(
        "known-instance-type",
        [group(instanceType="m7i.xlarge")],
        [("nodeGroups[0].instanceType", '"m7i.xlarge" is not a GPU instance type gpufleet knows')],
        id="instance/cpu-type",
    ),
    # warm-pool
    pytest.param(
        "warm-pool", [group(warmPool={"minSize": 4, "state": "Hibernated"})], [], id="warm/full-hibernated-small"
    ),
    pytest.param(
        "warm-pool",
        [group(warmPool={"minSize": 5})],
        [("nodeGroups[0].warmPool.minSize", "a warm pool of 5 is larger than the group's maxSize 4")],
        id="warm/larger-than-max",
    ),
    pytest.param(
        "warm-pool",
        [group(warmPool={"minSize": 2, "maxPreparedCapacity": 1})],
        [("nodeGroups[0].warmPool.maxPreparedCapacity", "maxPreparedCapacity 1 is less than the pool's minSize 2")],
        id="warm/prepared-below-min",
    ),
    pytest.param(
        "warm-pool",
        [group(instanceType="p5.48xlarge", warmPool={"state": "Hibernated"})],
        [
            (
                "nodeGroups[0].warmPool.state",
                "p5.48xlarge has 2048 GiB of RAM; EC2 hibernates only instances with less than 150 GB",
            )
        ],
        id="warm/hibernated-p5",
    ),
    pytest.param(
        "warm-pool",
        [group(capacity={"type": "CapacityBlock", "reservationId": "cr-0123456789abcdef0"}, warmPool={})],
        [
            (
                "nodeGroups[0].warmPool",
                "a CapacityBlock group cannot have a warm pool: the reservation already holds the instances",
            )
        ],
        id="warm/capacity-block",
    ),
    pytest.param("warm-pool", [group(ami=BOTTLEROCKET, warmPool={"minSize": 1})], [], id="warm/bottlerocket-defaults"),
    pytest.param(
        "warm-pool",
        [group(ami=BOTTLEROCKET, warmPool={"reuseOnScaleIn": True})],
        [
            (
                "nodeGroups[0].warmPool.reuseOnScaleIn",
                "EKS does not support reuseOnScaleIn with Bottlerocket AMIs (BOTTLEROCKET_x86_64_NVIDIA)",
            )
        ],
        id="warm/bottlerocket-reuse",
    ),
    # instanceTypes (Karpenter instance flexibility): one GPU model and count per pool, instanceType the smallest
    pytest.param(
        "instance-types",
        [group(provisioner="Karpenter", instanceTypes=["g6.xlarge", "g6.2xlarge", "g6.4xlarge"])],
        [],
        id="instance-types/sizes-of-one-gpu",
    ),
    pytest.param(
        "instance-types",
        [group(instanceTypes=["g6.xlarge", "g6.2xlarge"])],
        [
            (
                "nodeGroups[0].instanceTypes",
                "instanceTypes is a Karpenter NodePool's; a managed node group here has one instance type (its launch"
                " template, warm pool and the Cluster Autoscaler's scale-from-zero template have one shape)",
            )
        ],
        id="instance-types/managed",
    ),
    pytest.param(
        "instance-types",
        [group(provisioner="Karpenter", instanceTypes=["g6.2xlarge", "g6.4xlarg", "g6.12xlarge", "g6e.2xlarge"])],
        [
            (
                "nodeGroups[0].instanceTypes",
                "instanceTypes does not name instanceType g6.xlarge, the pool's reference shape",
            ),
            ("nodeGroups[0].instanceTypes[1]", '"g6.4xlarg" is not a GPU instance type gpufleet knows'),
            (
                "nodeGroups[0].instanceTypes[2]",
                "g6.12xlarge has 4 NVIDIA-L4 GPU(s) per node, instanceType g6.xlarge 1 NVIDIA-L4: a pool holds one"
                " GPU model and one GPU count per node (quotas count GPUs, maxSize nodes, both of one node shape)",
            ),
            (
                "nodeGroups[0].instanceTypes[3]",
                "g6e.2xlarge has 1 NVIDIA-L40S GPU(s) per node, instanceType g6.xlarge 1 NVIDIA-L4: a pool holds one"
                " GPU model and one GPU count per node (quotas count GPUs, maxSize nodes, both of one node shape)",
            ),
        ],
        id="instance-types/one-gpu-model-and-count",
    ),
    pytest.param(
        "instance-types",
        [group(provisioner="Karpenter", instanceType="g6.2xlarge", instanceTypes=["g6.2xlarge", "g6.xlarge"])],
        [
            (
                "nodeGroups[0].instanceType",
                "instanceType g6.2xlarge is not the smallest of instanceTypes: g6.xlarge has fewer vCPUs, less memory"
                " or less instance store; the quotas, the model and the cost estimate use instanceType's shape, which"
                " every node of the pool must offer at least",
            )
        ],
        id="instance-types/reference-is-the-smallest",
    ),
    pytest.param(
        "instance-types",
        [
            EFA_P5,
            group(
                provisioner="Karpenter", instanceType="p5e.48xlarge", instanceTypes=["p5e.48xlarge", "p5en.48xlarge"]
            ),
        ],
        [
            (
                "nodeGroups[0].instanceTypes[1]",
                "p5en.48xlarge has 16 EFA interfaces, p5e.48xlarge 32: the EC2NodeClass's networkInterfaces are one"
                " list for every type of the pool",
            )
        ],
        id="instance-types/efa-interfaces",
    ),
    pytest.param(
        "instance-types",
        [group(provisioner="Karpenter", instanceType="p5e.48xlarge", instanceTypes=["p5e.48xlarge", "p5en.48xlarge"])],
        [],
        id="instance-types/h200-without-efa",
    ),
    pytest.param(
        "warm-pool",
        [group(ami=BOTTLEROCKET, warmPool={"state": "Hibernated"})],
        [
            (
                "nodeGroups[0].warmPool.state",
                (
                    "EKS does not support the Hibernated warm-pool state with Bottlerocket AMIs"
                    " (BOTTLEROCKET_x86_64_NVIDIA)"
                ),
            )
        ],
        id="warm/bottlerocket-hibernated",
    ),
    pytest.param(
        "warm-pool",
        [group(capacity={"type": "Spot"}, warmPool={})],
        [
            (
                "nodeGroups[0].warmPool",
                "a Spot group cannot have a warm pool: EC2 Auto Scaling warm pools do not support Spot Instances",
            )
        ],
        id="warm/spot",
    ),
    # scaling
    pytest.param(
        "scaling",
        [group(scaling={"minSize": 4, "maxSize": 4, "desiredSize": 4}, update={"maxUnavailablePercentage": 50})],
        [],
        id="scaling/edges",
    ),
    pytest.param(
        "scaling",
        [group(scaling={"minSize": 5, "maxSize": 4})],
        [("nodeGroups[0].scaling.minSize", "minSize 5 is larger than maxSize 4")],
        id="scaling/min-above-max",
    ),
    pytest.param(
        "scaling",
        [group(scaling={"minSize": 1, "maxSize": 4, "desiredSize": 0})],
        [("nodeGroups[0].scaling.desiredSize", "desiredSize 0 is outside minSize..maxSize (1..4)")],
        id="scaling/desired-below-min",
    ),
    pytest.param(
        "scaling",
        [group(update={"maxUnavailable": 1, "maxUnavailablePercentage": 50})],
        [
            (
                "nodeGroups[0].update.maxUnavailablePercentage",
                "set maxUnavailable or maxUnavailablePercentage, not both (EKS takes one)",
            )
        ],
        id="scaling/both-update-limits",
    ),
    # taints
    pytest.param(
        "taints",
        [group(taints=[{"key": f"t{i}", "effect": "NoSchedule"} for i in range(49)])],
        [],
        id="taints/49-plus-gpu",
    ),
    pytest.param(
        "taints",
        [group(taints=[{"key": f"t{i}", "effect": "NoSchedule"} for i in range(50)])],
        [("nodeGroups[0].taints", "50 taints plus the 1 gpufleet adds is 51; EKS allows at most 50 per node group")],
        id="taints/50-plus-gpu",
    ),
    pytest.param(
        "taints",
        [EFA_P5, group(taints=[{"key": f"t{i}", "effect": "NoSchedule"} for i in range(48)])],
        [],
        id="taints/48-plus-gpu-and-efa",
    ),
    pytest.param(
        "taints",
        [EFA_P5, group(taints=[{"key": f"t{i}", "effect": "NoSchedule"} for i in range(49)])],
        [("nodeGroups[0].taints", "49 taints plus the 2 gpufleet adds is 51; EKS allows at most 50 per node group")],
        id="taints/49-plus-gpu-and-efa",
    ),
    pytest.param(
        "taints",
        [group(taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])],
        [("nodeGroups[0].taints[0].key", "the nvidia.com/gpu taint is added by gpufleet on every group")],
        id="taints/gpu-taint",
    ),
    pytest.param(
        "taints",
        [group(taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}])],
        [],
        id="taints/same-key-other-effect",
    ),
    pytest.param(
        "taints",
        [group(taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "x", "effect": "NoSchedule"}])],
        [("nodeGroups[0].taints[0].key", 'taint "a:NoSchedule" appears more than once')],
        id="taints/repeated",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
