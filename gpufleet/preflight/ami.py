"""AMI check: each pinned AMI release (GPU node groups and the system nodes) is published, exactly as written.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/ami.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpufleet.facts.ami_releases import SYSTEM_NODES_AMI_TYPE, is_bottlerocket
from gpufleet.preflight.clients import ApiError, call
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding

_AL2023_RELEASE = re.compile(r"^(?P<k8s>[0-9]+\.[0-9]+)\.[0-9]+-(?P<date>[0-9]{8})$")
_BOTTLEROCKET_RELEASE = re.compile(r"^(?P<version>[0-9]+\.[0-9]+\.[0-9]+)(-[0-9a-f]{8})?$")


def _arch(ami_type: str) -> str:
    return "arm64" if "_ARM_64_" in ami_type else "x86_64"


def _flavor(ami_type: str) -> str:
    return "standard" if ami_type.endswith("_STANDARD") else "nvidia"


def parameter_prefix(ami_type: str, k8s: str) -> str:
    """The SSM path under which every release of this AMI type is published."""
    arch = _arch(ami_type)
    if is_bottlerocket(ami_type):
        return f"/aws/service/bottlerocket/aws-k8s-{k8s}-nvidia/{arch}"
    return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{_flavor(ami_type)}"


def parameter_names(ami_type: str, release: str, k8s: str) -> tuple[str, ...]:
    """The SSM parameters that identify the pinned release, in lookup order; () when the release is malformed.
    AL2023: the release's `release_version`; Bottlerocket: the version's `image_id`."""
    prefix = parameter_prefix(ami_type, k8s)
    if is_bottlerocket(ami_type):
        match = _BOTTLEROCKET_RELEASE.match(release)
        if match is None:
            return ()
        versions = dict.fromkeys([release, match["version"]])
        return tuple(f"{prefix}/{v}/image_id" for v in versions)
    match = _AL2023_RELEASE.match(release)
    if match is None:
        return ()
    return (
        f"{prefix}/amazon-eks-node-al2023-{_arch(ami_type)}-{_flavor(ami_type)}-{match['k8s']}-v{match['date']}/release_version",
    )


def _value(ctx: Context, name: str, cache: dict[str, str | None]) -> str | None:
    """The parameter's value, or None when AWS has no such parameter."""
    if name not in cache:
        try:
            cache[name] = str(call(ctx.clients.ssm, "get_parameter", Name=name)["Parameter"]["Value"])
        except ApiError as exc:
            if exc.code != "ParameterNotFound":
                raise
            cache[name] = None
    return cache[name]


def _check(
    ctx: Context, where: str | None, ami_type: str, release: str, cache: dict[str, str | None]
) -> Iterator[AccountFinding]:
    k8s = ctx.fleet.cluster.kubernetes_version
    listing = (
        f"aws ssm get-parameters-by-path --path {parameter_prefix(ami_type, k8s)} --recursive --region {ctx.region}"
        " --query 'Parameters[].Name'"
    )
    fix = f"pin a published release: {listing}"
    names = parameter_names(ami_type, release, k8s)
    if not names:
        form = "1.54.0-5043decc" if is_bottlerocket(ami_type) else f"{k8s}.<patch>-<YYYYMMDD>"
        yield AccountFinding(
            severity="error",
            node_group=where,
            message=f"releaseVersion {release} is not a {ami_type} release (like {form})",
            hint=fix,
        )
        return
    value = next((v for v in (_value(ctx, name, cache) for name in names) if v is not None), None)
    if value is None:
        yield AccountFinding(
            severity="error",
            node_group=where,
            message=(
                f"AMI release {release} ({ami_type}) does not exist for Kubernetes {k8s} in {ctx.region}: no SSM"
                f" parameter {names[0]}"
            ),
            hint=fix,
        )
    elif not is_bottlerocket(ami_type) and value != release:
        yield AccountFinding(
            severity="error",
            node_group=where,
            message=f"AMI release {release} ({ami_type}) is not what EKS publishes: {names[0]} is {value}",
            hint=f'pin releaseVersion: "{value}"',
        )


def check_ami(ctx: Context) -> Iterator[AccountFinding]:
    cache: dict[str, str | None] = {}
    system = ctx.fleet.cluster.system_nodes
    if ctx.fleet.cluster.mode == "Create" and system is not None:
        yield from _check(ctx, None, SYSTEM_NODES_AMI_TYPE, system.release_version, cache)
    for group in ctx.fleet.node_groups:
        yield from _check(ctx, group.name, group.ami_type, group.ami_release_version, cache)
