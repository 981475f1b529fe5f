"""fabric RDMA on EC2 (issue 29 item 11): EC2 GPU instances have EFA, not ConnectX NICs, yet `fabric: RDMA` was
accepted on p5.48xlarge: the nodes launched without their EFA interfaces and the gate waited for rdma/* devices that
never appear. The catalog now says which instance types have RDMA NICs (none EC2 offers), and the rule refuses RDMA
elsewhere; the Network Operator path stays for nodes that have them (tests/rdma_fiction.py)."""

from __future__ import annotations

import pytest

from gpufleet.base.errors import SpecError
from gpufleet.facts import catalog
from tests import rdma_fiction
from tests.network.fleets import RDMA, fleet, group


def test_no_gpu_instance_type_gpufleet_ships_has_rdma_nics() -> None:
    assert {info.rdma_nics for info in rdma_fiction.SHIPPED.values()} == {0}


@pytest.mark.parametrize(
    ("instance", "hint"),
    [
        ("p5.48xlarge", "use fabric EFA (p5.48xlarge has 32 EFA interface(s))"),
        ("p4d.24xlarge", "use fabric EFA (p4d.24xlarge has 4 EFA interface(s))"),
        ("g5.xlarge", "use fabric None"),
    ],
)
def test_rdma_where_the_instance_type_has_no_rdma_nics_is_refused(instance: str, hint: str) -> None:
    with pytest.raises(SpecError) as err:
        fleet([group("ib", instance, "RDMA")], RDMA.format(link="InfiniBand"))
    assert [(i.path, i.message, i.hint) for i in err.value.issues] == [
        (
            ("nodeGroups", 0, "fabric"),
            f"{instance} has no RDMA NICs: EC2 GPU instances reach each other over EFA, not ConnectX InfiniBand or"
            " RoCE, so fabric RDMA would launch the nodes without their EFA interfaces and wait for rdma/* devices"
            " that never appear",
            hint,
        )
    ]


def test_the_shipped_catalog_refuses_rdma_on_every_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "CATALOG", rdma_fiction.SHIPPED)
    with pytest.raises(SpecError):
        fleet([group("ib", rdma_fiction.PRETEND, "RDMA")], RDMA.format(link="InfiniBand"))


def test_a_type_with_rdma_nics_keeps_the_network_operator() -> None:
    f = fleet([group("ib", rdma_fiction.PRETEND, "RDMA")], RDMA.format(link="InfiniBand"))
    assert f.node_groups[0].fabric.value == "RDMA"


def test_the_ip_pools_the_user_must_create_are_a_warning_with_the_reason() -> None:
    # Before: a plan note said "which you create", without saying that the CRD appears only after the operator
    # reconciles nvIpam (Mellanox/network-operator manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_ippools.yaml).
    from tests.network.fleets import plan

    f = fleet([group("ib", rdma_fiction.PRETEND, "RDMA")], RDMA.format(link="InfiniBand"))
    network = next(s for s in plan(f).stages if s.name == "network")
    assert (
        "the RDMA networks need nv-ipam IPPools `rail0`, `pool1` (nv-ipam.nvidia.com/v1alpha1, namespace"
        " nvidia-network-operator) that gpufleet cannot create: the Network Operator installs the IPPool CRD only when"
        " it reconciles the NicClusterPolicy's nvIpam, after stage 5 starts. Create them with your fabric's subnets"
        " while the RDMA bandwidth gate waits (up to 30 min), or the gate's pods get no addresses and the rollout"
        " fails at stage 5" in network.content.warnings
    )
