"""Subnet checks: every subnet exists in the cluster's VPC, the cluster's span two zones EKS accepts, and a
group pinned to a zone launches only into subnets of that zone.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/network.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.preflight.clients import paginate
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec.fleet import Fabric

# Zone IDs EKS does not accept for cluster subnets (network-reqs.adoc, table "Disallowed Availability Zone IDs").
EKS_DISALLOWED_ZONES = frozenset({"use1-az3", "usw1-az2", "cac1-az3"})


def _subnet_findings(ctx: Context, subnet_id: str, group: str | None, field: str) -> Iterator[AccountFinding]:
    subnet = ctx.subnets().get(subnet_id)
    vpc = ctx.fleet.cluster.vpc_id
    if subnet is None:
        yield AccountFinding(
            severity="error",
            node_group=group,
            message=f"subnet {subnet_id} does not exist in {ctx.region}",
            hint=(
                f"create it, or fix {field}: aws ec2 describe-subnets --filters Name=vpc-id,Values={vpc} --region"
                f" {ctx.region}"
            ),
        )
    elif subnet.get("VpcId") != vpc:
        yield AccountFinding(
            severity="error",
            node_group=group,
            message=f"subnet {subnet_id} is in {subnet.get('VpcId')}, not in the cluster's VPC {vpc}",
            hint=f"use subnets of {vpc} in {field}, or fix cluster.network.vpcId",
        )


def check_subnets(ctx: Context) -> Iterator[AccountFinding]:
    cluster = ctx.fleet.cluster
    subnets = ctx.subnets()
    for subnet_id in cluster.subnet_ids:
        yield from _subnet_findings(ctx, subnet_id, None, "cluster.network.subnetIds")
    cluster_zones = {str(subnets[s]["AvailabilityZoneId"]): s for s in cluster.subnet_ids if s in subnets}
    for zone, subnet_id in sorted(cluster_zones.items()):
        if zone in EKS_DISALLOWED_ZONES:
            yield AccountFinding(
                severity="error",
                node_group=None,
                message=(
                    f"subnet {subnet_id} is in {ctx.zone_label(zone)}, a zone EKS does not accept for cluster subnets"
                ),
                hint="use subnets in other zones for cluster.network.subnetIds",
            )
    if len(cluster_zones) == 1:
        (only,) = cluster_zones
        yield AccountFinding(
            severity="error",
            node_group=None,
            message=f"the cluster's subnets are all in {ctx.zone_label(only)}; EKS needs subnets in at least two zones",
            hint="add a subnet in another zone to cluster.network.subnetIds",
        )
    seen = set(cluster.subnet_ids)
    for group in ctx.fleet.node_groups:
        for subnet_id in group.subnet_ids or ():
            if subnet_id not in seen:  # a cluster subnet is reported once, above
                yield from _subnet_findings(ctx, subnet_id, group.name, "nodeGroups[].subnetIds")
        if group.zone is None:
            continue
        for subnet_id in ctx.group_subnet_ids(group):
            subnet = subnets.get(subnet_id)
            subnet_zone = None if subnet is None else str(subnet["AvailabilityZoneId"])
            if subnet_zone is not None and subnet_zone != group.zone:
                yield AccountFinding(
                    severity="error",
                    node_group=group.name,
                    message=(
                        f"subnet {subnet_id} is in {ctx.zone_label(subnet_zone)}, not in the group's zone"
                        f" {ctx.zone_label(group.zone)}"
                    ),
                    hint=f"set nodeGroups[].subnetIds to subnets in {group.zone} only",
                )


def _allows_itself(permissions: Any, group_id: str) -> bool:
    """An IpPermissions list holds "all traffic" (protocol -1) to or from the group itself."""
    return any(
        p.get("IpProtocol") == "-1" and any(pair.get("GroupId") == group_id for pair in p.get("UserIdGroupPairs", ()))
        for p in permissions or ()
    )


def check_efa_security_group(ctx: Context) -> Iterator[AccountFinding]:
    """The EFA security group stage 1 creates (gpufleet.builders.node_groups.efa_security_group), once it exists:
    it still allows all traffic to and from itself, without which SRD between the nodes is dropped
    (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html).

    Why: docs/commands.md, "Design notes", network.check_efa_security_group."""
    fleet = ctx.fleet
    if not any(g.fabric is Fabric.EFA for g in fleet.node_groups):
        return
    name = f"{fleet.name}-efa"
    found = paginate(
        ctx.clients.ec2,
        "describe_security_groups",
        "SecurityGroups",
        Filters=[{"Name": "vpc-id", "Values": [fleet.cluster.vpc_id]}, {"Name": "tag:Name", "Values": [name]}],
    )
    for sg in found:
        group_id = str(sg["GroupId"])
        missing = [
            direction
            for direction, key in (("from", "IpPermissions"), ("to", "IpPermissionsEgress"))
            if not _allows_itself(sg.get(key), group_id)
        ]
        if missing:
            direction = "ingress" if "from" in missing else "egress"
            yield AccountFinding(
                severity="error",
                node_group=None,
                message=(
                    f"EFA security group {group_id} ({name}) does not allow all traffic {' or '.join(missing)} itself:"
                    " EFA's SRD traffic between the nodes is dropped"
                ),
                hint=(
                    "run `pulumi up` for stage 1 again to restore its rules (efa-self-ingress, efa-self-egress), or:"
                    f" aws ec2 authorize-security-group-{direction} --group-id {group_id} --ip-permissions"
                    f" IpProtocol=-1,UserIdGroupPairs=[{{GroupId={group_id}}}] --region {ctx.region}"
                ),
            )
