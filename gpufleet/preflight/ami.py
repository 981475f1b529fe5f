"""AMI check: the pinned EKS-optimized NVIDIA AMI release exists for the cluster's Kubernetes version.

AWS publishes every release as a public SSM parameter whose `image_id` is the AMI:
- AL2023: `/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/nvidia/recommended/image_id` is the
  latest (awsdocs/amazon-eks-user-guide `latest/ug/nodes/retrieve-ami-id.adoc`); a specific release replaces
  `recommended` with `amazon-eks-node-al2023-<arch>-nvidia-<k8s>-v<YYYYMMDD>` (the form aws/karpenter-provider-aws
  resolves, `pkg/providers/amifamily/al2023.go`: ".../1.30/amazon-linux-2023/x86_64/nvidia/
  amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240625/image_id"). EKS release `1.33.4-20260724` -> `v20260724`.
  [I] The arm64 form is taken by analogy (`arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-...`).
- Bottlerocket: `/aws/service/bottlerocket/aws-k8s-<k8s>-nvidia/<arch>/latest/image_id`
  (`retrieve-ami-id-bottlerocket.adoc`); "if you know a specific Bottlerocket version ... you can replace
  `latest` with that version" (bottlerocket-os/bottlerocket `QUICKSTART-EKS.md`, example `1.0.6`).
  [I] EKS spells Bottlerocket releases `1.54.0-5043decc`; the parameter is looked up as written first, then
  by its `1.54.0` part.
"""

from __future__ import annotations

import re
from typing import Iterator

from gpufleet.preflight.clients import ApiError, call
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import Finding
from gpufleet.spec import NodeGroup

_AL2023_RELEASE = re.compile(r"^(?P<k8s>\d+\.\d+)\.\d+-(?P<date>\d{8})$")
_BOTTLEROCKET_RELEASE = re.compile(r"^(?P<version>\d+\.\d+\.\d+)(-[0-9a-f]{8})?$")


def _arch(ami_type: str) -> str:
    return "arm64" if "_ARM_64_" in ami_type else "x86_64"


def parameter_prefix(ami_type: str, k8s: str) -> str:
    """The SSM path under which every release of this AMI type is published."""
    arch = _arch(ami_type)
    if ami_type.startswith("BOTTLEROCKET"):
        return f"/aws/service/bottlerocket/aws-k8s-{k8s}-nvidia/{arch}"
    return f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/nvidia"


def parameter_names(group: NodeGroup, k8s: str) -> tuple[str, ...]:
    """The SSM parameters that hold the group's pinned AMI, in lookup order; () when the release is malformed."""
    prefix = parameter_prefix(group.ami_type, k8s)
    release = group.ami_release_version
    if group.ami_type.startswith("BOTTLEROCKET"):
        match = _BOTTLEROCKET_RELEASE.match(release)
        if match is None:
            return ()
        versions = dict.fromkeys([release, match["version"]])
        return tuple(f"{prefix}/{v}/image_id" for v in versions)
    match = _AL2023_RELEASE.match(release)
    if match is None:
        return ()
    return (f"{prefix}/amazon-eks-node-al2023-{_arch(group.ami_type)}-nvidia-{k8s}-v{match['date']}/image_id",)


def _exists(ctx: Context, name: str, cache: dict[str, bool]) -> bool:
    if name not in cache:
        try:
            call(ctx.clients.ssm, "get_parameter", Name=name)
            cache[name] = True
        except ApiError as exc:
            if exc.code != "ParameterNotFound":
                raise
            cache[name] = False
    return cache[name]


def check_ami(ctx: Context) -> Iterator[Finding]:
    k8s = ctx.fleet.cluster.kubernetes_version
    cache: dict[str, bool] = {}
    for group in ctx.fleet.node_groups:
        prefix = parameter_prefix(group.ami_type, k8s)
        listing = f"aws ssm get-parameters-by-path --path {prefix} --recursive --region {ctx.region} --query 'Parameters[].Name'"
        names = parameter_names(group, k8s)
        if not names:
            form = "1.54.0-5043decc" if group.ami_type.startswith("BOTTLEROCKET") else f"{k8s}.<patch>-<YYYYMMDD>"
            yield Finding(True, group.name, f"ami.releaseVersion {group.ami_release_version} is not a {group.ami_type} release (like {form})", f"pin a published release: {listing}")
            continue
        if not any(_exists(ctx, name, cache) for name in names):
            yield Finding(
                True,
                group.name,
                f"AMI release {group.ami_release_version} ({group.ami_type}) does not exist for Kubernetes {k8s} in {ctx.region}: no SSM parameter {names[0]}",
                f"pin a published release: {listing}",
            )
