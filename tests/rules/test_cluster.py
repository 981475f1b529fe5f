"""The rules of gpufleet/rules/cluster.py (the cluster's settings) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import Patch, at, build, found, group

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # telemetry
    pytest.param(
        "telemetry",
        [at("telemetry", value={"prometheus": "Existing", "existingNamespace": "monitoring"})],
        [],
        id="telemetry/existing",
    ),
    pytest.param(
        "telemetry",
        [at("telemetry", value={"prometheus": "Install", "existingNamespace": "monitoring"})],
        [("telemetry.existingNamespace", "existingNamespace is only used with prometheus: Existing")],
        id="telemetry/namespace-with-install",
    ),
    # system-nodes
    pytest.param("system-nodes", [], [], id="system/create"),
    pytest.param(
        "system-nodes", [at("cluster", "systemNodes", value=None)], [], id="system/create-without-takes-the-default"
    ),
    pytest.param(
        "system-nodes",
        [at("cluster", "systemNodes", value=None), at("cluster", "kubernetesVersion", value="1.29")],
        [
            (
                "cluster",
                (
                    "mode Create needs systemNodes: every GPU group is tainted, so CoreDNS and the controllers need CPU"
                    " nodes to run on"
                ),
            )
        ],
        id="system/create-without-and-no-known-release",
    ),
    pytest.param(
        "system-nodes",
        [at("cluster", "mode", value="Existing"), at("cluster", "systemNodes", value=None)],
        [],
        id="system/existing",
    ),
    pytest.param(
        "system-nodes",
        [at("cluster", "systemNodes", "releaseVersion", value="1.34.9-20260714")],
        [
            (
                "cluster.systemNodes.releaseVersion",
                "AMI release 1.34.9-20260714 is for Kubernetes 1.34, but the cluster runs 1.33",
            )
        ],
        id="system/release-other-kubernetes",
    ),
    pytest.param(
        "system-nodes",
        [at("cluster", "systemNodes", "releaseVersion", value="1.33.4-20260724")],
        [
            (
                "cluster.systemNodes.releaseVersion",
                (
                    "AMI release 1.33.4-20260724 is not among the published AL2023_x86_64_STANDARD releases for"
                    " Kubernetes 1.33 known to gpufleet (awslabs/amazon-eks-ami CHANGELOG as of 2026-07-23); the newest"
                    " known is 1.33.13-20260714"
                ),
            )
        ],
        id="system/release-unknown",
    ),
    pytest.param(
        "system-nodes",
        [at("cluster", "mode", value="Existing")],
        [
            (
                "cluster.systemNodes",
                "systemNodes is only used with mode Create: an existing cluster brings its own system nodes",
            )
        ],
        id="system/existing-with",
    ),
    pytest.param(
        "system-nodes",
        [group(ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"}, localStorage="RAID0")],
        [],
        id="system/raid0-bottlerocket-through-its-own-settings",
    ),
    # endpoint
    pytest.param(
        "endpoint", [at("cluster", "publicEndpoint", value={"cidrs": ["203.0.113.0/24"]})], [], id="endpoint/limited"
    ),
    pytest.param(
        "endpoint",
        [
            at(
                "cluster",
                "publicEndpoint",
                value={"cidrs": ["0.0.0.0/0"], "acknowledgeOpenToInternet": "lab cluster without a VPN"},
            )
        ],
        [],
        id="endpoint/open-acknowledged",
    ),
    pytest.param(
        "endpoint",
        [at("cluster", "publicEndpoint", value={"acknowledgeOpenToInternet": "lab cluster without a VPN"})],
        [],
        id="endpoint/default-acknowledged",
    ),
    pytest.param(
        "endpoint",
        [
            at("cluster", "mode", value="Existing"),
            at("cluster", "systemNodes", value=None),
            at("cluster", "publicEndpoint", value={"cidrs": ["203.0.113.0/24"]}),
        ],
        [
            (
                "cluster.publicEndpoint",
                "publicEndpoint is only used with mode Create: gpufleet does not change an existing cluster's endpoint",
            )
        ],
        id="endpoint/existing",
    ),
    pytest.param(
        "endpoint",
        [
            at("cluster", "endpointAccess", value="Private"),
            at("cluster", "publicEndpoint", value={"cidrs": ["203.0.113.0/24"]}),
        ],
        [
            (
                "cluster.publicEndpoint",
                "publicEndpoint is set but endpointAccess is Private: there is no public endpoint",
            )
        ],
        id="endpoint/private",
    ),
    pytest.param(
        "endpoint",
        [
            at(
                "cluster",
                "publicEndpoint",
                value={"cidrs": ["203.0.113.0/24"], "acknowledgeOpenToInternet": "lab cluster without a VPN"},
            )
        ],
        [
            (
                "cluster.publicEndpoint.acknowledgeOpenToInternet",
                "acknowledgeOpenToInternet is set but the endpoint is not open: only 203.0.113.0/24 may reach it",
            )
        ],
        id="endpoint/acknowledged-but-limited",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
