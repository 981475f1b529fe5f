"""Which EKS add-on versions fit a Kubernetes minor: an offline, dated catalog, and the check `validate` runs with it.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/facts/addons.py.
"""

from __future__ import annotations

import re

from gpufleet.base.findings import CatalogFinding

AS_OF = "2026-12-01"
_VERSION = re.compile(r"^v(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\.(?P<patch>[0-9]+)-eksbuild\.[0-9]+$")

VPC_CNI_EFA_ONLY_MINIMUM = (1, 18, 5)
VPC_CNI_NEWEST_KNOWN = (1, 20)
COREDNS_NEWEST_KNOWN = (1, 12)


def parse(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of `v1.20.4-eksbuild.1`; None for anything else."""
    match = _VERSION.match(version)
    if match is None:
        return None
    return int(match["major"]), int(match["minor"]), int(match["patch"])


def dotted(parts: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in parts)


def check(key: str, version: str, kubernetes_version: str, *, efa_only: bool) -> CatalogFinding | None:
    """What the catalog says of add-on `key` (a versions.addons key) pinned at `version` on `kubernetes_version`;
    `efa_only`: some node group attaches EFA-only interfaces."""
    parts = parse(version)
    if parts is None:  # the schema refuses the form already
        return None
    major, minor, _ = parts
    if key == "kubeProxy" and f"{major}.{minor}" != kubernetes_version:
        return CatalogFinding(
            "error",
            f"kube-proxy {version} is for Kubernetes {major}.{minor}, the cluster runs {kubernetes_version}: EKS offers"
            " kube-proxy only at the cluster's own minor",
            f"pin a v{kubernetes_version}.<patch>-eksbuild.<n> build (aws eks describe-addon-versions --addon-name"
            f" kube-proxy --kubernetes-version {kubernetes_version})",
        )
    if key == "vpcCni":
        if major != 1:
            return CatalogFinding(
                "error",
                f"VPC CNI {version} does not exist: every Amazon VPC CNI release is v1.x (newest known line"
                f" v{dotted(VPC_CNI_NEWEST_KNOWN)}, as of {AS_OF})",
                f"pin a v1 build (aws eks describe-addon-versions --addon-name vpc-cni --kubernetes-version"
                f" {kubernetes_version})",
            )
        if efa_only and parts < VPC_CNI_EFA_ONLY_MINIMUM:
            return CatalogFinding(
                "error",
                f"VPC CNI {version} is older than {dotted(VPC_CNI_EFA_ONLY_MINIMUM)}, the first that handles the"
                " EFA-only network interfaces of this fleet's multi-card EFA groups",
                f"pin v{dotted(VPC_CNI_EFA_ONLY_MINIMUM)}-eksbuild.1 or later",
            )
        if (major, minor) > VPC_CNI_NEWEST_KNOWN:
            return CatalogFinding(
                "warning",
                f"VPC CNI {version} is newer than the newest line gpufleet knows (v{dotted(VPC_CNI_NEWEST_KNOWN)}, as"
                f" of {AS_OF})",
                "check it exists: gpufleet preflight asks EKS (eks:DescribeAddonVersions)",
            )
    if key == "coreDns" and (major, minor) > COREDNS_NEWEST_KNOWN:
        return CatalogFinding(
            "warning",
            f"CoreDNS {version} is newer than the newest line gpufleet knows (v{dotted(COREDNS_NEWEST_KNOWN)}, as of"
            f" {AS_OF})",
            "check it exists: gpufleet preflight asks EKS (eks:DescribeAddonVersions)",
        )
    return None
