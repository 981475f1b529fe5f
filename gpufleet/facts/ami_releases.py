"""Which EKS AMI releases exist: an offline, dated catalog, and the check `validate` runs with it.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/facts/ami_releases.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from gpufleet.base import package_data
from gpufleet.base.findings import CatalogFinding

_AL2023 = re.compile(r"^(?P<minor>[0-9]+\.[0-9]+)\.[0-9]+-[0-9]{8}$")
_BOTTLEROCKET = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9a-f]{8})?$")
_AL2023_DATE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+-20[0-9][0-9](0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])$")
BOTTLEROCKET_FORM = "1.54.0-5043decc"
# The CPU system node group (cluster.systemNodes) runs the standard AL2023 AMI.
SYSTEM_NODES_AMI_TYPE = "AL2023_x86_64_STANDARD"


@dataclass(frozen=True, slots=True)
class Catalog:
    source: str
    commit: str
    as_of: str
    releases: Mapping[str, Mapping[str, tuple[str, ...]]]  # AMI type -> Kubernetes minor -> releases, oldest first


@cache
def catalog() -> Catalog:
    data = json.loads(package_data.text("data/eks-ami-releases.json"))
    releases = {t: {m: tuple(r) for m, r in minors.items()} for t, minors in data["releases"].items()}
    return Catalog(source=data["source"], commit=data["commit"], as_of=data["asOf"], releases=releases)


def newest(ami_type: str, kubernetes_version: str) -> str | None:
    """The newest published release of `ami_type` for `kubernetes_version` known to gpufleet, if any."""
    known = catalog().releases.get(ami_type, {}).get(kubernetes_version, ())
    return known[-1] if known else None


def is_bottlerocket(ami_type: str) -> bool:
    return ami_type.startswith("BOTTLEROCKET")


def kubernetes_minor(release: str) -> str | None:
    """The Kubernetes minor an EKS AL2023 release is for ("1.33.13-20260714" -> "1.33"); None for other forms."""
    match = _AL2023.match(release)
    return match["minor"] if match else None


def check(ami_type: str, release: str, kubernetes_version: str) -> CatalogFinding | None:
    """What is wrong with pinning `release` of `ami_type` on a cluster of `kubernetes_version`, if anything."""
    if is_bottlerocket(ami_type):
        # A build id is 8 hex digits, so an EKS AL2023 release (1.33.13-20260714) fits the form; its date gives it away.
        if _BOTTLEROCKET.match(release) and not _AL2023_DATE.match(release):
            return None
        return CatalogFinding(
            "error",
            f"{release} is not a Bottlerocket release",
            f"use a Bottlerocket version like {BOTTLEROCKET_FORM} (the variant aws-k8s-{kubernetes_version}-nvidia"
            " follows the cluster)",
        )
    known = catalog().releases.get(ami_type, {}).get(kubernetes_version, ())
    newest = f"; the newest known is {known[-1]}" if known else ""
    match = _AL2023.match(release)
    if match is None:
        return CatalogFinding(
            "error",
            f"{release} is not an EKS AMI release (<kubernetes patch version>-<YYYYMMDD>)",
            f"use a {kubernetes_version} release of {ami_type}{newest}",
        )
    if match["minor"] != kubernetes_version:
        return CatalogFinding(
            "error",
            f"AMI release {release} is for Kubernetes {match['minor']}, but the cluster runs {kubernetes_version}",
            f"use a {kubernetes_version} release of {ami_type}{newest}",
        )
    if (
        known and release not in known
    ):  # no releases at all: a Kubernetes minor gpufleet does not support (rules say so)
        cat = catalog()
        return CatalogFinding(
            "warning",
            f"AMI release {release} is not among the published {ami_type} releases for Kubernetes {kubernetes_version}"
            f" known to gpufleet (awslabs/amazon-eks-ami CHANGELOG as of {cat.as_of}){newest}",
            "EKS rejects a release it does not know: check it with `gpufleet preflight`, or pin a published one",
        )
    return None
