"""Fixtures of the rule privileged-image-digest (issue 31 item 8) for tests/policies/test_rules.py: the table's
containers (gpufleet/facts/images.py) by digest and by tag. FAKE_DIGEST is made up: the digest of no real image."""

from __future__ import annotations

from typing import Any

from tests.policies.objects import k8s, res

FAKE_DIGEST = "sha256:" + "0" * 64


def _remediator(image: str, name: str = "gpufleet-remediator") -> dict[str, Any]:
    pod = {"containers": [{"name": "remediator", "image": image}]}
    return k8s(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "gpufleet-health"},
            "spec": {"template": {"spec": pod}},
        }
    )


def _multus(image: str) -> dict[str, Any]:
    pod = {
        "hostNetwork": True,
        "initContainers": [{"name": "install-multus-binary", "image": image}],
        "containers": [{"name": "kube-multus", "image": image}],
    }
    return k8s(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "kube-multus-ds", "namespace": "gpufleet-network"},
            "spec": {"template": {"spec": pod}},
        }
    )


def _npd(image: str) -> dict[str, Any]:
    values = {"extraContainers": [{"name": "dcgm-health", "image": image}]}
    return res(
        "helm-node-problem-detector",
        "kubernetes:helm.sh/v3:Release",
        {"name": "node-problem-detector", "chart": "node-problem-detector", "values": values},
    )


PRIVILEGED_CASES: list[tuple[str, str, list[dict[str, Any]], set[str]]] = [
    (
        "privileged-image-digest",
        "remediator and Multus by digest (FAKE digests)",
        [_remediator(f"python:3.13.5-slim-bookworm@{FAKE_DIGEST}"), _multus(f"multus:v4.3.0-thick@{FAKE_DIGEST}")],
        set(),
    ),
    (
        "privileged-image-digest",
        "an unprivileged Deployment by tag",
        [_remediator("python:3.13.5-slim-bookworm", name="team-app")],
        set(),
    ),
    (
        "privileged-image-digest",
        "remediator and Multus by tag",
        [_remediator("python:3.13.5-slim-bookworm"), _multus("multus:v4.3.0-thick")],
        {"deployment-gpufleet-health-gpufleet-remediator", "daemonset-gpufleet-network-kube-multus-ds"},
    ),
    (
        "privileged-image-digest",
        "DCGM sidecar by tag in the NPD release values",
        [_npd("nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04")],
        {"helm-node-problem-detector"},
    ),
]
