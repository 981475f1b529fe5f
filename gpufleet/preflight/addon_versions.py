"""EKS add-on check: each pinned add-on version is one EKS offers for the cluster's Kubernetes version.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/addon_versions.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.plan.builders.cluster import ADDONS
from gpufleet.preflight.clients import paginate
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding


def check_addons(ctx: Context) -> Iterator[AccountFinding]:
    eks = ctx.clients.eks
    fleet = ctx.fleet
    if eks is None or fleet.cluster.mode != "Create":
        return
    k8s = fleet.cluster.kubernetes_version
    for key, version in sorted(fleet.versions.addons.items()):
        name = ADDONS.get(key)
        if name is None:
            continue
        found = paginate(eks, "describe_addon_versions", "addons", addonName=name, kubernetesVersion=k8s)
        offered = [v for a in found if a.get("addonName") == name for v in a.get("addonVersions", [])]
        versions = [str(v["addonVersion"]) for v in offered]
        if version in versions:
            continue
        default = next(
            (
                str(v["addonVersion"])
                for v in offered
                for c in v.get("compatibilities", [])
                if c.get("clusterVersion") == k8s and c.get("defaultVersion")
            ),
            versions[0] if versions else None,
        )
        listing = (
            f"aws eks describe-addon-versions --addon-name {name} --kubernetes-version {k8s} --region {ctx.region}"
        )
        yield AccountFinding(
            severity="error",
            node_group=None,
            message=f"EKS add-on {name} {version} is not offered for Kubernetes {k8s} in {ctx.region}"
            + (f" ({len(versions)} versions are, the default {default})" if default else " (EKS lists none)"),
            hint=(f"pin versions.addons.{key}: {default}" if default else f"pin a listed version: {listing}"),
        )
