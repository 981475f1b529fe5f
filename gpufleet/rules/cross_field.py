"""Cross-field rules: `(fleet) -> Iterable[Issue]`, registered by name, all run, every issue reported.

The schema checks each field alone; these check what fields mean together. Rules never call AWS (that is
`gpufleet preflight`), so they run offline and fast.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from gpufleet.base.errors import Issue, Path, closest, did_you_mean
from gpufleet.facts import addons, ami_releases, catalog, fsx, stages
from gpufleet.facts.ami_releases import SYSTEM_NODES_AMI_TYPE
from gpufleet.facts.images import IMAGES, PrivilegedContainer, digest_commands
from gpufleet.facts.versions import (
    COMPONENTS,
    GPU_OPERATOR,
    NODE_MONITORING_AGENT_XIDS,
    default_release,
    image_has_digest,
    image_is_pinned,
    is_pinned,
    node_monitoring_agent_release,
)
from gpufleet.facts.versions import KUBERNETES_VERSIONS as KUBERNETES_SUPPORTED
from gpufleet.rules import helm_values
from gpufleet.spec import access, cold_start, defaults, images, names
from gpufleet.spec import fsx as fsx_names
from gpufleet.spec.fleet import (
    CapacityType,
    Fabric,
    Fleet,
    NodeGroup,
    Principal,
    SharingStrategy,
    WorkloadClass,
    falls_back,
)
from gpufleet.spec.names import DEFAULT_DEVICE_PLUGIN_CONFIG, HEADROOM_PRIORITY, MIG_DISABLED, RESERVED_NAMESPACES

Rule = Callable[[Fleet], Iterable[Issue]]
RULES: dict[str, Rule] = {}

# EKS allows 50 taints per managed node group (https://docs.aws.amazon.com/eks/latest/userguide/node-taints-managed-node-groups.html).
MAX_TAINTS = 50
# EC2 hibernation needs instance RAM under 150 GB (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/hibernating-prerequisites.html).
HIBERNATE_MAX_MEMORY_MIB = 150 * 1024


def rule(name: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn

    return register


def check(fleet: Fleet, skip: Iterable[str] = ()) -> list[Issue]:
    skipped = set(skip)
    return [issue for name, fn in RULES.items() if name not in skipped for issue in fn(fleet)]


def _groups(fleet: Fleet) -> Iterator[tuple[Path, NodeGroup]]:
    for i, group in enumerate(fleet.node_groups):
        yield ("nodeGroups", i), group


def gpu_taints_added(group: NodeGroup) -> int:
    """Taints gpufleet adds to every group: the GPU taint, plus the EFA taint on EFA groups."""
    return 2 if group.fabric is Fabric.EFA else 1


def stage_used(fleet: Fleet, stage: stages.StageName) -> bool:
    """Whether any environment's rollout includes `stage`."""
    return any(stages.included(stage, env.through) for env in fleet.environments)


@rule("duplicate-names")
def _duplicate_names(fleet: Fleet) -> Iterator[Issue]:
    lists: list[tuple[str, list[str]]] = [
        ("nodeGroups", [g.name for g in fleet.node_groups]),
        ("teams", [t.name for t in fleet.teams]),
        ("imageSets", [s.name for s in fleet.image_sets]),
    ]
    for section, section_names in lists:
        seen: set[str] = set()
        for i, name in enumerate(section_names):
            if name in seen:
                yield Issue(
                    path=(section, i, "name"),
                    message=f'duplicate name "{name}" in {section}',
                    hint="names identify resources; make each one unique",
                )
            seen.add(name)
    seen_ns: dict[str, str] = {}
    for i, team in enumerate(fleet.teams):
        if team.namespace in seen_ns and seen_ns[team.namespace] != team.name:
            yield Issue(
                path=("teams", i, "namespace"),
                message=f'namespace "{team.namespace}" is already used by team "{seen_ns[team.namespace]}"',
                hint="each team gets its own namespace; its ClusterQueue admits only that one",
            )
        seen_ns.setdefault(team.namespace, team.name)
        counts = Counter(q.node_group for q in team.quotas)
        for j, quota in enumerate(team.quotas):
            if counts[quota.node_group] > 1 and [q.node_group for q in team.quotas].index(quota.node_group) != j:
                yield Issue(
                    path=("teams", i, "quotas", j, "nodeGroup"),
                    message=f'a second quota on node group "{quota.node_group}"',
                    hint="merge the quotas into one entry",
                )
    seen_p: set[str] = set()
    for i, prio in enumerate(fleet.admission.priorities):
        if prio.name in seen_p:
            yield Issue(path=("admission", "priorities", i, "name"), message=f'duplicate priority class "{prio.name}"')
        seen_p.add(prio.name)


@rule("known-instance-type")
def _known_instance_type(fleet: Fleet) -> Iterator[Issue]:
    for path, group in _groups(fleet):
        if catalog.lookup(group.instance_type) is None:
            yield Issue(
                path=path + ("instanceType",),
                message=f'"{group.instance_type}" is not a GPU instance type gpufleet knows',
                hint=did_you_mean(group.instance_type, catalog.gpu_instance_names())
                or "see `gpufleet.facts.catalog` for the supported types",
            )


@rule("data-volume-snapshot")
def _data_volume_snapshot(fleet: Fleet) -> Iterator[Issue]:
    """dataVolumeSnapshotId: Bottlerocket's boot-time image cache, its data volume created from a snapshot that holds
    the images (aws-samples/bottlerocket-images-cache). Not on AL2023, which pulls at boot from its user data; not
    with RAID0, where Bottlerocket's `ephemeral-storage bind` rbind-mounts the array over /var/lib/containerd without
    copying what is there (bottlerocket-os/bottlerocket-core-kit sources/api/apiserver/src/server/ephemeral_storage.rs
    bind: `mount --rbind /mnt/.ephemeral/._var_lib_containerd /var/lib/containerd`), so the snapshot's images would
    be hidden."""
    for path, group in _groups(fleet):
        if group.data_volume_snapshot_id is None:
            continue
        at = path + ("dataVolumeSnapshotId",)
        if not ami_releases.is_bottlerocket(group.ami_type):
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    f"dataVolumeSnapshotId is a Bottlerocket data volume's; {group.ami_type} keeps its images on the"
                    " root volume and pulls the group's images at boot from its user data"
                ),
                hint="remove dataVolumeSnapshotId",
            )
        elif group.local_storage == "RAID0":
            yield Issue(
                path=at,
                at_key=True,
                message=(
                    "with localStorage RAID0 Bottlerocket bind-mounts the instance-store array over /var/lib/containerd"
                    " (apiclient ephemeral-storage bind), hiding the images the snapshot put on the data volume"
                ),
                hint="remove dataVolumeSnapshotId, or set localStorage: None",
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
    for path, group in _groups(fleet):
        if group.instance_types == (group.instance_type,):
            continue
        at = path + ("instanceTypes",)
        if group.provisioner != "Karpenter":
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


@rule("references")
def _references(fleet: Fleet) -> Iterator[Issue]:
    groups = [g.name for g in fleet.node_groups]
    sets = [s.name for s in fleet.image_sets]
    for path, group in _groups(fleet):
        for j, name in enumerate(group.images):
            if name not in sets:
                yield Issue(
                    path=path + ("images", j),
                    message=f'unknown image set "{name}"',
                    hint=did_you_mean(name, sets) or "define it under imageSets",
                )
    for i, team in enumerate(fleet.teams):
        for j, quota in enumerate(team.quotas):
            if quota.node_group not in groups:
                yield Issue(
                    path=("teams", i, "quotas", j, "nodeGroup"),
                    message=f'unknown node group "{quota.node_group}"',
                    hint=did_you_mean(quota.node_group, groups),
                )
        priorities = [p.name for p in fleet.admission.priorities]
        for j, name in enumerate(team.priorities or ()):
            if name not in priorities:
                yield Issue(
                    path=("teams", i, "priorities", j),
                    message=f'unknown priority class "{name}"',
                    hint=did_you_mean(name, priorities) or f"one of admission.priorities: {', '.join(priorities)}",
                )
    for name in fleet.gpu_hour_usd:
        if name not in groups:
            yield Issue(
                path=("cost", "gpuHourUsd", name),
                at_key=True,
                message=f'price for unknown node group "{name}"',
                hint=did_you_mean(name, groups),
            )


@rule("quota-fits-node-group")
def _quota_fits(fleet: Fleet) -> Iterator[Issue]:
    by_name: dict[str, NodeGroup] = {}
    for g in fleet.node_groups:
        by_name.setdefault(g.name, g)  # a second group of the same name is reported by duplicate-names
    for i, team in enumerate(fleet.teams):
        for j, quota in enumerate(team.quotas):
            if quota.lending_limit is not None and quota.lending_limit > quota.gpus:
                yield Issue(
                    path=("teams", i, "quotas", j, "lendingLimit"),
                    message=f"lendingLimit {quota.lending_limit} is more than the nominal quota of {quota.gpus} GPUs",
                    hint=f"a team can lend at most what it owns: set lendingLimit to {quota.gpus} or less",
                )
            group = by_name.get(quota.node_group)
            info = catalog.lookup(group.instance_type) if group else None
            if group is None or info is None:
                continue
            capacity = group.max_size * info.gpu_count
            if quota.gpus > capacity:
                yield Issue(
                    path=("teams", i, "quotas", j, "gpus"),
                    message=(
                        f'{quota.gpus} GPUs is more than node group "{group.name}" can ever hold (maxSize'
                        f" {group.max_size} x {info.gpu_count} GPU(s) per {group.instance_type} = {capacity})"
                    ),
                    hint=f"lower the quota to at most {capacity}, or raise the group's maxSize",
                )


@rule("limits-need-cohort")
def _limits_need_cohort(fleet: Fleet) -> Iterator[Issue]:
    # Kueue: borrowingLimit and lendingLimit must be null when the ClusterQueue has no cohort.
    for i, team in enumerate(fleet.teams):
        if team.cohort is not None:
            continue
        for j, quota in enumerate(team.quotas):
            for field, limit in (("borrowingLimit", quota.borrowing_limit), ("lendingLimit", quota.lending_limit)):
                if limit is not None:
                    yield Issue(
                        path=("teams", i, "quotas", j, field),
                        at_key=True,
                        message=f'{field} needs a cohort, but team "{team.name}" has none',
                        hint=(
                            "set teams[].cohort, or remove the limit (without a cohort there is nothing to borrow from"
                            " or lend to)"
                        ),
                    )


def _mig_layout(group: NodeGroup, spath: Path, info: catalog.InstanceType | None) -> Iterator[Issue]:
    """A Mixed group: profiles in `layout` only, each a profile of the GPU, covering exactly the node's GPUs."""
    sharing = group.sharing
    if sharing.profile is not None:
        yield Issue(
            path=spath + ("profile",),
            at_key=True,
            message="with migStrategy Mixed the profiles are given per GPU in layout, not in profile",
            hint=f"use layout: [{{gpus: {info.gpu_count if info else 'N'}, profile: {sharing.profile}}}]",
        )
    if not sharing.layout:
        yield Issue(
            path=spath + ("migStrategy",),
            message="migStrategy Mixed needs a layout: the profile of each of the node's GPUs",
            hint="add layout: [{gpus: 4, profile: <profile>}, {gpus: 4, profile: <profile>}]",
        )
        return
    if group.ami_type.startswith("BOTTLEROCKET"):
        yield Issue(
            path=spath + ("migStrategy",),
            message=(
                f"Bottlerocket partitions MIG from its own settings, one profile per board ({group.ami_type});"
                " migStrategy Mixed needs the GPU Operator's MIG manager"
            ),
            hint="use an AL2023 NVIDIA AMI, or migStrategy Single with one profile",
        )
    if info is None:
        return
    for k, item in enumerate(sharing.layout):
        if item.profile not in info.mig_profiles:
            yield Issue(
                path=spath + ("layout", k, "profile"),
                message=(
                    f'"{item.profile}" is not a MIG profile of the {info.gpu_model} in {group.instance_type} (profiles:'
                    f" {', '.join(info.mig_profiles)})"
                ),
                hint=did_you_mean(item.profile, info.mig_profiles),
            )
    covered = sum(item.gpus for item in sharing.layout)
    if covered != info.gpu_count:
        yield Issue(
            path=spath + ("layout",),
            message=f"layout covers {covered} GPUs, but {group.instance_type} has {info.gpu_count}",
            hint=f"make the gpus of the layout add up to {info.gpu_count}",
        )


@rule("sharing")
def _sharing(fleet: Fleet) -> Iterator[Issue]:
    operator_mig = [
        (path, group)
        for path, group in _groups(fleet)
        if group.sharing.strategy is SharingStrategy.MIG and not group.ami_type.startswith("BOTTLEROCKET")
    ]
    if len({group.sharing.mig_strategy for _, group in operator_mig}) > 1:
        mixed = next(group.name for _, group in operator_mig if group.sharing.mig_strategy == "Mixed")
        for path, group in operator_mig:
            if group.sharing.mig_strategy == "Single":
                yield Issue(
                    path=path + ("sharing", "strategy"),
                    message=(
                        "the GPU Operator applies one MIG strategy to the whole cluster (ClusterPolicy mig.strategy),"
                        f' and node group "{mixed}" uses Mixed: this group\'s slices would be advertised as'
                        f" nvidia.com/mig-{group.sharing.profile}, not nvidia.com/gpu"
                    ),
                    hint=(
                        f"set migStrategy: Mixed with layout: [{{gpus: <all GPUs>, profile: {group.sharing.profile}}}]"
                        f" here too (its pods then request nvidia.com/mig-{group.sharing.profile}), or use Single"
                        " everywhere"
                    ),
                )
    # The operator passes ClusterPolicy mig.strategy to every device-plugin pod as MIG_STRATEGY, which overrides the
    # plugin's config file, and the plugin exits on MPS under mixed (NVIDIA/k8s-device-plugin v0.20.0
    # cmd/nvidia-device-plugin/main.go validateFlags: "using --mig-strategy=mixed is not supported with MPS"): one
    # Mixed group crash-loops the plugin of every MPS group. Bottlerocket groups run Bottlerocket's own plugin.
    mixed_groups = [group.name for _, group in operator_mig if group.sharing.mig_strategy == "Mixed"]
    if mixed_groups:
        for path, group in _groups(fleet):
            if group.sharing.strategy is SharingStrategy.MPS and not group.ami_type.startswith("BOTTLEROCKET"):
                yield Issue(
                    path=path + ("sharing", "strategy"),
                    message=(
                        'the device plugin refuses MPS under MIG strategy mixed ("using --mig-strategy=mixed is not'
                        " supported with MPS\"), and the GPU Operator sets the cluster's one strategy on every device"
                        f' plugin: node group "{mixed_groups[0]}" uses migStrategy Mixed'
                    ),
                    hint=(
                        "use TimeSlicing on this group, or migStrategy Single on the MIG groups (one profile per"
                        " group), or put the MPS and the Mixed groups in different clusters"
                    ),
                )
    for path, group in _groups(fleet):
        sharing = group.sharing
        spath = path + ("sharing",)
        info = catalog.lookup(group.instance_type)
        strategy = sharing.strategy
        if strategy is SharingStrategy.MPS and sharing.profile is not None:
            yield Issue(
                path=spath + ("profile",),
                at_key=True,
                message=(
                    "MPS cannot be combined with MIG: the device plugin does not support MPS on MIG-enabled devices"
                ),
                hint=(
                    "choose strategy MIG (hardware partitions) or MPS on whole GPUs"
                    if info is None or info.mig_capable
                    else f"remove profile: MPS shares whole GPUs (the {info.gpu_model} has no MIG)"
                ),
            )
            continue
        if strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) and sharing.replicas is None:
            yield Issue(
                path=spath + ("replicas",),
                message=f"strategy {strategy} needs replicas (pods per GPU)",
                hint="add replicas: 2 to 48",
            )
        if strategy not in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) and sharing.replicas is not None:
            yield Issue(
                path=spath + ("replicas",),
                at_key=True,
                message=f"replicas is only used with TimeSlicing or MPS, not {strategy}",
                hint="remove replicas",
            )
        if strategy is not SharingStrategy.MIG and sharing.profile is not None:
            yield Issue(
                path=spath + ("profile",),
                at_key=True,
                message=f"profile is only used with MIG, not {strategy}",
                hint=f"remove profile{_or_mig(info)}",
            )
        if strategy is not SharingStrategy.MIG and (sharing.mig_strategy != "Single" or sharing.layout):
            field = "layout" if sharing.layout else "migStrategy"
            yield Issue(
                path=spath + (field,),
                at_key=True,
                message=f"{field} is only used with MIG, not {strategy}",
                hint=f"remove {field}{_or_mig(info)}",
            )
        if strategy is SharingStrategy.MIG:
            if info is not None and not info.mig_capable:
                yield Issue(
                    path=spath + ("strategy",),
                    message=f"{info.gpu_model} GPUs in {group.instance_type} cannot do MIG",
                    hint=f"MIG needs {_mig_gpus()} GPUs; use MPS or TimeSlicing on this group",
                )
            elif sharing.mig_strategy == "Mixed":
                yield from _mig_layout(group, spath, info)
            elif sharing.layout:
                yield Issue(
                    path=spath + ("layout",),
                    at_key=True,
                    message=(
                        "layout needs migStrategy Mixed: under Single every slice is nvidia.com/gpu, so a node holds"
                        " one profile"
                    ),
                    hint="set migStrategy: Mixed, or replace layout with one profile",
                )
            elif sharing.profile is None:
                yield Issue(
                    path=spath + ("profile",),
                    message="strategy MIG needs a profile",
                    hint=(
                        f"profiles of the {info.gpu_model} in {group.instance_type}: {', '.join(info.mig_profiles)}"
                        if info and info.mig_profiles
                        else ""
                    ),
                )
            elif info is not None and sharing.profile not in info.mig_profiles:
                yield Issue(
                    path=spath + ("profile",),
                    message=(
                        f'"{sharing.profile}" is not a MIG profile of the {info.gpu_model} in {group.instance_type}'
                        f" (profiles: {', '.join(info.mig_profiles)})"
                    ),
                    hint=did_you_mean(sharing.profile, info.mig_profiles),
                )
        if (
            strategy is SharingStrategy.TIME_SLICING
            and group.workload_class in (WorkloadClass.TRAINING, WorkloadClass.INFERENCE)
            and not sharing.acknowledge_no_isolation
        ):
            yield Issue(
                path=spath + ("strategy",),
                message=(
                    f"time-slicing on a workloadClass {group.workload_class} group: pods share a GPU with no memory"
                    " bound and no fault isolation"
                ),
                hint=(
                    "time-slicing is for notebooks, CI and bursty low-stakes work;"
                    f" use {_isolating_strategies(info)}, or set sharing.acknowledgeNoIsolation: true"
                ),
            )


def _or_mig(info: catalog.InstanceType | None) -> str:
    """The second way out of a MIG field on a group that does not use MIG: MIG itself, where the GPU has it."""
    return ", or set strategy: MIG" if info is None or info.mig_capable else f" (the {info.gpu_model} has no MIG)"


def _isolating_strategies(info: catalog.InstanceType | None) -> str:
    """What to share a GPU with instead of time-slicing, on this device only: MIG where the GPU has MIG profiles
    (an L40S, L4 or A10G has none, so suggesting MIG there sends the user into another error)."""
    if info is None or info.mig_capable:
        return "MIG or MPS"
    return f"MPS (the {info.gpu_model} has no MIG)"


def _mig_gpus() -> str:
    """The MIG-capable GPU models of the catalog, with their instance families: "A100 (p4d, p4de), H100 (p5)"."""
    families: dict[str, list[str]] = {}
    for info in catalog.CATALOG.values():
        if info.mig_capable and info.family not in families.setdefault(info.gpu_model, []):
            families[info.gpu_model].append(info.family)
    return ", ".join(f"{model} ({', '.join(fams)})" for model, fams in sorted(families.items()))


@rule("efa")
def _efa(fleet: Fleet) -> Iterator[Issue]:
    for path, group in _groups(fleet):
        if group.fabric is not Fabric.EFA:
            if group.efa_taint == "Disabled":
                yield Issue(
                    path=path + ("efaTaint",),
                    at_key=True,
                    message=(
                        f"efaTaint Disabled has no effect on fabric {group.fabric}: only fabric EFA groups carry the"
                        " EFA taint"
                    ),
                    hint="remove efaTaint",
                )
            if group.placement_group is not None:
                yield Issue(
                    path=path + ("placementGroup",),
                    at_key=True,
                    message=f"placementGroup has no effect on fabric {group.fabric}: only fabric EFA groups launch"
                    " into a placement group",
                    hint="remove placementGroup",
                )
            continue
        if group.placement_group is not None and group.capacity_type is CapacityType.CAPACITY_BLOCK:
            yield Issue(
                path=path + ("placementGroup",),
                at_key=True,
                message="a Capacity Block's instances are placed by EC2 (co-located in the block's UltraCluster), so"
                " it launches into no placement group",
                hint="remove placementGroup",
            )
        info = catalog.lookup(group.instance_type)
        if info is not None and not info.efa_supported:
            yield Issue(
                path=path + ("fabric",),
                message=f"{group.instance_type} has no EFA",
                hint="use fabric None, or an EFA instance type (p4d, p5, p5e, p5en, p6, g6e.8xlarge and larger...)",
            )
        if group.zone is None:
            yield Issue(
                path=path + ("zone",),
                message="an EFA group must be pinned to one zone (EFA traffic does not cross availability zones)",
                hint="set zone to the zone ID of the group's subnet, e.g. zone: use1-az4",
            )
        subnets = group.subnet_ids if group.subnet_ids is not None else fleet.cluster.subnet_ids
        if len(subnets) != 1:
            inherited = "" if group.subnet_ids is not None else " (cluster.network.subnetIds)"
            yield Issue(
                path=path + ("subnetIds",),
                message=f"an EFA group must use exactly one subnet, in its zone; it uses {len(subnets)}{inherited}",
                hint="set subnetIds to the one subnet in the group's zone",
            )


@rule("warm-pool")
def _warm_pool(fleet: Fleet) -> Iterator[Issue]:
    for path, group in _groups(fleet):
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
    for path, group in _groups(fleet):
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


@rule("capacity")
def _capacity(fleet: Fleet) -> Iterator[Issue]:
    for path, group in _groups(fleet):
        if group.capacity_type is CapacityType.CAPACITY_BLOCK and group.reservation_id is None:
            yield Issue(
                path=path + ("capacity", "type"),
                message=(
                    "CapacityBlock needs reservationId: the capacity reservation (cr-...) of the purchased Capacity"
                    " Block"
                ),
                hint="add capacity.reservationId, e.g. reservationId: cr-0123456789abcdef0",
            )
        if group.capacity_type is CapacityType.ON_DEMAND and group.reservation_id is not None:
            # The Capacity Block field on an OnDemand group: it is an ODCR (preflight tells a Capacity Block
            # apart by its ReservationType when the guess is wrong).
            yield Issue(
                path=path + ("capacity", "reservationId"),
                at_key=True,
                message=(
                    "reservationId names a Capacity Block (type CapacityBlock); an On-Demand Capacity Reservation"
                    " (ODCR) is capacity.reservation"
                ),
                hint=(
                    f"replace reservationId with reservation: {{id: {group.reservation_id}, instanceCount: <instances"
                    " reserved>}"
                ),
            )
        elif group.capacity_type is CapacityType.SPOT and group.reservation_id is not None:
            yield Issue(
                path=path + ("capacity", "reservationId"),
                at_key=True,
                message=(
                    "reservationId is only used with capacity type CapacityBlock; Spot Instances do not launch into"
                    " capacity reservations"
                ),
                hint="remove reservationId",
            )
        if group.reservation is not None:
            yield from _reservation(fleet, path + ("capacity", "reservation"), group)


def _reservation(fleet: Fleet, path: Path, group: NodeGroup) -> Iterator[Issue]:
    r = group.reservation
    assert r is not None
    if group.capacity_type is not CapacityType.ON_DEMAND:
        yield Issue(
            path=path,
            at_key=True,
            message=(
                "reservation is an On-Demand Capacity Reservation (ODCR): it is used only with capacity type OnDemand,"
                f" not {group.capacity_type}"
            ),
            hint="remove reservation",
        )
        return
    karpenter = group.provisioner == "Karpenter"
    targets = [
        key
        for key, set_ in (
            ("id", r.id is not None),
            ("resourceGroupArn", r.resource_group_arn is not None),
            ("open", r.open),
            # tags are Karpenter's alone (rule karpenter refuses them on a managed node group)
            ("tags", r.tags is not None and karpenter),
        )
        if set_
    ]
    if len(targets) != 1:
        said = " and ".join(targets) if targets else "none of them"
        if karpenter:
            # rule karpenter refuses resourceGroupArn and open on a Karpenter group at their own fields
            if not (r.id is not None and r.tags is not None):
                return
            yield Issue(
                path=path,
                at_key=True,
                message=f"reservation names exactly one of id or tags; it names {said}",
                hint="keep one: id (one reservation) or tags (every reservation with those tags)",
            )
            return
        yield Issue(
            path=path,
            at_key=True,
            message=f"reservation names exactly one of id, resourceGroupArn or open; it names {said}",
            hint="keep one: id (one reservation), resourceGroupArn (a Capacity Reservation group) or open: true",
        )
        return
    if (r.id is not None or r.tags is not None) and group.max_size > r.instance_count and not falls_back(group):
        # "Specify Capacity Reservation: ... If the selected Capacity Reservation does not have sufficient capacity
        # for the number of instances you selected, the instance launch fails" (EC2 User Guide,
        # capacity-reservations-launch.html); a group target falls back to On-Demand instead, and so does a Karpenter
        # pool whose capacity.fallback goes on past Reserved.
        yield Issue(
            path=path + ("instanceCount",),
            message=(
                f"maxSize {group.max_size} is more than the {r.instance_count} instance(s) reserved: launches into a"
                " full targeted reservation fail"
            ),
            hint=f"lower scaling.maxSize to {r.instance_count}",
        )
    if r.resource_group_arn is not None and r.resource_group_arn.split(":")[3] != fleet.cluster.region:
        yield Issue(
            path=path + ("resourceGroupArn",),
            message=(
                f"the Capacity Reservation group is in {r.resource_group_arn.split(':')[3]}, the cluster in"
                f" {fleet.cluster.region}: a launch template targets a group of its own region"
            ),
            hint="use the ARN of a Capacity Reservation group in the cluster's region",
        )
    usable = min(r.instance_count, group.max_size)
    # A Karpenter pool keeps no minimum (rule karpenter): the advice to raise minSize is a managed node group's.
    if group.min_size < usable and group.provisioner != "Karpenter":
        yield Issue(
            path=path + ("instanceCount",),
            severity="warning",
            message=(
                f"{r.instance_count} reserved instance(s) are billed around the clock whether they run or not; minSize"
                f" {group.min_size} keeps {group.min_size} of them running"
            ),
            hint=f"set scaling.minSize to {usable}: running reserved instances costs nothing more",
        )


# Karpenter's own order of capacity types within one NodePool: "Prioritization is as follows: reserved, spot,
# on-demand" (aws/karpenter-provider-aws pkg/providers/instance/instance.go getCapacityType @ v1.14.1); the NodePool
# requirement karpenter.sh/capacity-type is a set, so no list order can change it.
KARPENTER_CAPACITY_ORDER = ("Reserved", "Spot", "OnDemand")


def _fallback(path: Path, group: NodeGroup) -> Iterator[Issue]:
    """capacity.fallback (Karpenter): written in Karpenter's order, beside capacity.type OnDemand, with Reserved
    exactly when a reservation is named."""
    fallback = group.capacity_fallback
    at = path + ("capacity", "fallback")
    if group.provisioner != "Karpenter":
        yield Issue(
            path=at,
            at_key=True,
            message=(
                "fallback is a Karpenter NodePool's list of capacity types; a managed node group launches one capacity"
                " type"
            ),
            hint="remove capacity.fallback, or use provisioner Karpenter",
        )
        return
    ordered = sorted(fallback, key=KARPENTER_CAPACITY_ORDER.index)
    if list(fallback) != ordered:
        yield Issue(
            path=at,
            message=(
                f"[{', '.join(fallback)}]: within one NodePool Karpenter always tries reserved capacity first, then"
                " Spot, then On-Demand, whatever order the list has"
            ),
            hint=(
                f"write [{', '.join(ordered)}]; to prefer On-Demand over Spot, make two groups and name the On-Demand"
                " one first in the teams' quotas (Kueue tries a ClusterQueue's flavors in order)"
            ),
        )
    if group.capacity_type is not CapacityType.ON_DEMAND:
        yield Issue(
            path=path + ("capacity", "type"),
            message=f"capacity.type {group.capacity_type} beside fallback: fallback names the capacity types itself",
            hint="remove capacity.type (OnDemand, the price basis of the estimate) and keep fallback",
        )
    if "Reserved" in fallback and group.reservation is None:
        yield Issue(
            path=at,
            message="Reserved needs the capacity reservation the pool launches into first",
            hint=(
                "add capacity.reservation: {tags: {<key>: <value>}, instanceCount: <instances reserved>} (or id:"
                " cr-... for one reservation)"
            ),
        )
    if "Reserved" not in fallback and group.reservation is not None:
        yield Issue(
            path=path + ("capacity", "reservation"),
            at_key=True,
            message=(
                f"the reservation is never used: fallback [{', '.join(fallback)}] has no Reserved, so Karpenter"
                " launches no reserved capacity"
            ),
            hint="put Reserved first in fallback, or remove reservation",
        )


@rule("karpenter")
def _karpenter(fleet: Fleet) -> Iterator[Issue]:
    """What only an EKS managed node group has, refused on a Karpenter group (provisioner: Karpenter), each at its
    own field. Karpenter launches one EC2 instance per NodeClaim for pending pods (no Auto Scaling group), so it has
    no warm pool, no desired size and no managed-node-group update config (its NodePool's disruption settings roll
    nodes instead); it selects capacity reservations only by id or tags (EC2NodeClass
    capacityReservationSelectorTerms, aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml
    @ v1.14.1: id, ownerID, tags, instanceMatchCriteria), never by a Capacity Reservation group."""
    for path, group in _groups(fleet):
        if group.capacity_fallback:
            yield from _fallback(path, group)
        if group.provisioner != "Karpenter":
            r = group.reservation
            if r is not None and r.tags is not None:
                yield Issue(
                    path=path + ("capacity", "reservation", "tags"),
                    at_key=True,
                    message=(
                        "a managed node group's launch template targets a reservation by id or Capacity Reservation"
                        " group; only Karpenter selects reservations by tags"
                    ),
                    hint="name the reservation by id, or use provisioner Karpenter",
                )
            continue
        if group.warm_pool is not None:
            warm = min(max(group.warm_pool.min_size, 1), group.max_size)  # what headroom keeps instead
            yield Issue(
                path=path + ("warmPool",),
                at_key=True,
                message=(
                    "a Karpenter group cannot have a warm pool: warm pools belong to the Auto Scaling group of a"
                    " managed node group, and Karpenter launches instances without one"
                ),
                hint=f"replace warmPool with headroom: {{nodes: {warm}}}"
                " (placeholder pods keep that many nodes running; docs/karpenter.md), or use provisioner"
                " ManagedNodeGroup",
            )
        if group.desired_size is not None:
            yield Issue(
                path=path + ("scaling", "desiredSize"),
                at_key=True,
                message=(
                    "desiredSize is a managed node group's initial size; Karpenter creates nodes only for pending pods"
                ),
                hint="remove scaling.desiredSize",
            )
        if group.min_size > 0:
            yield Issue(
                path=path + ("scaling", "minSize"),
                message=(
                    f"minSize {group.min_size}: a Karpenter NodePool keeps no minimum of nodes; it creates them for"
                    " pending pods and removes them when empty"
                ),
                hint="set minSize to 0, or use provisioner ManagedNodeGroup for nodes that always run",
            )
        for key, value in (
            ("maxUnavailable", group.update.max_unavailable),
            ("maxUnavailablePercentage", group.update.max_unavailable_percentage),
        ):
            if value is not None:
                yield Issue(
                    path=path + ("update", key),
                    at_key=True,
                    message=(
                        f"update.{key} is a managed node group's update config; Karpenter replaces drifted nodes"
                        " under its NodePool's disruption budget"
                    ),
                    hint=f"remove update.{key}",
                )
        r = group.reservation
        if r is not None and r.resource_group_arn is not None:
            yield Issue(
                path=path + ("capacity", "reservation", "resourceGroupArn"),
                at_key=True,
                message=(
                    "Karpenter selects capacity reservations by id or tags (capacityReservationSelectorTerms), not by"
                    " a Capacity Reservation group"
                ),
                hint="name the reservation: reservation: {id: cr-..., instanceCount: <instances reserved>}",
            )
        if r is not None and r.open:
            yield Issue(
                path=path + ("capacity", "reservation", "open"),
                at_key=True,
                message=(
                    "Karpenter launches into a capacity reservation only when its EC2NodeClass selects it; open"
                    " matching of any reservation is not available"
                ),
                hint="name the reservation: reservation: {id: cr-..., instanceCount: <instances reserved>}",
            )


@rule("headroom")
def _headroom(fleet: Fleet) -> Iterator[Issue]:
    """headroom: placeholder pods that keep whole nodes free for serving. They can hold only nodes the group may run,
    must be started by something (an autoscaler, or minSize), must stay out of Kueue TAS's accounting (KEP-2724
    "Non-exclusive use of nodes": TAS assumes every pod on its nodes is one it admitted), and must rank below the
    classes meant to take their place (kube-scheduler preempts only pods of lower priority)."""
    held = False
    for path, group in _groups(fleet):
        if group.headroom is None:
            continue
        held = True
        nodes = group.headroom.nodes
        if nodes > group.max_size:
            yield Issue(
                path=path + ("headroom", "nodes"),
                message=f"a headroom of {nodes} node(s) is larger than the group's maxSize {group.max_size}",
                hint=f"the placeholders hold only nodes the group may run: set headroom.nodes to {group.max_size} or"
                " less, or raise scaling.maxSize",
            )
        if group.provisioner == "ManagedNodeGroup" and fleet.cluster.autoscaler == "None" and nodes > group.min_size:
            yield Issue(
                path=path + ("headroom", "nodes"),
                message=(
                    f"a headroom of {nodes} node(s) on a group of minSize {group.min_size} that nothing scales up"
                    " (cluster.autoscaler is None): the placeholders beyond minSize stay Pending and keep no node warm"
                ),
                hint=f"set cluster.autoscaler: Install, or headroom.nodes to at most minSize ({group.min_size})",
            )
        replica = fleet.workloads.inference_replica_gpus.get(group.name)
        info = catalog.lookup(group.instance_type)
        per = -(-replica // info.gpu_count) if replica and info and info.gpu_count else 1
        if per > 1 and nodes % per:
            yield Issue(
                path=path + ("headroom", "nodes"),
                severity="warning",
                message=(
                    f"a serving replica of {replica} GPUs takes {per} nodes of {group.instance_type}"
                    f" (workloads.inferenceReplicaGpus.{group.name}): a headroom of {nodes} node(s) keeps"
                    f" {nodes // per} whole replica(s) warm, and the next replica's other node(s) start cold"
                ),
                hint=f"set headroom.nodes to a multiple of {per}",
            )
        if defaults.placement(fleet, group) != "None":
            yield Issue(
                path=path + ("headroom",),
                at_key=True,
                message=(
                    f"headroom on a topology-aware group (placement {defaults.placement(fleet, group)}): Kueue TAS"
                    " counts the group's nodes as its own and would find the placeholders' GPUs taken"
                ),
                hint="set topology.placement: None on the group, or remove headroom",
            )
    if not held:
        return
    for i, priority in enumerate(fleet.admission.priorities):
        if not priority.preemptible and priority.value <= HEADROOM_PRIORITY:
            yield Issue(
                path=("admission", "priorities", i, "value"),
                message=(
                    f"priority {priority.name} ({priority.value}) does not rank above the headroom placeholders"
                    f" ({HEADROOM_PRIORITY}): its pods cannot preempt them, so the warm nodes are never theirs"
                ),
                hint=f"give {priority.name} a value above {HEADROOM_PRIORITY}",
            )


@rule("taints")
def _taints(fleet: Fleet) -> Iterator[Issue]:
    for path, group in _groups(fleet):
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


@rule("ami")
def _ami(fleet: Fleet) -> Iterator[Issue]:
    for path, group in _groups(fleet):
        info = catalog.lookup(group.instance_type)
        if info is not None:
            arm = "_ARM_64_" in group.ami_type
            if arm != (info.architecture == "arm64"):
                other = (
                    group.ami_type.replace("ARM_64", "x86_64") if arm else group.ami_type.replace("x86_64", "ARM_64")
                )
                yield Issue(
                    path=path + ("ami", "type"),
                    message=(
                        f"{group.ami_type} is an {'arm64' if arm else 'x86_64'} AMI, but {group.instance_type} is"
                        f" {info.architecture}"
                    ),
                    hint=f"use type: {other}",
                )
        found = ami_releases.check(group.ami_type, group.ami_release_version, fleet.cluster.kubernetes_version)
        if found is not None:
            yield Issue(
                path=path + ("ami", "releaseVersion"), severity=found.severity, message=found.message, hint=found.hint
            )


STAGE_OF_COMPONENT: dict[str, stages.StageName] = {
    "gpuOperator": "foundation",
    "kueue": "admission",
    "efaDevicePlugin": "network",
    "networkOperator": "network",
    "multus": "network",
    "kubePrometheusStack": "telemetry",
    "nodeProblemDetector": "health",
    "clusterAutoscaler": "foundation",
    "karpenter": "foundation",
    "jobSet": "admission",
    "trainer": "admission",
    "leaderWorkerSet": "admission",
    "keda": "telemetry",
    "mountpointS3Csi": "storage",
    "fsxCsiDriver": "storage",
}


def deployed_components(fleet: Fleet) -> set[str]:
    """The component keys (versions.COMPONENTS) some environment of the fleet deploys."""
    fabrics = {g.fabric for g in fleet.node_groups}
    need = {"gpuOperator", "kueue"} if fleet.teams else {"gpuOperator"}
    if Fabric.EFA in fabrics:
        need.add("efaDevicePlugin")
    if Fabric.RDMA in fabrics:
        need |= {"networkOperator", "multus"}
    if fleet.telemetry.prometheus == "Install":
        need.add("kubePrometheusStack")
    need.add("nodeProblemDetector")
    if fleet.cluster.autoscaler == "Install":
        need.add("clusterAutoscaler")
    if any(g.provisioner == "Karpenter" for g in fleet.node_groups):
        need.add("karpenter")
    if fleet.teams:  # the workload layer is installed with Kueue (gpufleet.plan.builders.admission)
        for key, install in (
            ("jobSet", defaults.job_set),
            ("trainer", defaults.trainer),
            ("leaderWorkerSet", defaults.leader_worker_set),
        ):
            if install(fleet):
                need.add(key)
    if any(g.workload_class == WorkloadClass.INFERENCE for g in fleet.node_groups):
        need.add("keda")
    if fleet.checkpoints is not None and fleet.checkpoints.mountpoint is not None:
        need.add("mountpointS3Csi")
    if fleet.fsx_lustre is not None:
        need.add("fsxCsiDriver")
    return {c for c in need if stage_used(fleet, STAGE_OF_COMPONENT[c])}


def component_versions(fleet: Fleet) -> dict[str, str]:
    """Each component key of versions.COMPONENTS with the version the fleet uses (pinned or tested)."""
    v = fleet.versions
    return {
        "gpuOperator": v.gpu_operator,
        "kueue": v.kueue,
        "efaDevicePlugin": v.efa_device_plugin,
        "networkOperator": v.network_operator,
        "multus": v.multus,
        "kubePrometheusStack": v.kube_prometheus_stack,
        "nodeProblemDetector": v.node_problem_detector,
        "clusterAutoscaler": v.cluster_autoscaler,
        "karpenter": v.karpenter,
        "jobSet": v.job_set,
        "trainer": v.trainer,
        "leaderWorkerSet": v.leader_worker_set,
        "keda": v.keda,
        "mountpointS3Csi": v.mountpoint_s3_csi,
        "fsxCsiDriver": v.fsx_csi_driver,
    }


def _pinned_releases(fleet: Fleet) -> list[str]:
    releases = [g.ami_release_version for g in fleet.node_groups]
    return releases + ([fleet.cluster.system_nodes.release_version] if fleet.cluster.system_nodes else [])


@rule("versions")
def _versions(fleet: Fleet) -> Iterator[Issue]:
    v = fleet.versions
    for key, version in component_versions(fleet).items():
        component = COMPONENTS[key]
        field = component.pin_field
        supported = ", ".join(component.supported)
        if key in v.defaulted:
            continue
        path = ("versions", key, field)
        if not is_pinned(version):
            yield Issue(
                path=path, message=f'"{version}" is not a pinned version', hint=f"pin one exact version: {supported}"
            )
        elif version not in component.supported:
            yield Issue(
                path=path,
                message=f"{component.title} {version} is not a version gpufleet supports (supported: {supported})",
                hint=(
                    f"pin one of them, e.g. {closest(version, component.supported) or component.supported[-1]} (Helm"
                    " values are rendered for the keys of these exact versions)"
                ),
            )
    if v.driver_source == "Operator" and v.driver_version is None:
        yield Issue(
            path=("versions", "driver"),
            at_key=True,
            message="driver source Operator needs version: the exact driver the operator installs",
            hint='add version, e.g. version: "595.91.07"',
        )
    if v.driver_source == "Preinstalled" and (v.driver_version or v.toolkit_version):
        field = "version" if v.driver_version else "toolkitVersion"
        yield Issue(
            path=("versions", "driver", field),
            at_key=True,
            message=f"{field} is ignored with source Preinstalled: the AMI's driver and toolkit are used",
            hint="remove it, or set source: Operator",
        )
    for field, value in (("version", v.driver_version), ("toolkitVersion", v.toolkit_version)):
        if value is not None and not is_pinned(value):
            yield Issue(
                path=("versions", "driver", field),
                message=f'"{value}" is not a pinned version',
                hint="pin one exact version, e.g. 595.91.07",
            )
    agent = v.addons.get("nodeMonitoringAgent")
    if agent is not None and node_monitoring_agent_release(agent) not in NODE_MONITORING_AGENT_XIDS:
        known = ", ".join(NODE_MONITORING_AGENT_XIDS)
        yield Issue(
            path=("versions", "addons", "nodeMonitoringAgent"),
            message=(
                f"EKS node monitoring agent {agent} is not a version gpufleet knows (known: {known}): its repair"
                " overrides follow the agent's list of fatal XIDs"
            ),
            hint=f"pin {sorted(NODE_MONITORING_AGENT_XIDS)[-1]}-eksbuild.1",
        )
    if fleet.cluster.kubernetes_version not in KUBERNETES_SUPPORTED:
        # Suggest the version the pinned AMI releases are for: any other one makes every release a mismatch.
        minors = {m for m in map(ami_releases.kubernetes_minor, _pinned_releases(fleet)) if m is not None}
        suggested = (
            minors.pop() if len(minors) == 1 and minors <= set(KUBERNETES_SUPPORTED) else KUBERNETES_SUPPORTED[-1]
        )
        yield Issue(
            path=("cluster", "kubernetesVersion"),
            message=(
                f"Kubernetes {fleet.cluster.kubernetes_version} is not a version gpufleet supports (supported:"
                f" {', '.join(KUBERNETES_SUPPORTED)})"
            ),
            hint=f'pin one of them, quoted, e.g. kubernetesVersion: "{suggested}"',
        )
    for i, image_set in enumerate(fleet.image_sets):
        for j, image in enumerate(image_set.images):
            if not image_is_pinned(image):
                yield Issue(
                    path=("imageSets", i, "images", j),
                    message=f'image "{image}" is not pinned to a tag or digest',
                    hint="add an exact tag (not latest) or @sha256:... so every node pulls the same bits",
                )


@rule("explicit-pins")
def _explicit_pins(fleet: Fleet) -> Iterator[Issue]:
    """versions.pinning Explicit (the whole fleet, or one environment through its overrides): every component the
    fleet deploys is pinned in the spec, so a gpufleet upgrade cannot change a deployed version by itself."""
    if fleet.versions.pinning != "Explicit":
        return
    for key in sorted(deployed_components(fleet) & fleet.versions.defaulted):
        field = "tag" if key == "multus" else "chart"
        yield Issue(
            path=("versions", "pinning"),
            message=f"pinning is Explicit, but {COMPONENTS[key].title} is not pinned",
            hint=f"pin it: versions.{key}.{field}: {default_release(key)} (the release this gpufleet is tested with)",
        )


@rule("telemetry")
def _telemetry(fleet: Fleet) -> Iterator[Issue]:
    if fleet.telemetry.prometheus == "Install" and fleet.telemetry.existing_namespace is not None:
        yield Issue(
            path=("telemetry", "existingNamespace"),
            at_key=True,
            message="existingNamespace is only used with prometheus: Existing",
            hint="remove existingNamespace, or set prometheus: Existing",
        )


@rule("system-nodes")
def _system_nodes(fleet: Fleet) -> Iterator[Issue]:
    cluster = fleet.cluster
    if cluster.mode == "Create" and cluster.system_nodes is None:
        yield Issue(
            path=("cluster",),
            message=(
                "mode Create needs systemNodes: every GPU group is tainted, so CoreDNS and the controllers need CPU"
                " nodes to run on"
            ),
            hint='add cluster.systemNodes: {releaseVersion: "<the AMI release of your GPU groups>"}',
        )
    if cluster.mode == "Existing" and cluster.system_nodes is not None:
        yield Issue(
            path=("cluster", "systemNodes"),
            at_key=True,
            message="systemNodes is only used with mode Create: an existing cluster brings its own system nodes",
        )
    if cluster.system_nodes is not None:
        found = ami_releases.check(
            SYSTEM_NODES_AMI_TYPE, cluster.system_nodes.release_version, cluster.kubernetes_version
        )
        if found is not None:
            yield Issue(
                path=("cluster", "systemNodes", "releaseVersion"),
                severity=found.severity,
                message=found.message,
                hint=found.hint,
            )
    if cluster.system_nodes is not None and cluster.system_nodes.min_size > cluster.system_nodes.max_size:
        yield Issue(
            path=("cluster", "systemNodes", "minSize"),
            message=f"minSize {cluster.system_nodes.min_size} is larger than maxSize {cluster.system_nodes.max_size}",
        )


@rule("endpoint")
def _endpoint(fleet: Fleet) -> Iterator[Issue]:
    cluster = fleet.cluster
    if cluster.public_cidrs is None and cluster.open_endpoint_reason is None:
        return
    where = ("cluster", "publicEndpoint")
    if cluster.mode == "Existing":
        yield Issue(
            path=where,
            at_key=True,
            message=(
                "publicEndpoint is only used with mode Create: gpufleet does not change an existing cluster's endpoint"
            ),
        )
    elif cluster.endpoint_access == "Private":
        yield Issue(
            path=where,
            at_key=True,
            message="publicEndpoint is set but endpointAccess is Private: there is no public endpoint",
            hint="remove publicEndpoint, or set endpointAccess: PublicAndPrivate",
        )
    elif cluster.open_endpoint_reason is not None and not access.endpoint_open(cluster):
        yield Issue(
            path=where + ("acknowledgeOpenToInternet",),
            at_key=True,
            message=(
                "acknowledgeOpenToInternet is set but the endpoint is not open: only"
                f" {', '.join(access.public_cidrs(cluster))} may reach it"
            ),
            hint="remove acknowledgeOpenToInternet (it would record a reason for an exposure that does not exist)",
        )


@rule("checkpoint-jobs")
def _checkpoint_jobs(fleet: Fleet) -> Iterator[Issue]:
    """checkpoints.jobs[] name a team and a group that exist, on no more nodes than the group has."""
    if fleet.checkpoints is None:
        return
    teams = [t.name for t in fleet.teams]
    groups = {g.name: g for g in fleet.node_groups}
    for i, job in enumerate(fleet.checkpoints.jobs):
        where: Path = ("checkpoints", "jobs", i)
        if job.team not in teams:
            yield Issue(
                path=where + ("team",), message=f'unknown team "{job.team}"', hint=did_you_mean(job.team, teams)
            )
        group = groups.get(job.node_group)
        if group is None:
            yield Issue(
                path=where + ("nodeGroup",),
                message=f'unknown node group "{job.node_group}"',
                hint=did_you_mean(job.node_group, groups),
            )
        elif job.nodes > group.max_size:
            yield Issue(
                path=where + ("nodes",),
                message=(
                    f'job "{job.name}" runs on {job.nodes} nodes, but node group "{group.name}" has at most'
                    f" {group.max_size} (scaling.maxSize)"
                ),
                hint=f"lower nodes to {group.max_size}, or raise the group's scaling.maxSize",
            )


def _prefetch_groups(fleet: Fleet, quota_groups: list[str]) -> str:
    ready = [
        g.name
        for g in fleet.node_groups
        if g.name in quota_groups and g.workload_class is WorkloadClass.INFERENCE and g.local_storage == "RAID0"
    ]
    if not ready:
        return "remove this entry: the team has no Inference group with localStorage RAID0 to prefetch on"
    return (
        f"prefetch on {', '.join(ready)} (an Inference group of the team's quotas with localStorage RAID0), or remove"
        " this entry"
    )


@rule("prefetch")
def _prefetch(fleet: Fleet) -> Iterator[Issue]:
    """teams[].prefetch[] reads the team's claim s3-<group> (checkpoints.mountpoint) into the Mountpoint cache of an
    Inference group's nodes, which is on the instance-store array only with localStorage RAID0
    (gpufleet.plan.manifests.mountpoint.cache_gb); paths are keys under the team's prefix, as Mountpoint shows them
    (S3 keys with `.`, `..` or empty segments are not shown as files: mountpoint-s3 doc/SEMANTICS.md)."""
    groups = {g.name: g for g in fleet.node_groups}
    for i, team in enumerate(fleet.teams):
        if team.prefetch and (fleet.checkpoints is None or fleet.checkpoints.mountpoint is None):
            yield Issue(
                path=("teams", i, "prefetch"),
                at_key=True,
                message="prefetch reads the team's claims s3-<group>, which only checkpoints.mountpoint creates",
                hint="add checkpoints.mountpoint: {} (docs/network-and-storage.md), or remove prefetch",
            )
        quota_groups = [q.node_group for q in team.quotas]
        seen: set[str] = set()
        for j, entry in enumerate(team.prefetch):
            where: Path = ("teams", i, "prefetch", j)
            group = groups.get(entry.node_group)
            if entry.node_group in seen:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=f'node group "{entry.node_group}" is listed twice in the team\'s prefetch',
                    hint="merge the paths into one entry",
                )
            seen.add(entry.node_group)
            if group is None:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=f'unknown node group "{entry.node_group}"',
                    hint=did_you_mean(entry.node_group, groups),
                )
            elif entry.node_group not in quota_groups:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=(
                        f'team "{team.name}" has no quota on node group "{group.name}", so it has no claim'
                        f" s3-{group.name} there to prefetch from"
                    ),
                    hint=f"add a quota on {group.name}, or prefetch on a group of the team's quotas: "
                    + ", ".join(quota_groups),
                )
            elif group.workload_class is not WorkloadClass.INFERENCE:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=(
                        f'node group "{group.name}" is a {group.workload_class.value} group: prefetch keeps serving'
                        " weights in the caches of Inference groups, whose claims are read-only"
                    ),
                    hint=_prefetch_groups(fleet, quota_groups),
                )
            elif group.local_storage != "RAID0":
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=(
                        f'node group "{group.name}" has no Mountpoint cache to prefetch into: the cache is on the'
                        " instance-store array, which only localStorage RAID0 builds"
                    ),
                    hint=f"set localStorage: RAID0 on {group.name} (an instance type with instance store)",
                )
            measured = fleet.workloads.weight_load_gbps.get(entry.node_group)
            if measured and measured.s3 is not None and measured.nvme is not None and measured.nvme < measured.s3:
                yield Issue(
                    path=where + ("nodeGroup",),
                    severity="warning",
                    message=(
                        f"on node group {entry.node_group} a warm cache reads at {measured.nvme:g} GB/s and S3 at"
                        f" {measured.s3:g} GB/s (workloads.weightLoadGBps, measured): Mountpoint serves cached data"
                        " from the array, so prefetched weights load slower than from S3"
                    ),
                    hint="remove this entry",
                )
            for k, prefix in enumerate(entry.paths):
                segments = prefix.rstrip("/").split("/")
                if prefix.startswith("/"):
                    yield Issue(
                        path=where + ("paths", k),
                        message=f'prefetch path "{prefix}" is absolute: paths are relative to the team\'s prefix',
                        hint=f"write {prefix.lstrip('/')!r} (the claim's root is s3://<bucket>/<team>/)",
                    )
                elif any(s in ("", ".", "..") for s in segments):
                    yield Issue(
                        path=where + ("paths", k),
                        message=(
                            f'prefetch path "{prefix}" has an empty, "." or ".." segment: Mountpoint shows no such'
                            " key as a file, and a path may not leave the team's prefix"
                        ),
                        hint="name the objects' keys below the team's prefix, e.g. models/llama-3.1-405b-awq/",
                    )


@rule("access")
def _access(fleet: Fleet) -> Iterator[Issue]:
    cluster = fleet.cluster
    if cluster.mode == "Create" and not cluster.admins:
        yield Issue(
            path=("cluster",),
            message=(
                "mode Create needs cluster.admins: the cluster is created without an implicit admin"
                " (bootstrapClusterCreatorAdminPermissions false), so nobody could deploy into it"
            ),
            hint='add cluster.admins: [{principalArn: "arn:aws:iam::<account>:role/<the role that runs pulumi up>"}]',
        )
    if fleet.checkpoints is not None and fleet.checkpoints.encryption == "CustomerManagedKey" and not cluster.admins:
        yield Issue(
            path=("checkpoints", "encryption"),
            message=(
                "encryption CustomerManagedKey needs cluster.admins: they administer the checkpoint key, and nobody"
                " else may"
            ),
            hint="add cluster.admins, or use encryption S3Managed",
        )
    partition = names.partition(cluster.region)
    owners: list[tuple[Path, list[str] | tuple[str, ...], str]] = [
        (("cluster", "admins"), [p.principal_arn for p in cluster.admins], "cluster.admins")
    ]
    owners += [
        (("teams", i, "members"), [p.principal_arn for p in team.members], f"team {team.name}")
        for i, team in enumerate(fleet.teams)
    ]
    seen: dict[str, str] = {}
    for path, arns, owner in owners:
        for j, arn in enumerate(arns):
            where = path + (j, "principalArn")
            if access.arn_partition(arn) != partition:
                yield Issue(
                    path=where,
                    message=(
                        f"{arn} is in partition {access.arn_partition(arn)}, the cluster (region {cluster.region}) in"
                        f" {partition}"
                    ),
                    hint=f"use the principal's arn:{partition}:iam::... ARN",
                )
            if arn in seen:
                yield Issue(
                    path=where,
                    message=f"{arn} is already listed in {seen[arn]}: EKS allows one access entry per principal",
                    hint=(
                        "give each principal one role in the spec (a person in two teams assumes a different role for"
                        " each)"
                    ),
                )
            seen.setdefault(arn, owner)


@rule("resource-ids")
def _resource_ids(fleet: Fleet) -> Iterator[Issue]:
    """Two things of the spec must not get one logical resource id (the plan asserts it: synth would exit 3). An
    access entry's id keeps only the lowercased letters, digits and dashes of the principal's name, and its
    association's id adds the policy: `role/x.y` and `role/x_y`, `role/teams/x` and `user/teams-x`, or `role/ml`
    (whose edit association is ...-ml-edit) and `role/ml-edit` meet. Refused rather than renamed: a new id for a
    deployed entry would make Pulumi replace it (access lost while it does)."""
    for i, group in enumerate(fleet.node_groups):
        if group.name == names.SYSTEM_GROUP:
            yield Issue(
                path=("nodeGroups", i, "name"),
                message=(
                    f'"{group.name}" is the system node group\'s: its nodes carry {names.LABEL_NODE_GROUP}:'
                    f" {names.SYSTEM_GROUP} and its resource id is {names.SYSTEM_NODE_GROUP}"
                ),
                hint="name the GPU node group otherwise, e.g. after its instance type",
            )
    seen: dict[str, tuple[str, str]] = {names.SYSTEM_NODE_GROUP: ("", "the system node group")}
    claims: list[tuple[Path, str, str, str]] = []  # (where, what owns the id, the id, what claims it)
    for i, group in enumerate(fleet.node_groups):
        if group.name == names.SYSTEM_GROUP:
            continue
        for rid, part in (
            (names.node_group_id(group), "node group"),
            (names.launch_template_id(group), "launch template"),
            (names.placement_group_id(group), "placement group"),
        ):
            claims.append((("nodeGroups", i, "name"), group.name, rid, f"the {part} of node group {group.name}"))
    members: list[tuple[Path, str, tuple[Principal, ...], str]] = [
        (("cluster", "admins"), "admin", fleet.cluster.admins, access.CLUSTER_ADMIN_POLICY)
    ]
    members += [
        (("teams", i, "members"), f"team-{team.name}", team.members, access.EDIT_POLICY)
        for i, team in enumerate(fleet.teams)
    ]
    for path, owner, principals, policy in members:
        for j, principal in enumerate(principals):
            arn = principal.principal_arn
            entry = access.entry_id(arn, owner)
            where: Path = (*path, j, "principalArn")
            claims.append((where, arn, entry, f"the access entry of {arn}"))
            claims.append((where, arn, access.association_id(entry, policy), f"the {policy} association of {arn}"))
    reported: set[Path] = set()
    for where, owner, rid, what in claims:
        # the same name twice is reported as a duplicate already; one collision is enough to tell of each name
        if rid in seen and seen[rid][0] != owner and where not in reported:
            reported.add(where)
            yield Issue(
                path=where,
                message=f'{what} gets the resource id "{rid}", as {seen[rid][1]} does',
                hint=(
                    "a resource id keeps only the lowercased letters, digits and dashes of a name: rename one of the"
                    " two, or list one principal in its place"
                ),
            )
        seen.setdefault(rid, (owner, what))


def efa_only_interfaces(group: NodeGroup) -> bool:
    """The group attaches EFA-only interfaces: an EFA group whose type has more than one EFA network card (every
    card past the first gets an `efa-only` interface, plan/builders/node_groups.py)."""
    info = catalog.lookup(group.instance_type)
    return group.fabric is Fabric.EFA and info is not None and min(info.max_efa_interfaces, info.network_cards) > 1


@rule("addon-versions")
def _addon_versions(fleet: Fleet) -> Iterator[Issue]:
    """Each pinned EKS add-on against the cluster's Kubernetes minor and what the fleet's nodes need, from the dated
    offline catalog gpufleet.facts.addons (preflight asks EKS itself). Add-ons are managed in mode Create only."""
    if fleet.cluster.mode != "Create":
        return
    efa_only = any(efa_only_interfaces(g) for g in fleet.node_groups)
    for key, version in fleet.versions.addons.items():
        found = addons.check(key, version, fleet.cluster.kubernetes_version, efa_only=efa_only)
        if found is not None:
            yield Issue(
                path=("versions", "addons", key), severity=found.severity, message=found.message, hint=found.hint
            )


@rule("eks-names")
def _eks_names(fleet: Fleet) -> Iterator[Issue]:
    """The node group name prefixes gpufleet composes, `{metadata.name}-{nodeGroups[].name}-` (and
    `{metadata.name}-system-` for the system nodes in mode Create), fit EKS: at most 37 characters, 63 for the name
    minus the 26-character unique suffix (terraform-provider-aws internal/service/eks/node_group.go). Positioned at
    the fleet's name when it alone leaves no room, else at each node group name that is too long."""
    limit = names.NODE_GROUP_NAME_PREFIX_MAX
    fixed = [names.SYSTEM_GROUP] if fleet.cluster.mode == "Create" else []
    # the longest fleet name that still leaves a one-character group (and the system group) room
    fleet_max = limit - len(names.node_group_name_prefix("", max(fixed + ["x"], key=len)))
    if len(fleet.name) > fleet_max:
        system = " and the system node group's" if fixed else ""
        yield Issue(
            path=("metadata", "name"),
            message=(
                f'fleet name "{fleet.name}" is {len(fleet.name)} characters: the node group name prefixes'
                f" {names.node_group_name_prefix(fleet.name, '<group>')}{system} may be at most {limit} (EKS node"
                f" group names are at most {names.NODE_GROUP_NAME_MAX}, 26 of them the unique suffix)"
            ),
            hint=f"shorten metadata.name to at most {fleet_max} characters",
        )
        return
    for path, group in _groups(fleet):
        prefix = names.node_group_name_prefix(fleet.name, group.name)
        if len(prefix) > limit:
            room = limit - len(names.node_group_name_prefix(fleet.name, ""))
            yield Issue(
                path=(*path, "name"),
                message=(
                    f"node group name prefix {prefix} is {len(prefix)} characters; EKS allows at most {limit} (node"
                    f" group names are at most {names.NODE_GROUP_NAME_MAX}, 26 of them the unique suffix)"
                ),
                hint=f"shorten the node group name to at most {room} characters (or metadata.name)",
            )


@rule("driver-source-matches-ami")
def _driver_source(fleet: Fleet) -> Iterator[Issue]:
    operator = fleet.versions.driver_source == "Operator"
    release = GPU_OPERATOR.get(fleet.versions.gpu_operator)
    if (
        fleet.versions.gdrcopy == "Enabled"
        and not operator
        and release is not None
        and release.gdrcopy_needs_operator_driver
    ):
        hint = "set source: Operator (its driver DaemonSet loads gdrdrv), or gdrCopy: Disabled"
        if release.device_plugin_detects_gdrdrv:
            hint += "; a node that loads gdrdrv itself gets GDRCopy from the device plugin without this setting"
        yield Issue(
            path=("versions", "driver", "gdrCopy"),
            message=(
                f"GPU Operator {fleet.versions.gpu_operator} loads gdrdrv only beside the driver it installs, and with"
                " source Preinstalled it installs none (the EKS NVIDIA AMI ships no gdrdrv)"
            ),
            hint=hint,
        )
    for path, group in _groups(fleet):
        nvidia_ami = group.ami_type.endswith("_NVIDIA")
        if operator and nvidia_ami:
            yield Issue(
                path=path + ("ami", "type"),
                message=f"{group.ami_type} ships its own NVIDIA driver, but versions.driver.source is Operator",
                hint=(
                    f"use {'AL2023_ARM_64_STANDARD' if '_ARM_64_' in group.ami_type else 'AL2023_x86_64_STANDARD'} (the"
                    " operator installs the driver), or driver source Preinstalled"
                ),
            )
        if not operator and not nvidia_ami:
            yield Issue(
                path=path + ("ami", "type"),
                message=f"{group.ami_type} has no NVIDIA driver, but versions.driver.source is Preinstalled",
                hint="use an *_NVIDIA AMI type, or set versions.driver.source: Operator with a pinned version",
            )


@rule("network")
def _network(fleet: Fleet) -> Iterator[Issue]:
    rdma = fleet.network.rdma
    rdma_groups = [(path, group) for path, group in _groups(fleet) if group.fabric is Fabric.RDMA]
    for path, group in rdma_groups:
        info = catalog.lookup(group.instance_type)
        if info is not None and info.rdma_nics == 0:
            yield Issue(
                path=path + ("fabric",),
                message=(
                    f"{group.instance_type} has no RDMA NICs: EC2 GPU instances reach each other over EFA, not ConnectX"
                    " InfiniBand or RoCE, so fabric RDMA would launch the nodes without their EFA interfaces and wait"
                    " for rdma/* devices that never appear"
                ),
                hint=(
                    f"use fabric EFA ({group.instance_type} has {info.max_efa_interfaces} EFA interface(s))"
                    if info.efa_supported
                    else "use fabric None"
                ),
            )
    if rdma is None and rdma_groups and stage_used(fleet, "network"):
        path, group = rdma_groups[0]
        yield Issue(
            path=path + ("fabric",),
            message=(
                f'fabric RDMA needs network.rdma: the RDMA devices and ports of group "{group.name}"\'s NICs (for the'
                " device plugin, the secondary networks and NCCL_IB_HCA)"
            ),
            hint=(
                "add network.rdma.networks: [{name: rail0, interface: <netdev, e.g. ibp24s0>, hca: <RDMA device, e.g."
                " mlx5_0>}]"
            ),
        )
    if rdma is not None and not rdma_groups:
        yield Issue(
            path=("network", "rdma"),
            at_key=True,
            severity="warning",
            message="network.rdma is set but no node group has fabric RDMA: it is not used",
        )
    if rdma is not None:
        for field in ("name", "interface", "hca"):
            seen: set[str] = set()
            for i, net in enumerate(rdma.networks):
                value = getattr(net, field)
                if value in seen:
                    yield Issue(
                        path=("network", "rdma", "networks", i, field),
                        message=f'{field} "{value}" appears in more than one RDMA network',
                        hint="one entry per RDMA port",
                    )
                seen.add(value)
    image = fleet.network.bandwidth_gate.image
    if not image_has_digest(image):
        # A tag proves nothing about the bits: aws-samples' buildspec.yaml rebuilds and re-pushes its tag (and
        # :latest) on every build (awsome-distributed-training micro-benchmarks/nccl-tests/buildspec.yaml).
        yield Issue(
            path=("network", "bandwidthGate", "image"),
            message=f'image "{image}" is not pinned by digest: a tag can be rebuilt and pushed again',
            hint=(
                "the gate must measure the same bits every time: append the digest the tag resolves to, as"
                " <image>@sha256:<64 hex digits> (`docker buildx imagetools inspect <image:tag>` prints it)"
            ),
        )


def _containers(entries: Iterable[PrivilegedContainer]) -> str:
    return ", ".join(dict.fromkeys(e.component for e in entries))


@rule("images")
def _images(fleet: Fleet) -> Iterator[Issue]:
    # The privileged images gpufleet renders itself (gpufleet.facts.images): a digest given must be for the tag this
    # fleet runs, since a runtime pulls a tagged and digested reference by its digest alone (gpufleet.spec.images).
    used = images.rendered(fleet, lambda stage: stage_used(fleet, stage))
    for key, given in fleet.images.digests.items():
        tagged = images.tag_reference(fleet, key)
        if key not in used:
            yield Issue(
                path=("images", key),
                severity="warning",
                message=(
                    f"set, but no environment renders a container that runs the {IMAGES[key].title} image: it is"
                    " not used"
                ),
                hint=(
                    f"the {IMAGES[key].title} image runs only where docs/tenancy-and-access.md says; remove"
                    f" images.{key}"
                ),
            )
        elif tagged is not None and images.without_digest(given) != tagged:
            yield Issue(
                path=("images", key),
                message=(
                    f'"{given}" is a digest of {images.without_digest(given)}, but this fleet runs {tagged}: the'
                    " runtime would pull the digest and run the other image"
                ),
                hint=(
                    f"take the digest of {tagged} ({digest_commands(tagged)}) and write images.{key}:"
                    f' "{tagged}@sha256:<digest>"'
                ),
            )
    if fleet.images.require_digests:
        for key, tagged, entries in images.tag_only(fleet, lambda stage: stage_used(fleet, stage)):
            yield Issue(
                path=("images", "requireDigests"),
                message=(
                    f'true, but the {IMAGES[key].title} image "{tagged}" ({_containers(entries)}) is pinned by tag only'
                ),
                hint=f'write images.{key}: "{tagged}@sha256:<digest>", the digest from {digest_commands(tagged)}',
            )


@rule("admission")
def _admission(fleet: Fleet) -> Iterator[Issue]:
    if not stage_used(fleet, "admission"):
        return
    adm = fleet.admission
    derived, slowest = cold_start.default_timeout_seconds(fleet)
    if adm.pods_ready_timeout_seconds is not None and adm.pods_ready_timeout_seconds < derived:
        yield Issue(
            path=("admission", "podsReadyTimeoutSeconds"),
            severity="warning",
            message=(
                f"{adm.pods_ready_timeout_seconds}s is shorter than a cold start of node group {slowest} (about"
                f" {derived}s with margin: node boot and join, image pulls, GPU Operator operands): a job that must"
                f" scale the group up is evicted, and deactivated after {adm.backoff_limit_count} requeues"
            ),
            hint=f"remove podsReadyTimeoutSeconds (the default is {derived}s), or set at least {derived}",
        )
    if adm.reclaim_within_cohort == "Never" and adm.borrow_within_cohort != "Never":
        yield Issue(
            path=("admission", "preemption", "borrowWithinCohort"),
            message=(
                f"borrowWithinCohort {adm.borrow_within_cohort} needs reclaimWithinCohort other than Never (Kueue"
                " rejects the ClusterQueue otherwise)"
            ),
            hint="set reclaimWithinCohort: LowerPriority or Any, or borrowWithinCohort: Never",
        )
    protected = [p for p in adm.priorities if not p.preemptible]
    for i, prio in enumerate(adm.priorities):
        above = [p.name for p in protected if prio.preemptible and prio.value >= p.value]
        if above:
            yield Issue(
                path=("admission", "priorities", i, "value"),
                message=(
                    f'preemptible class "{prio.name}" ({prio.value}) ranks at or above non-preemptible "{above[0]}": it'
                    " could preempt it"
                ),
                hint="give every non-preemptible class a higher value than every preemptible one",
            )
    for i, team in enumerate(fleet.teams):
        if team.namespace in RESERVED_NAMESPACES or team.namespace.startswith("kube-"):
            yield Issue(
                path=("teams", i, "namespace"),
                message=f'team namespace "{team.namespace}" is a system namespace',
                hint="give the team its own namespace (teams[].namespace; omitted, it is the team name)",
            )
    for path, group in _groups(fleet):
        if (
            group.topology.placement not in (None, "None")
            and group.instance_type not in catalog.TOPOLOGY_INSTANCE_TYPES
            and catalog.lookup(group.instance_type)
        ):
            yield Issue(
                path=path + ("topology", "placement"),
                message=(
                    f"topology-aware placement needs the EKS network topology labels, which {group.instance_type} nodes"
                    " do not get (Kueue would find no capacity)"
                ),
                hint=(
                    "set placement: None, or use an instance type EC2 reports topology for (p4d, p5, p5e, p5en, p6,"
                    " g6e)"
                ),
            )


@rule("sharing-names")
def _sharing_names(fleet: Fleet) -> Iterator[Issue]:
    # A group's sharing config is the entry named after it; these names are the entries of everything else.
    if not stage_used(fleet, "sharing"):
        return
    reserved = {
        SharingStrategy.TIME_SLICING: DEFAULT_DEVICE_PLUGIN_CONFIG,
        SharingStrategy.MPS: DEFAULT_DEVICE_PLUGIN_CONFIG,
        SharingStrategy.MIG: MIG_DISABLED,
    }
    for path, group in _groups(fleet):
        name = reserved.get(group.sharing.strategy)
        if name is not None and group.name == name:
            yield Issue(
                path=path + ("name",),
                message=(
                    f"{'an' if group.sharing.strategy is SharingStrategy.MPS else 'a'} {group.sharing.strategy} group"
                    f' cannot be named "{name}": that config entry is the one for groups without sharing'
                ),
                hint="rename the node group",
            )


@rule("workloads")
def _workloads(fleet: Fleet) -> Iterator[Issue]:
    w = fleet.workloads
    if w.trainer == "Install" and w.job_set == "None":
        yield Issue(
            path=("workloads", "jobSet"),
            message="the Trainer runs every TrainJob as a JobSet: trainer Install needs the JobSet controller",
            hint="remove jobSet: None (or set jobSet: Install), or set trainer: None",
        )
    names_ = [g.name for g in fleet.node_groups]
    serving = [g.name for g in fleet.node_groups if g.workload_class is WorkloadClass.INFERENCE]
    for name, gpus in w.inference_replica_gpus.items():
        path = ("workloads", "inferenceReplicaGpus", name)
        if name not in names_:
            yield Issue(
                path=path,
                at_key=True,
                message=f"no node group named {name}",
                hint=did_you_mean(name, serving) if serving else "remove the entry: the fleet has no Inference group",
            )
            continue
        group = fleet.node_group(name)
        if group.workload_class is not WorkloadClass.INFERENCE:
            yield Issue(
                path=path,
                at_key=True,
                message=f"node group {name} has workloadClass {group.workload_class.value}, not Inference",
                hint="name an Inference node group, or remove the entry",
            )
            continue
        info = catalog.lookup(group.instance_type)
        if info is not None and gpus > info.gpu_count and gpus % info.gpu_count:
            yield Issue(
                path=path,
                severity="warning",
                message=(
                    f"{gpus} GPUs is not a whole number of {group.instance_type} nodes ({info.gpu_count} GPUs each):"
                    " a LeaderWorkerSet replica spans whole nodes, so the last one is partly idle"
                ),
                hint=f"use a multiple of {info.gpu_count}",
            )
    for field_name, name in [("servingModelGB", n) for n in w.serving_model_gb] + [
        ("weightLoadGBps", n) for n in w.weight_load_gbps
    ]:
        if name not in serving:
            yield Issue(
                path=("workloads", field_name, name),
                at_key=True,
                message=(
                    f"no node group named {name}"
                    if name not in names_
                    else f"node group {name} has workloadClass {fleet.node_group(name).workload_class.value}, not"
                    " Inference"
                ),
                hint=did_you_mean(name, serving) if serving else "remove the entry: the fleet has no Inference group",
            )
        elif field_name == "weightLoadGBps" and w.weight_load_gbps[name].nvme is not None:
            group = fleet.node_group(name)
            if group.local_storage != "RAID0" or fleet.checkpoints is None or fleet.checkpoints.mountpoint is None:
                yield Issue(
                    path=("workloads", "weightLoadGBps", name, "nvme"),
                    message=(
                        f"node group {name} has no Mountpoint cache to read from (it needs localStorage RAID0 and"
                        " checkpoints.mountpoint), so a warm-cache rate has nothing to describe"
                    ),
                    hint="remove nvme",
                )
    if w.leader_worker_set == "None" and (spanning := defaults.multi_node_replicas(fleet)):
        yield Issue(
            path=("workloads", "leaderWorkerSet"),
            severity="warning",
            message=(
                f"a serving replica of {', '.join(spanning)} needs more GPUs than one node has, and no LeaderWorkerSet"
                " is installed: each replica must be wired across nodes by hand"
            ),
            hint="remove leaderWorkerSet: None",
        )


@rule("helm-values")
def _helm_values(fleet: Fleet) -> Iterator[Issue]:
    """helm.<component>.values: every key a value of the pinned chart, none a value gpufleet guarantees
    (gpufleet.rules.helm_values), and only for a chart the fleet installs."""
    if not fleet.helm_values:
        return
    versions = component_versions(fleet)
    deployed = deployed_components(fleet)
    checked: dict[str, Mapping[str, Any]] = {}
    for key, overlay in fleet.helm_values.items():
        if key in helm_values.HELM_COMPONENTS and key not in deployed:
            yield Issue(
                path=("helm", key),
                at_key=True,
                message=f"no environment of the fleet installs {COMPONENTS[key].title}, so its values have no release",
                hint=f"remove helm.{key}",
            )
        elif key not in helm_values.HELM_COMPONENTS or versions[key] in COMPONENTS[key].releases:
            checked[key] = overlay  # an unsupported version is the versions rule's to report
    yield from helm_values.issues(checked, versions)


@rule("fsx-lustre")
def _fsx_lustre(fleet: Fleet) -> Iterator[Issue]:
    """fsxLustre: a throughput tier and a storage capacity the FSx API accepts for the deployment type, a node group
    and one subnet in its zone, and data repository associations FSx can create (gpufleet.facts.fsx)."""
    fsx_spec = fleet.fsx_lustre
    if fsx_spec is None:
        return
    at: Path = ("fsxLustre",)
    kind = fsx_spec.deployment_type
    tiers = fsx.THROUGHPUT_TIERS.get(kind)
    per_unit = fsx_spec.per_unit_storage_throughput
    if tiers is not None and per_unit is None:
        yield Issue(
            path=at,
            message=f"deploymentType {kind} needs perUnitStorageThroughput (MB/s per TiB of storage)",
            hint=f"set perUnitStorageThroughput to one of {', '.join(map(str, tiers))}",
        )
    elif tiers is not None and per_unit not in tiers:
        yield Issue(
            path=at + ("perUnitStorageThroughput",),
            message=f"{kind} offers {', '.join(map(str, tiers))} MB/s/TiB, not {per_unit}",
            hint=f"use one of {', '.join(map(str, tiers))}",
        )
    elif tiers is None and per_unit is not None:
        read, write = fsx.SCRATCH_DISK[kind]
        yield Issue(
            path=at + ("perUnitStorageThroughput",),
            message=(
                f"{kind} has a fixed throughput ({read} MB/s/TiB read, {write} write): perUnitStorageThroughput is for"
                " PERSISTENT_1 and PERSISTENT_2"
            ),
            hint="remove perUnitStorageThroughput, or use deploymentType PERSISTENT_2",
        )
    gib = fsx_spec.storage_capacity_gib
    if not fsx.valid_capacity(kind, gib):
        below, above = fsx.nearest_capacities(kind, gib)
        step = fsx.CAPACITY_STEP[kind]
        yield Issue(
            path=at + ("storageCapacityGiB",),
            message=f"{kind} takes 1200, 2400 or a multiple of {step} GiB, not {gib}",
            hint=f"use {below} or {above}",
        )
    groups = {g.name: g for g in fleet.node_groups}
    group = fsx_names.node_group(fleet, fsx_spec)
    if fsx_spec.node_group is not None and group is None:
        yield Issue(
            path=at + ("nodeGroup",),
            message=f'unknown node group "{fsx_spec.node_group}"',
            hint=did_you_mean(fsx_spec.node_group, groups),
        )
    elif group is None:
        yield Issue(
            path=at,
            message="fsxLustre needs nodeGroup: the fleet has no Training group to put the file system beside",
            hint="set fsxLustre.nodeGroup to the group whose jobs read and write it",
        )
    else:
        subnets = fsx_names.group_subnets(fleet, group)
        if fsx_spec.subnet_id is None and len(subnets) > 1:
            yield Issue(
                path=at,
                message=(
                    f'node group "{group.name}" spans {len(subnets)} subnets ({", ".join(subnets)}): an FSx for Lustre'
                    " file system takes one"
                ),
                hint="set fsxLustre.subnetId to the subnet of the zone the group's jobs run in",
            )
        elif fsx_spec.subnet_id is not None and fsx_spec.subnet_id not in subnets:
            yield Issue(
                path=at + ("subnetId",),
                message=(
                    f'{fsx_spec.subnet_id} is not a subnet of node group "{group.name}" ({", ".join(subnets)}): its'
                    " nodes would reach the file system across zones"
                ),
                hint=f"use one of {', '.join(subnets)}, or name the group in fsxLustre.nodeGroup",
            )
    repos = fsx_spec.data_repositories
    if repos and kind not in fsx.DRA_TYPES:
        yield Issue(
            path=at + ("dataRepositories",),
            message=f"{kind} file systems take no data repository associations (FSx supports them on SCRATCH_2,"
            " PERSISTENT_1 and PERSISTENT_2)",
            hint="use deploymentType SCRATCH_2 or PERSISTENT_2",
        )
    cp = fleet.checkpoints
    seen_paths: list[str] = []
    seen_repos: list[str] = []
    for i, repo in enumerate(repos):
        where = at + ("dataRepositories", i)
        bucket = fsx_names.repository_bucket(fleet, repo)
        if bucket is None:
            yield Issue(
                path=where,
                message="the association needs a bucket: the fleet has no checkpoints.bucket to link by default",
                hint="set bucket to the S3 bucket to link",
            )
        elif cp is not None and bucket == cp.bucket and cp.encryption == "CustomerManagedKey":
            yield Issue(
                path=where,
                message=(
                    f"the checkpoint bucket \"{bucket}\" is encrypted with the fleet's key, which only the teams'"
                    " checkpoint roles may use: FSx's service-linked role could neither import nor export its objects"
                ),
                hint="link another bucket, or use checkpoints.encryption S3Managed",
            )
        path = repo.file_system_path.rstrip("/") or "/"
        for other in seen_paths:
            if (
                path == "/"
                or other == "/"
                or path == other
                or path.startswith(other + "/")
                or other.startswith(path + "/")
            ):
                yield Issue(
                    path=where + ("fileSystemPath",),
                    message=f"{repo.file_system_path} overlaps the directory {other} another association links",
                    hint="link each association to its own directory, none inside another (`/` only alone)",
                )
                break
        seen_paths.append(path)
        if bucket is not None:
            source = f"s3://{bucket}/{repo.prefix}"
            if source in seen_repos:
                yield Issue(
                    path=where,
                    message=f"{source} is linked by another association already",
                    hint="link each bucket or prefix once",
                )
            seen_repos.append(source)
