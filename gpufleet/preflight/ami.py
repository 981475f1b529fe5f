"""AMI check: each pinned AMI release (GPU node groups and the system nodes) is published, exactly as written.

AWS publishes every EKS-optimized AMI as public SSM parameters:
- AL2023: `/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<nvidia|standard>/recommended` holds the
  latest, with the sub-parameters `image_id`, `image_name` and `release_version` (awsdocs/amazon-eks-user-guide
  `latest/ug/nodes/retrieve-ami-id.adoc`; AWS Systems Manager user guide, "Calling the EKS optimized AMI public
  parameter": `{"image_id", "image_name": "amazon-eks-node-1.14-v20201007", "release_version": "1.14.9-20201007"}`).
  A specific release replaces `recommended` with its AMI name `amazon-eks-node-al2023-<arch>-<flavor>-<k8s>-v<date>`
  (the form aws/karpenter-provider-aws resolves, `pkg/providers/amifamily/al2023.go`: ".../1.30/amazon-linux-2023/
  x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240625/image_id"). The AMI name carries only the
  Kubernetes minor and the date, so the check reads that release's `release_version` and compares it with the
  full version pinned (`1.33.13-20260714`): a wrong patch version (`1.33.4-20260714`) names an existing AMI but a
  release EKS rejects. [I] `release_version` under a specific release, like under `recommended`, and the arm64
  form (`arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-...`) are taken by analogy.
- Bottlerocket: `/aws/service/bottlerocket/aws-k8s-<k8s>-nvidia/<arch>/latest/image_id`
  (`retrieve-ami-id-bottlerocket.adoc`); "if you know a specific Bottlerocket version ... you can replace
  `latest` with that version" (bottlerocket-os/bottlerocket `QUICKSTART-EKS.md`, example `1.0.6`).
  [I] EKS spells Bottlerocket releases `1.54.0-5043decc`; the parameter is looked up as written first, then
  by its `1.54.0` part. The parameter exists only when that Bottlerocket version ships the cluster minor's variant.
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
