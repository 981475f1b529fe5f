"""The network rule: RDMA settings present where needed, consistent, and a pinned gate image."""

from __future__ import annotations

import pytest

from gpufleet.base.errors import SpecError
from gpufleet.rules import cross_field
from tests.network.fleets import RDMA, fleet, group


def issues(f, name: str = "network") -> list[tuple[tuple, str, str]]:
    return [(i.path, i.severity, i.message) for i in cross_field.RULES[name](f)]


def test_rdma_group_needs_network_rdma() -> None:
    with pytest.raises(SpecError) as err:
        fleet([group("ib", "p5en.48xlarge", "RDMA")])
    (issue,) = [i for i in err.value.issues if "network.rdma" in i.message]
    assert issue.path == ("nodeGroups", 0, "fabric")


def test_rdma_settings_not_needed_when_no_environment_deploys_the_network_stage() -> None:
    f = fleet([group("ib", "p5en.48xlarge", "RDMA")], through="admission")
    assert issues(f) == []


def test_unused_rdma_settings_are_a_warning() -> None:
    f = fleet([group("h100", "p5.48xlarge", "EFA")], RDMA.format(link="InfiniBand"))
    assert issues(f) == [
        (("network", "rdma"), "warning", "network.rdma is set but no node group has fabric RDMA: it is not used")
    ]


def test_each_rdma_port_once() -> None:
    extra = """\
network:
  rdma:
    networks:
      - {name: rail0, interface: ib0, hca: mlx5_0}
      - {name: rail1, interface: ib1, hca: mlx5_0}
"""
    with pytest.raises(SpecError) as err:
        fleet([group("ib", "p5en.48xlarge", "RDMA")], extra)
    assert [i.path for i in err.value.issues] == [("network", "rdma", "networks", 1, "hca")]


@pytest.mark.parametrize(
    ("image", "ok"),
    [
        ("example.com/nccl-tests:latest", False),
        ("example.com/nccl-tests", False),
        # A tag is refused (issue 29 item 14): aws-samples' buildspec.yaml rebuilds and re-pushes its tags.
        ("example.com/nccl-tests:2.16.9", False),
        ("example.com/nccl-tests@sha256:" + "a" * 64, True),
        ("example.com/nccl-tests:2.16.9@sha256:" + "a" * 64, True),
        ("example.com/nccl-tests@sha256:" + "a" * 63, False),
    ],
)
def test_gate_image_must_be_pinned_by_digest(image: str, ok: bool) -> None:
    extra = f"network:\n  bandwidthGate: {{image: '{image}'}}\n"
    if ok:
        assert fleet([group("h100", "p5.48xlarge", "EFA")], extra).network.bandwidth_gate.image == image
    else:
        with pytest.raises(SpecError) as err:
            fleet([group("h100", "p5.48xlarge", "EFA")], extra)
        assert [(i.path, i.message) for i in err.value.issues] == [
            (
                ("network", "bandwidthGate", "image"),
                f'image "{image}" is not pinned by digest: a tag can be rebuilt and pushed again',
            )
        ]


def test_network_defaults() -> None:
    gate = fleet([group("h100", "p5.48xlarge", "EFA")]).network.bandwidth_gate
    assert (gate.efficiency, gate.timeout_minutes) == (0.8, 30)
    # aws-samples' image by the digest its tag cuda13.0.2-efa1.48.0-ofiv1.19.0-ncclv2.30.4-1-testsv2.18.3 resolved to.
    assert gate.image == (
        "public.ecr.aws/hpc-cloud/nccl-tests@sha256:a5390d3f0eb50f3e5854085e2ae0fef90b9eb4f3b7486ed4cab0d47864809d4c"
    )
