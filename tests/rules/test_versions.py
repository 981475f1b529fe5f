"""The rules of gpufleet/rules/versions.py (versions) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import (
    ALL_VERSIONS,
    DCGM,
    DCGM_OLD,
    EFA_P5,
    MULTUS,
    PY,
    ZERO,
    Patch,
    add_group,
    at,
    build,
    found,
    through,
)

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    pytest.param(
        "versions",
        [at("versions", "addons", "nodeMonitoringAgent", value="v1.4.0-eksbuild.2")],
        [
            (
                "versions.addons.nodeMonitoringAgent",
                (
                    "EKS node monitoring agent v1.4.0-eksbuild.2 is not a version gpufleet knows (known: v1.6.4,"
                    " v1.7.0): its repair overrides follow the agent's list of fatal XIDs"
                ),
            )
        ],
        id="versions/node-monitoring-agent-unknown",
    ),
    # versions
    pytest.param("versions", [ALL_VERSIONS, through("cost")], [], id="versions/all-pinned"),
    pytest.param(
        "versions",
        [at("versions", "kueue", value=None), through("telemetry")],
        [],
        id="versions/kueue-not-needed-before-admission",
    ),
    # explicit-pins
    pytest.param("explicit-pins", [at("versions", "kueue", value=None)], [], id="explicit-pins/tested-by-default"),
    pytest.param(
        "explicit-pins", [at("versions", "pinning", value="Explicit")], [], id="explicit-pins/all-deployed-pinned"
    ),
    pytest.param(
        "explicit-pins",
        [
            at("versions", "pinning", value="Explicit"),
            at("versions", "kueue", value=None),
            at("versions", "gpuOperator", value=None),
        ],
        [
            ("versions.pinning", "pinning is Explicit, but NVIDIA GPU Operator is not pinned"),
            ("versions.pinning", "pinning is Explicit, but Kueue is not pinned"),
        ],
        id="explicit-pins/unpinned",
    ),
    pytest.param(
        "explicit-pins",
        [at("versions", "pinning", value="Explicit"), through("health")],
        [("versions.pinning", "pinning is Explicit, but Node Problem Detector is not pinned")],
        id="explicit-pins/a-later-stage-needs-its-pin",
    ),
    pytest.param("versions", [at("versions", "kueue", value=None)], [], id="versions/kueue-tested-by-default"),
    pytest.param(
        "versions",
        [at("versions", "kueue", value=None), at("teams", value=[])],
        [],
        id="versions/kueue-not-needed-without-teams",
    ),
    pytest.param("versions", [EFA_P5, through("network")], [], id="versions/efa-tested-by-default"),
    pytest.param(
        "versions", [at("versions", "clusterAutoscaler", value=None)], [], id="versions/autoscaler-tested-by-default"
    ),
    pytest.param(
        "versions",
        [at("versions", "clusterAutoscaler", value=None), at("cluster", "autoscaler", value="None")],
        [],
        id="versions/autoscaler-none",
    ),
    pytest.param(
        "versions",
        [at("versions", "clusterAutoscaler", "chart", value="9.50.1")],
        [
            (
                "versions.clusterAutoscaler.chart",
                "Kubernetes Cluster Autoscaler 9.50.1 is not a version gpufleet supports (supported: 9.58.0, 9.59.0)",
            )
        ],
        id="versions/autoscaler-unsupported",
    ),
    pytest.param(
        "versions",
        [at("versions", "kubePrometheusStack", value=None), at("telemetry", "prometheus", value="Existing")],
        [],
        id="versions/existing-prometheus",
    ),
    pytest.param(
        "versions",
        [at("versions", "kueue", "chart", value="latest")],
        [("versions.kueue.chart", '"latest" is not a pinned version')],
        id="versions/latest",
    ),
    pytest.param(
        "versions",
        [at("versions", "kueue", "chart", value="0.19")],
        [("versions.kueue.chart", '"0.19" is not a pinned version')],
        id="versions/minor-only",
    ),
    pytest.param(
        "versions",
        [at("versions", "gpuOperator", "chart", value="v25.3.0")],
        [
            (
                "versions.gpuOperator.chart",
                "NVIDIA GPU Operator v25.3.0 is not a version gpufleet supports (supported: v26.3.3, v26.7.0)",
            )
        ],
        id="versions/unsupported",
    ),
    pytest.param(
        "versions",
        [at("versions", "driver", value={"source": "Operator", "version": "595.91.07"})],
        [],
        id="versions/driver-operator",
    ),
    pytest.param(
        "versions",
        [at("versions", "driver", value={"source": "Operator"})],
        [("versions.driver", "driver source Operator needs version: the exact driver the operator installs")],
        id="versions/driver-operator-without-version",
    ),
    pytest.param(
        "versions",
        [at("versions", "driver", value={"source": "Operator", "version": "595"})],
        [("versions.driver.version", '"595" is not a pinned version')],
        id="versions/driver-not-pinned",
    ),
    pytest.param(
        "versions",
        [at("versions", "driver", value={"source": "Preinstalled", "toolkitVersion": "v1.17.8"})],
        [
            (
                "versions.driver.toolkitVersion",
                "toolkitVersion is ignored with source Preinstalled: the AMI's driver and toolkit are used",
            )
        ],
        id="versions/toolkit-with-preinstalled",
    ),
    pytest.param(
        "versions",
        [at("cluster", "kubernetesVersion", value="1.29")],
        [
            (
                "cluster.kubernetesVersion",
                "Kubernetes 1.29 is not a version gpufleet supports (supported: 1.32, 1.33, 1.34, 1.35)",
            )
        ],
        id="versions/kubernetes",
    ),
    pytest.param(
        "versions",
        [
            at(
                "imageSets",
                value=[{"name": "t", "images": ["nvcr.io/nvidia/pytorch@sha256:" + "0" * 64, "a:1", "b", "c:latest"]}],
            )
        ],
        [
            ("imageSets[0].images[2]", 'image "b" is not pinned to a tag or digest'),
            ("imageSets[0].images[3]", 'image "c:latest" is not pinned to a tag or digest'),
        ],
        id="versions/images",
    ),
    # images (issue 31 item 8): FAKE digests, "0" * 64 names no real image
    pytest.param("images", [through("health")], [], id="images/tags-alone-allowed"),
    pytest.param(
        "images",
        [
            through("health"),
            at("images", value={"requireDigests": True, "python": f"{PY}@{ZERO}", "dcgm": f"{DCGM}@{ZERO}"}),
        ],
        [],
        id="images/every-digest-given",
    ),
    pytest.param(
        "images",
        [at("images", value={"requireDigests": True})],
        [],
        id="images/required-but-health-not-deployed",
    ),
    pytest.param(
        "images",
        [through("health"), at("images", value={"requireDigests": True, "dcgm": f"{DCGM_OLD}@{ZERO}"})],
        [
            (
                "images.dcgm",
                f'"{DCGM_OLD}@{ZERO}" is a digest of {DCGM_OLD}, but this fleet runs {DCGM}: the runtime would pull'
                " the digest and run the other image",
            ),
            (
                "images.requireDigests",
                f'true, but the Python image "{PY}" (remediation controller, planted-fault checker) is pinned by tag'
                " only",
            ),
        ],
        id="images/other-tag-and-python-missing",
    ),
    pytest.param(
        "images",
        [
            through("health"),
            at("health", "remediation", value="None"),
            at("images", value={"requireDigests": True, "dcgm": f"{DCGM}@{ZERO}"}),
        ],
        [("images.requireDigests", f'true, but the Python image "{PY}" (planted-fault checker) is pinned by tag only')],
        id="images/no-remediator",
    ),
    pytest.param(
        "images",
        [at("images", value={"multus": f"{MULTUS}@{ZERO}"})],
        [
            (
                "images.multus",
                "set, but no environment renders a container that runs the Multus CNI image: it is not used",
            )
        ],
        id="images/multus-without-rdma",
    ),
    # addon-versions (issue 29 item 6): the dated offline catalog gpufleet.facts.addons
    pytest.param(
        "addon-versions",
        [
            at(
                "versions",
                "addons",
                value={
                    "kubeProxy": "v1.33.3-eksbuild.6",
                    "vpcCni": "v1.20.2-eksbuild.1",
                    "coreDns": "v1.12.3-eksbuild.1",
                },
            ),
            add_group(name="h100", instanceType="p5.48xlarge", fabric="EFA"),
        ],
        [],
        id="addons/fit",
    ),
    pytest.param(
        "addon-versions",
        [at("versions", "addons", value={"kubeProxy": "v1.32.5-eksbuild.2", "vpcCni": "v9.99.0-eksbuild.1"})],
        [
            (
                "versions.addons.kubeProxy",
                "kube-proxy v1.32.5-eksbuild.2 is for Kubernetes 1.32, the cluster runs 1.33: EKS offers kube-proxy only"
                " at the cluster's own minor",
            ),
            (
                "versions.addons.vpcCni",
                "VPC CNI v9.99.0-eksbuild.1 does not exist: every Amazon VPC CNI release is v1.x (newest known line"
                " v1.20, as of 2026-12-01)",
            ),
        ],
        id="addons/kube-proxy-minor-and-cni-major",
    ),
    pytest.param(
        "addon-versions",
        [
            at("versions", "addons", value={"vpcCni": "v1.18.4-eksbuild.1"}),
            add_group(name="h100", instanceType="p5.48xlarge", fabric="EFA"),
        ],
        [
            (
                "versions.addons.vpcCni",
                "VPC CNI v1.18.4-eksbuild.1 is older than 1.18.5, the first that handles the EFA-only network"
                " interfaces of this fleet's multi-card EFA groups",
            )
        ],
        id="addons/cni-below-the-efa-only-minimum",
    ),
    pytest.param(
        "addon-versions",
        [at("versions", "addons", value={"vpcCni": "v1.18.4-eksbuild.1"})],
        [],
        id="addons/old-cni-without-efa-only",
    ),
    # helm-values: the key checks against the pinned charts are table-tested in tests/unit/test_helm_overlay.py
    # (they read the upstream cache); here what needs no chart values.
    pytest.param("helm-values", [at("helm", value={})], [], id="helm-values/no-overlay"),
    pytest.param(
        "helm-values",
        [at("helm", value={"kueu": {"values": {"a": 1}}, "karpenter": {"values": {"replicas": 1}}})],
        [
            ("helm.karpenter", "no environment of the fleet installs Karpenter, so its values have no release"),
            ("helm.kueu", '"kueu" is not a chart gpufleet installs'),
        ],
        id="helm-values/unknown-or-not-installed-chart",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
