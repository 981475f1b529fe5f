"""The rules of gpufleet/rules/network.py (fabrics) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import ALL_VERSIONS, EFA_P5, Patch, at, build, found, group, through

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # efa
    pytest.param("efa", [EFA_P5], [], id="efa/pinned"),
    pytest.param(
        "efa",
        [EFA_P5, group(instanceType="g5.xlarge")],
        [("nodeGroups[0].fabric", "g5.xlarge has no EFA")],
        id="efa/not-supported",
    ),
    pytest.param(
        "efa",
        [EFA_P5, group(zone=None)],
        [
            (
                "nodeGroups[0].zone",
                "an EFA group must be pinned to one zone (EFA traffic does not cross availability zones)",
            )
        ],
        id="efa/no-zone",
    ),
    pytest.param(
        "efa",
        [group(efaTaint="Disabled")],
        [
            (
                "nodeGroups[0].efaTaint",
                "efaTaint Disabled has no effect on fabric None: only fabric EFA groups carry the EFA taint",
            )
        ],
        id="efa/taint-opt-out-without-efa",
    ),
    pytest.param("efa", [EFA_P5, group(efaTaint="Disabled")], [], id="efa/taint-opt-out"),
    pytest.param(
        "efa",
        [EFA_P5, group(subnetIds=None)],
        [
            (
                "nodeGroups[0].subnetIds",
                "an EFA group must use exactly one subnet, in its zone; it uses 2 (cluster.network.subnetIds)",
            )
        ],
        id="efa/cluster-subnets",
    ),
    pytest.param(
        "efa",
        [EFA_P5, group(subnetIds=["subnet-0aa", "subnet-0bb"])],
        [("nodeGroups[0].subnetIds", "an EFA group must use exactly one subnet, in its zone; it uses 2")],
        id="efa/two-subnets",
    ),
    pytest.param("efa", [group(instanceType="g5.xlarge")], [], id="efa/no-fabric"),
    # network
    pytest.param("network", [EFA_P5], [], id="network/efa"),
    pytest.param(
        "network",
        [
            ALL_VERSIONS,
            through("network"),
            group(instanceType="p5en.48xlarge", fabric="RDMA"),
            at("network", value={"rdma": {"networks": [{"name": "rail0", "interface": "ib0", "hca": "mlx5_0"}]}}),
        ],
        [],
        id="network/rdma",
    ),
    pytest.param(
        "network",
        [ALL_VERSIONS, through("network"), group(instanceType="p5en.48xlarge", fabric="RDMA")],
        [
            (
                "nodeGroups[0].fabric",
                (
                    'fabric RDMA needs network.rdma: the RDMA devices and ports of group "l4"\'s NICs (for the device'
                    " plugin, the secondary networks and NCCL_IB_HCA)"
                ),
            )
        ],
        id="network/rdma-without-settings",
    ),
    pytest.param(
        "network", [group(instanceType="p5en.48xlarge", fabric="RDMA")], [], id="network/rdma-stage-not-deployed"
    ),
    pytest.param(
        "network",
        [
            at(
                "network",
                value={
                    "rdma": {
                        "networks": [
                            {"name": "r0", "interface": "ib0", "hca": "mlx5_0"},
                            {"name": "r1", "interface": "ib1", "hca": "mlx5_0"},
                        ]
                    }
                },
            )
        ],
        [
            ("network.rdma", "network.rdma is set but no node group has fabric RDMA: it is not used"),
            ("network.rdma.networks[1].hca", 'hca "mlx5_0" appears in more than one RDMA network'),
        ],
        id="network/rdma-unused-and-duplicate",
    ),
    pytest.param(
        "network",
        [at("network", "bandwidthGate", value={"image": "example.com/nccl-tests:latest"})],
        [
            (
                "network.bandwidthGate.image",
                'image "example.com/nccl-tests:latest" is not pinned by digest: a tag can be rebuilt and pushed again',
            )
        ],
        id="network/gate-image-unpinned",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
