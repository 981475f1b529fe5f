"""Which EKS add-on versions fit a Kubernetes minor: an offline, dated catalog, and the check `validate` runs with it.

EKS add-on versions are `v<upstream version>-eksbuild.<n>`; which of them a cluster accepts depends on its Kubernetes
minor (eks:DescribeAddonVersions with `kubernetesVersion`, which `gpufleet preflight` asks, gpufleet/preflight/
addons.py). Offline, gpufleet knows these facts, each from the EKS user guide (awsdocs/amazon-eks-user-guide,
latest/ug/networking/, as of AS_OF):

- kube-proxy follows the cluster: every version in "kube-proxy versions" (managing-kube-proxy.adoc, "the latest
  version of the Amazon EKS add-on type for each Kubernetes version") carries the cluster's own minor
  (1.32 -> v1.32.3-eksbuild.7, 1.31 -> v1.31.7-eksbuild.7, ...). A kube-proxy of another minor is an error.
- The Amazon VPC CNI has been major version 1 throughout (aws/amazon-vpc-cni-k8s releases v1.x; the newest the
  user guide and the EKS add-on listings show as of AS_OF is in the v1.20 line): another major is an error, a newer
  v1 minor than VPC_CNI_NEWEST_KNOWN a warning (the catalog may be older than the release).
- EFA-only network interfaces (every network card but the first on p5 and the other multi-card EFA types, the
  `efa-only` interface type gpufleet attaches) need VPC CNI 1.18.5 or later (EKS user guide "Run machine learning
  training on Amazon EKS with Elastic Fabric Adapter", docs.aws.amazon.com/eks/latest/userguide/node-efa.html,
  prerequisites; read through its citations, the page itself is not in the reference corpus).
- CoreDNS: the user guide's "CoreDNS versions" (managing-coredns.adoc) lists v1.12 for 1.33 and v1.11 for 1.29-1.32;
  a line newer than the newest known (COREDNS_NEWEST_KNOWN) is a warning. Older lines are left to preflight: EKS
  keeps offering older CoreDNS builds on newer clusters.
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
