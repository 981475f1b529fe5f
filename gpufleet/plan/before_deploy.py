"""plan.md's "Before you deploy": what must exist or be done by hand before `pulumi up` of this environment, derived
from its spec. Each item is a Markdown line; `gpufleet preflight` checks the account-side ones.

Why, with sources: docs/deploy.md, "Design notes", gpufleet/plan/before_deploy.py.
"""

from __future__ import annotations

from gpufleet.facts import stages
from gpufleet.facts.images import IMAGES, digest_commands
from gpufleet.plan.builders import provisioners
from gpufleet.plan.parts import RolloutPlan
from gpufleet.spec import images
from gpufleet.spec.fleet import CapacityType, Fabric


def _code(values: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{v}`" for v in values)


def before_you_deploy(plan: RolloutPlan) -> list[str]:
    """The checklist of one environment, in the order it is done."""
    fleet, env = plan.fleet, plan.environment
    cluster = fleet.cluster
    items = [
        f"AWS credentials for {cluster.region}, the `aws` CLI on the PATH (the Kubernetes provider runs `aws eks"
        " get-token`), and `gpufleet preflight --env " + env + "` passing (instance types, zones, subnets,"
        " reservations, quotas, AMI releases)."
    ]
    if cluster.mode == "Create":
        items.append(
            f"VPC `{cluster.vpc_id}` with subnets {_code(cluster.subnet_ids)} (EKS needs them in at least two"
            " Availability Zones); nodes in private subnets reach the AWS APIs through a NAT gateway or VPC endpoints"
            " (Auto Scaling, EC2, EKS, EKS Auth for the Cluster Autoscaler)."
        )
        items.append(
            "The role that runs `pulumi up` is one of `cluster.admins`"
            f" ({_code([a.principal_arn for a in cluster.admins])}): the cluster is created without an implicit admin."
        )
        pinned = fleet.versions.addons
        if pinned:
            listed = ", ".join(f"{name} `{version}`" for name, version in pinned.items())
            items.append(
                f"The pinned EKS add-on versions ({listed}) are offered for Kubernetes {cluster.kubernetes_version}"
                " (`aws eks describe-addon-versions`)."
            )
    else:
        items.append(
            f"The existing cluster `{cluster.name}` is reachable, and the role that runs `pulumi up` can create"
            " access entries and node groups in it."
        )
        if cluster.autoscaler == "Install":
            items.append(
                "The eks-pod-identity-agent add-on is installed in the existing cluster: the Cluster Autoscaler"
                " authenticates with EKS Pod Identity and scales nothing without it."
            )
    for provisioner in provisioners.used(fleet):
        items += provisioner.before_deploy(fleet)
    for group in fleet.node_groups:
        if group.fabric is Fabric.EFA or group.subnet_ids is not None:
            subnets = group.subnet_ids if group.subnet_ids is not None else cluster.subnet_ids
            zone = f" in zone `{group.zone}`" if group.zone else ""
            items.append(f"Node group `{group.name}`: subnet(s) {_code(subnets)}{zone} exist in the VPC.")
        if group.capacity_type is CapacityType.CAPACITY_BLOCK and group.reservation_id:
            items.append(
                f"Node group `{group.name}`: Capacity Block `{group.reservation_id}` is purchased for"
                f" {group.instance_type} in its zone and active when the group scales."
            )
        reservation = group.reservation
        if reservation is not None:
            which = (
                f"`{reservation.id}`"
                if reservation.id
                else f"the reservations of group `{reservation.resource_group_arn}`"
                if reservation.resource_group_arn
                else "open reservations"
            )
            items.append(
                f"Node group `{group.name}`: On-Demand Capacity Reservation {which} holds"
                f" {reservation.instance_count} x {group.instance_type} in the group's zone; it is billed whether the"
                " instances run or not."
            )
        if group.fabric is Fabric.RDMA and stages.included("network", plan.through):
            items.append(
                f"Node group `{group.name}` (RDMA): create the nv-ipam IPPools of its secondary network yourself;"
                " gpufleet does not render them (docs/network-and-storage.md)."
            )
    for key, tagged, entries in images.tag_only(fleet, lambda stage: stages.included(stage, plan.through)):
        components = ", ".join(dict.fromkeys(e.component for e in entries))
        items.append(
            f"The {IMAGES[key].title} image `{tagged}` ({components}) runs privileged and is pinned by tag only:"
            f" read the digest the tag resolves to now ({digest_commands(tagged)}), check it is the image you"
            f' expect, and pin it: `images.{key}: "{tagged}@sha256:<digest>"` (docs/tenancy-and-access.md,'
            ' "Privileged images").'
        )
    if stages.included("storage", plan.through):
        items += _linked_buckets(plan)
    if cluster.autoscaler == "None":
        items.append(
            "Something scales the node groups: with `cluster.autoscaler: None` gpufleet installs no autoscaler (bring"
            " Karpenter or your own), and the gates of the network and health stages wait for nodes."
        )
    return items


def _linked_buckets(plan: RolloutPlan) -> list[str]:
    """The S3 buckets the storage stage links to a file system or mounts: the checkpoint bucket gpufleet creates in
    that stage (S3 bucket names are global, so its name must be free), and each FSx data repository's own bucket,
    which gpufleet does not create."""
    fleet = plan.fleet
    cp = fleet.checkpoints
    items = []
    links = []
    if cp is not None and cp.mountpoint is not None:
        links.append("Mountpoint mounts each team's prefix of it")
    fsx = fleet.fsx_lustre
    own = [r for r in fsx.data_repositories if r.bucket is None] if fsx is not None else []
    if own:
        links.append("FSx for Lustre links " + ", ".join(f"`{r.prefix or '/'}` at `{r.file_system_path}`" for r in own))
    if cp is not None and links:
        items.append(
            f"S3 bucket `{cp.bucket}` (checkpoints.bucket) is created by the storage stage: the name must not be taken"
            f" in any account (S3 bucket names are global); {'; '.join(links)}."
        )
    for repository in fsx.data_repositories if fsx is not None else ():
        if repository.bucket is not None:
            items.append(
                f"S3 bucket `{repository.bucket}` exists in the account: FSx for Lustre links"
                f" `s3://{repository.bucket}/{repository.prefix}` at `{repository.file_system_path}`, and gpufleet"
                " does not create it."
            )
    return items
