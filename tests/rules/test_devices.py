"""The rules of gpufleet/rules/devices.py (`devices`: DevicePlugin or DRA) on small fleets: a passing and a failing
case of each, with the exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import Patch, at, build, found, group

# Kubernetes 1.34 for the whole minimal fleet: the control plane, the system nodes and the GPU group's AMI.
K134: list[Patch] = [
    at("cluster", "kubernetesVersion", value="1.34"),
    at("cluster", "systemNodes", "releaseVersion", value="1.34.9-20260714"),
    group(ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.34.9-20260714"}),
]
DRA = group(devices="DRA")
BOTTLEROCKET_OLD = group(ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"})
BOTTLEROCKET_NEW = group(ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.63.0-b2c7a1d9"})

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    pytest.param("devices", [], [], id="devices/device-plugin"),
    pytest.param("devices", [*K134, DRA], [], id="devices/dra"),
    pytest.param(
        "devices",
        [DRA],
        [
            (
                "nodeGroups[0].devices",
                "devices DRA needs Kubernetes 1.34 or later (resource.k8s.io/v1 is served from 1.34); the cluster runs"
                " 1.33",
            )
        ],
        id="devices/dra-before-1.34",
    ),
    pytest.param(
        "devices",
        [*K134, DRA, group(provisioner="Karpenter")],
        [
            (
                "nodeGroups[0].devices",
                "devices DRA on provisioner Karpenter: Karpenter 1.14 does not provision nodes for ResourceClaims (its"
                " DRA support arrives in 1.15, behind feature gates)",
            )
        ],
        id="devices/dra-on-karpenter",
    ),
    pytest.param(
        "devices",
        [*K134, DRA, group(sharing={"strategy": "TimeSlicing", "replicas": 2, "acknowledgeNoIsolation": True})],
        [
            (
                "nodeGroups[0].sharing.strategy",
                "sharing TimeSlicing with devices DRA: the NVIDIA DRA driver has time-slicing only as an alpha feature"
                " (TimeSlicingSettings)",
            )
        ],
        id="devices/dra-time-slicing",
    ),
    pytest.param(
        "devices",
        [*K134, DRA, group(instanceType="p5.48xlarge", sharing={"strategy": "MIG", "profile": "1g.10gb"})],
        [
            (
                "nodeGroups[0].sharing.strategy",
                "sharing MIG with devices DRA: the NVIDIA DRA driver partitions MIG only as an alpha feature"
                " (DynamicMIG); gpufleet's MIG is the GPU Operator's MIG manager with the device plugin",
            )
        ],
        id="devices/dra-mig",
    ),
    pytest.param(
        "devices",
        [*K134, DRA, group(sharing={"strategy": "MPS", "replicas": 2})],
        [
            (
                "nodeGroups[0].sharing.strategy",
                "sharing MPS with devices DRA: the NVIDIA DRA driver has MPS only as an alpha feature (MPSSupport)",
            )
        ],
        id="devices/dra-mps",
    ),
    pytest.param(
        "devices",
        [*K134, DRA, BOTTLEROCKET_OLD],
        [
            (
                "nodeGroups[0].ami.releaseVersion",
                "Bottlerocket 1.54.0 cannot turn its own NVIDIA device plugin off"
                " (settings.kubelet-device-plugins.nvidia.enabled needs 1.63.0 or later), and beside the DRA driver it"
                " would hand out the same GPUs twice",
            )
        ],
        id="devices/dra-old-bottlerocket",
    ),
    pytest.param("devices", [*K134, DRA, BOTTLEROCKET_NEW], [], id="devices/dra-bottlerocket"),
    pytest.param("devices", [BOTTLEROCKET_OLD], [], id="devices/device-plugin-old-bottlerocket"),
    pytest.param(
        "devices",
        [*K134, DRA, group(topology={"placement": "Required"})],
        [
            (
                "nodeGroups[0].topology.placement",
                "placement Required with devices DRA: Kueue's Topology Aware Scheduling does not count DRA devices"
                " (Kueue 0.19 supports DRA and TAS only apart), so its topology assignments would be wrong",
            )
        ],
        id="devices/dra-tas",
    ),
    pytest.param("devices", [*K134, DRA, group(topology={"placement": "None"})], [], id="devices/dra-no-tas"),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
