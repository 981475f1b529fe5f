"""Rules on GPU sharing: time-slicing, MPS and MIG (Single and Mixed) on each group, and the names of the device
plugin's config entries.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue, Path, did_you_mean
from gpufleet.facts import catalog
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec.deployed import stage_used
from gpufleet.spec.fleet import Fleet, NodeGroup, SharingStrategy, WorkloadClass
from gpufleet.spec.names import DEFAULT_DEVICE_PLUGIN_CONFIG, MIG_DISABLED


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
        for path, group in each_group(fleet)
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
        for path, group in each_group(fleet):
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
    for path, group in each_group(fleet):
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
                    hint=f"MIG needs {mig_gpus()} GPUs; use MPS or TimeSlicing on this group",
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


def mig_gpus() -> str:
    """The MIG-capable GPU models of the catalog, with their instance families: "A100 (p4d, p4de), H100 (p5)"."""
    families: dict[str, list[str]] = {}
    for info in catalog.CATALOG.values():
        if info.mig_capable and info.family not in families.setdefault(info.gpu_model, []):
            families[info.gpu_model].append(info.family)
    return ", ".join(f"{model} ({', '.join(fams)})" for model, fams in sorted(families.items()))


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
    for path, group in each_group(fleet):
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
