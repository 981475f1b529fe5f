"""Rules on a node group's shape: a known instance type (or a pool of alike ones), its size range, its taints and
its warm pool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpufleet.base.errors import Issue, did_you_mean
from gpufleet.facts import catalog
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup
from gpufleet.spec.provisioning import provisioning

# EKS allows 50 taints per managed node group (https://docs.aws.amazon.com/eks/latest/userguide/node-taints-managed-node-groups.html).
MAX_TAINTS = 50


# EC2 hibernation needs instance RAM under 150 GB (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/hibernating-prerequisites.html).
HIBERNATE_MAX_MEMORY_MIB = 150 * 1024


def gpu_taints_added(group: NodeGroup) -> int:
    """Taints gpufleet adds to every group: the GPU taint, plus the EFA taint on EFA groups."""
    return 2 if group.fabric is Fabric.EFA else 1


@rule("known-instance-type")
def _known_instance_type(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        if catalog.lookup(group.instance_type) is None:
            yield Issue(
                path=path + ("instanceType",),
                message=f'"{group.instance_type}" is not a GPU instance type gpufleet knows',
                hint=did_you_mean(group.instance_type, catalog.gpu_instance_names())
                or "see `gpufleet.facts.catalog` for the supported types",
            )


def _smaller(a: catalog.InstanceType, b: catalog.InstanceType, raid0: bool) -> bool:
    """Whether `a` offers less than `b` of something a pod of the pool is given (instance store: with RAID0)."""
    return a.vcpus < b.vcpus or a.memory_mib < b.memory_mib or (raid0 and a.local_nvme_gib < b.local_nvme_gib)


@rule("instance-types")
def _instance_types(fleet: Fleet) -> Iterator[Issue]:
    """instanceTypes (Karpenter's instance flexibility): one GPU model and one GPU count per pool, as the seed's
    "separate node groups per device type, always" asks, so a quota of G GPUs, maxSize nodes and the NodePool's GPU
    limit mean the same on whichever type Karpenter launches; on fabric EFA one list of EFA interfaces fits every
    type (the EC2NodeClass's networkInterfaces are the pool's); and instanceType, the shape the quotas, the model and
    the cost use, is the smallest, so a quota never promises CPU or memory a node of the pool lacks."""
    for path, group in each_group(fleet):
        if group.instance_types == (group.instance_type,):
            continue
        at = path + ("instanceTypes",)
        if provisioning(group).auto_scaling_group:
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    "instanceTypes is a Karpenter NodePool's; a managed node group here has one instance type (its"
                    " launch template, warm pool and the Cluster Autoscaler's scale-from-zero template have one shape)"
                ),
                hint="remove instanceTypes, or use provisioner Karpenter",
            )
            continue
        ref = catalog.lookup(group.instance_type)
        if group.instance_type not in group.instance_types:
            yield Issue(
                path=at,
                message=f"instanceTypes does not name instanceType {group.instance_type}, the pool's reference shape",
                hint=f"add {group.instance_type} to instanceTypes",
            )
        known: list[catalog.InstanceType] = []
        for j, name in enumerate(group.instance_types):
            info = catalog.lookup(name)
            if info is None:
                yield Issue(
                    path=at + (j,),
                    message=f'"{name}" is not a GPU instance type gpufleet knows',
                    hint=did_you_mean(name, catalog.gpu_instance_names())
                    or "see `gpufleet.facts.catalog` for the supported types",
                )
                continue
            if ref is None or name == group.instance_type:
                continue
            if (info.gfd_product, info.gpu_count) != (ref.gfd_product, ref.gpu_count):
                yield Issue(
                    path=at + (j,),
                    message=(
                        f"{name} has {info.gpu_count} {info.gfd_product} GPU(s) per node, instanceType"
                        f" {group.instance_type} {ref.gpu_count} {ref.gfd_product}: a pool holds one GPU model and"
                        " one GPU count per node (quotas count GPUs, maxSize nodes, both of one node shape)"
                    ),
                    hint=f"remove {name} from instanceTypes (another node group can have it)",
                )
                continue
            if group.fabric is Fabric.EFA and min(info.max_efa_interfaces, info.network_cards) != min(
                ref.max_efa_interfaces, ref.network_cards
            ):
                yield Issue(
                    path=at + (j,),
                    message=(
                        f"{name} has {min(info.max_efa_interfaces, info.network_cards)} EFA interfaces,"
                        f" {group.instance_type} {min(ref.max_efa_interfaces, ref.network_cards)}: the EC2NodeClass's"
                        " networkInterfaces are one list for every type of the pool"
                    ),
                    hint=f"remove {name} from instanceTypes (another node group can have it)",
                )
                continue
            known.append(info)
        if ref is None:
            continue
        raid0 = group.local_storage == "RAID0"
        below = [i for i in known if _smaller(i, ref, raid0)]
        if below:
            every = [ref, *known]
            fits = [i.name for i in every if not any(_smaller(o, i, raid0) for o in every)]
            yield Issue(
                path=path + ("instanceType",),
                message=(
                    f"instanceType {group.instance_type} is not the smallest of instanceTypes: {below[0].name} has"
                    " fewer vCPUs, less memory or less instance store; the quotas, the model and the cost estimate"
                    " use instanceType's shape, which every node of the pool must offer at least"
                ),
                hint=f"set instanceType to {fits[0]}"
                if fits
                else "list only types that are each at least as large as one of them",
            )


@rule("warm-pool")
def _warm_pool(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        pool = group.warm_pool
        if pool is None:
            continue
        if pool.min_size > group.max_size:
            yield Issue(
                path=path + ("warmPool", "minSize"),
                message=f"a warm pool of {pool.min_size} is larger than the group's maxSize {group.max_size}",
                hint=f"the pool only holds instances the group may run: set minSize to {group.max_size} or less",
            )
        if pool.max_prepared_capacity is not None and pool.max_prepared_capacity < pool.min_size:
            yield Issue(
                path=path + ("warmPool", "maxPreparedCapacity"),
                message=(
                    f"maxPreparedCapacity {pool.max_prepared_capacity} is less than the pool's minSize {pool.min_size}"
                ),
            )
        info = catalog.lookup(group.instance_type)
        if pool.state == "Hibernated" and info is not None and info.memory_mib > HIBERNATE_MAX_MEMORY_MIB:
            yield Issue(
                path=path + ("warmPool", "state"),
                message=(
                    f"{group.instance_type} has {info.memory_mib // 1024} GiB of RAM; EC2 hibernates only instances"
                    " with less than 150 GB"
                ),
                hint="use state: Stopped",
            )
        if group.ami_type.startswith("BOTTLEROCKET"):
            # "Not supported on Bottlerocket" (pinned pulumi-aws NodeGroupWarmPoolConfig.reuse_on_scale_in; EKS user
            # guide, warm pools for managed node groups: reuse on scale-in and Hibernated are not supported with
            # Bottlerocket AMIs).
            if pool.reuse_on_scale_in:
                yield Issue(
                    path=path + ("warmPool", "reuseOnScaleIn"),
                    message=f"EKS does not support reuseOnScaleIn with Bottlerocket AMIs ({group.ami_type})",
                    hint="remove reuseOnScaleIn (scaled-in instances are terminated), or use an AL2023 AMI",
                )
            if pool.state == "Hibernated":
                yield Issue(
                    path=path + ("warmPool", "state"),
                    message=(
                        f"EKS does not support the Hibernated warm-pool state with Bottlerocket AMIs ({group.ami_type})"
                    ),
                    hint="use state: Stopped",
                )
        if group.capacity_type is CapacityType.CAPACITY_BLOCK:
            yield Issue(
                path=path + ("warmPool",),
                at_key=True,
                message="a CapacityBlock group cannot have a warm pool: the reservation already holds the instances",
                hint="remove warmPool",
            )
        if group.capacity_type is CapacityType.SPOT:
            # PutWarmPool "cannot be called on an Auto Scaling group that ... requests Spot Instances"
            # (https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_PutWarmPool.html).
            yield Issue(
                path=path + ("warmPool",),
                at_key=True,
                message=(
                    "a Spot group cannot have a warm pool: EC2 Auto Scaling warm pools do not support Spot Instances"
                ),
                hint="remove warmPool, or use capacity type OnDemand",
            )


@rule("scaling")
def _scaling(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        if group.min_size > group.max_size:
            yield Issue(
                path=path + ("scaling", "minSize"),
                message=f"minSize {group.min_size} is larger than maxSize {group.max_size}",
                hint="lower minSize or raise maxSize",
            )
        if group.desired_size is not None and not group.min_size <= group.desired_size <= group.max_size:
            yield Issue(
                path=path + ("scaling", "desiredSize"),
                message=(
                    f"desiredSize {group.desired_size} is outside minSize..maxSize ({group.min_size}..{group.max_size})"
                ),
                hint="set it within the range, or leave it out (it defaults to minSize)",
            )
        if group.update.max_unavailable is not None and group.update.max_unavailable_percentage is not None:
            yield Issue(
                path=path + ("update", "maxUnavailablePercentage"),
                at_key=True,
                message="set maxUnavailable or maxUnavailablePercentage, not both (EKS takes one)",
                hint="remove one of them",
            )


@rule("taints")
def _taints(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        added = gpu_taints_added(group)
        total = len(group.taints) + added
        if total > MAX_TAINTS:
            yield Issue(
                path=path + ("taints",),
                at_key=True,
                message=(
                    f"{len(group.taints)} taints plus the {added} gpufleet adds is {total}; EKS allows at most"
                    f" {MAX_TAINTS} per node group"
                ),
                hint=f"remove at least {total - MAX_TAINTS} (labels carry information that need not repel pods)",
            )
        keys = Counter((t.key, t.effect) for t in group.taints)
        for j, taint in enumerate(group.taints):
            if taint.key == "nvidia.com/gpu":
                yield Issue(
                    path=path + ("taints", j, "key"),
                    message="the nvidia.com/gpu taint is added by gpufleet on every group",
                    hint="remove it from the spec",
                )
            elif keys[(taint.key, taint.effect)] > 1:
                yield Issue(
                    path=path + ("taints", j, "key"),
                    message=f'taint "{taint.key}:{taint.effect}" appears more than once',
                    hint="remove the repeated taint",
                )
                keys[(taint.key, taint.effect)] = 0
