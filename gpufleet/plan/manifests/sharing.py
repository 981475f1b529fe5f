"""GPU sharing per node group (stage 4): device plugin and MIG manager configs, the labels that select them,
and the isolation contract of each strategy.

Why, with sources: docs/admission-and-sharing.md, "Design notes", gpufleet/plan/manifests/sharing.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from gpufleet.facts import catalog
from gpufleet.plan.manifests.checksum import data_sha256
from gpufleet.spec.fleet import Fleet, NodeGroup, SharingStrategy
from gpufleet.spec.names import DEFAULT_DEVICE_PLUGIN_CONFIG, GPU_RESOURCE, MIG_DISABLED, MIG_RESOURCE_PREFIX

DEVICE_PLUGIN_CONFIGMAP = "gpufleet-device-plugin-config"
MIG_CONFIGMAP = "gpufleet-mig-config"
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
# The operator's own label for "do not run the MIG manager here" (controllers/state_manager.go migManagerLabelKey).
LABEL_DEPLOY_MIG_MANAGER = "nvidia.com/gpu.deploy.mig-manager"
# MIG strategy `single`: every MIG device is advertised as nvidia.com/gpu; a node group partitions all its GPUs
# with one profile, which is what `single` requires. `mixed`: each slice is `nvidia.com/mig-<profile>`.
MIG_SINGLE = "single"
MIG_MIXED = "mixed"
MIG_PREFIX = MIG_RESOURCE_PREFIX
CONFIG_HASH_ENV = "GPUFLEET_CONFIG_SHA256"

_PROFILE = re.compile(r"^([0-9]+)g\.([0-9]+)gb$")
# Compute slices per GPU of every MIG-capable board (A100, H100, H200, B200, B300 all have 7).
_COMPUTE_SLICES = 7
# Memory slices per GPU: the smallest 1g profile owns one of 8.
_MEMORY_SLICES = 8


def is_bottlerocket(group: NodeGroup) -> bool:
    return group.ami_type.startswith("BOTTLEROCKET")


def mig_instances_per_gpu(profile: str, profiles: tuple[str, ...]) -> int:
    """How many instances of `profile` fit one GPU whose homogeneous profiles are `profiles` (smallest first).

    Why: docs/admission-and-sharing.md, "Design notes", sharing.mig_instances_per_gpu."""
    match = _PROFILE.match(profile)
    smallest = _PROFILE.match(profiles[0]) if profiles else None
    if match is None or smallest is None:
        raise ValueError(f"not a MIG profile: {profile!r}")
    compute, memory = int(match.group(1)), int(match.group(2))
    memory_slices = max(1, round(memory / int(smallest.group(2))))
    return min(_COMPUTE_SLICES // compute, _MEMORY_SLICES // memory_slices)


def is_mixed(group: NodeGroup) -> bool:
    return group.sharing.strategy is SharingStrategy.MIG and group.sharing.mig_strategy == "Mixed"


def mig_strategy(fleet: Fleet) -> str:
    """The GPU Operator's `mig.strategy` for the cluster: mixed when an operator-managed group uses Mixed."""
    return MIG_MIXED if any(is_mixed(g) and _uses_operator_plugin(g) for g in fleet.node_groups) else MIG_SINGLE


def mig_layout(group: NodeGroup) -> tuple[tuple[int, str], ...]:
    """(GPUs, profile) of a MIG group in GPU index order: its `layout`, or every GPU in its one `profile`;
    empty for other groups and for profiles the GPU does not have (a rule reports those)."""
    info = catalog.lookup(group.instance_type)
    sharing = group.sharing
    if info is None or sharing.strategy is not SharingStrategy.MIG:
        return ()
    layout = (
        tuple((s.gpus, s.profile) for s in sharing.layout)
        if is_mixed(group)
        else ((info.gpu_count, sharing.profile),)
        if sharing.profile
        else ()
    )
    return layout if layout and all(p in info.mig_profiles for _, p in layout) else ()


def mig_resource(group: NodeGroup, profile: str) -> str:
    return MIG_PREFIX + profile if is_mixed(group) else GPU_RESOURCE


def devices_per_gpu(group: NodeGroup, *, with_sharing: bool = True) -> dict[str, int]:
    """Devices one physical GPU of the group advertises, by resource name: replicas, MIG instances of its profile,
    or 1 -- what one device is worth (1/n of a GPU) in quotas and cost.

    Why: docs/admission-and-sharing.md, "Design notes", sharing.devices_per_gpu."""
    if not with_sharing:
        return {GPU_RESOURCE: 1}
    sharing = group.sharing
    if sharing.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
        return {GPU_RESOURCE: sharing.replicas or 1}
    layout = mig_layout(group)
    info = catalog.lookup(group.instance_type)
    if layout and info is not None:
        return {mig_resource(group, p): mig_instances_per_gpu(p, info.mig_profiles) for _, p in layout}
    return {GPU_RESOURCE: 1}


def advertised(group: NodeGroup, *, with_sharing: bool = True) -> dict[str, int]:
    """What the device plugin advertises on one node of the group, by resource name (the one function for it).

    Why: docs/admission-and-sharing.md, "Design notes", sharing.advertised."""
    info = catalog.lookup(group.instance_type)
    if info is None:
        return {}
    if not with_sharing:
        return {GPU_RESOURCE: info.gpu_count}
    layout = mig_layout(group)
    if not layout:
        return {GPU_RESOURCE: info.gpu_count * devices_per_gpu(group)[GPU_RESOURCE]}
    per_gpu = devices_per_gpu(group)
    out: dict[str, int] = {}
    for gpus, profile in layout:
        name = mig_resource(group, profile)
        out[name] = out.get(name, 0) + gpus * per_gpu[name]
    return out


def _uses_operator_plugin(group: NodeGroup) -> bool:
    return not is_bottlerocket(group)


def sharing_node_labels(group: NodeGroup) -> dict[str, str]:
    """Node labels of the group that select its sharing config (empty for Exclusive groups)."""
    strategy = group.sharing.strategy
    if is_bottlerocket(group):
        # Bottlerocket partitions MIG itself at boot from its settings; the operator's MIG manager would undo it.
        return {LABEL_DEPLOY_MIG_MANAGER: "false"} if strategy is SharingStrategy.MIG else {}
    if strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
        return {LABEL_DEVICE_PLUGIN_CONFIG: group.name}
    if strategy is SharingStrategy.MIG:
        return {LABEL_MIG_CONFIG: group.name}
    return {}


def operator_sharing_values(fleet: Fleet) -> dict[str, Any]:
    """GPU Operator values pointing the device plugin and MIG manager at the ConfigMaps of stage 4.

    Why: docs/admission-and-sharing.md, "Design notes", sharing.operator_sharing_values."""
    plugin_hash = data_sha256(device_plugin_configmap(fleet, "")["data"])
    mig_hash = data_sha256(mig_configmap(fleet, "")["data"])
    return {
        "devicePlugin": {
            "config": {"create": False, "name": DEVICE_PLUGIN_CONFIGMAP, "default": DEFAULT_DEVICE_PLUGIN_CONFIG},
            "env": [{"name": CONFIG_HASH_ENV, "value": plugin_hash}],
        },
        "migManager": {
            "config": {"create": False, "name": MIG_CONFIGMAP, "default": MIG_DISABLED},
            "env": [{"name": CONFIG_HASH_ENV, "value": mig_hash}],
        },
        "mig": {"strategy": mig_strategy(fleet)},
    }


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def device_plugin_config(group: NodeGroup) -> dict[str, Any] | None:
    """The k8s-device-plugin config (api/config/v1) of a TimeSlicing or MPS group; None for other strategies.

    Why: docs/admission-and-sharing.md, "Design notes", sharing.device_plugin_config."""
    sharing = group.sharing
    resources = [{"name": "nvidia.com/gpu", "replicas": sharing.replicas}]
    if sharing.strategy is SharingStrategy.TIME_SLICING:
        # A request for 2 time-sliced replicas buys no more GPU than 1; fail it instead of misleading the user
        # (k8s-device-plugin README "With CUDA Time-Slicing").
        return {
            "version": "v1",
            "sharing": {"timeSlicing": {"failRequestsGreaterThanOne": True, "resources": resources}},
        }
    if sharing.strategy is SharingStrategy.MPS:
        return {"version": "v1", "sharing": {"mps": {"resources": resources}}}
    return None


def device_plugin_configmap(fleet: Fleet, namespace: str) -> dict[str, Any]:
    """ConfigMap of named device plugin configs: `default` plus one entry per TimeSlicing/MPS group."""
    data = {DEFAULT_DEVICE_PLUGIN_CONFIG: _yaml({"version": "v1"})}
    for group in fleet.node_groups:
        config = device_plugin_config(group)
        if config is not None and _uses_operator_plugin(group):
            data[group.name] = _yaml(config)
    return _configmap(DEVICE_PLUGIN_CONFIGMAP, namespace, data)


def mig_config(group: NodeGroup) -> list[dict[str, Any]] | None:
    """The mig-parted config of a MIG group: every GPU partitioned into as many instances of its profile as fit;
    `devices: all` for one profile, else one entry per layout item with its GPU indices (NVIDIA/mig-parted
    api/spec/v1/spec.go MigConfigSpec: `devices` is "all" or a list of indices)."""
    layout = mig_layout(group)
    if not layout:
        return None
    per_gpu = devices_per_gpu(group)
    if len(layout) == 1 and not is_mixed(group):
        ((_, profile),) = layout
        return [{"devices": "all", "mig-enabled": True, "mig-devices": {profile: per_gpu[GPU_RESOURCE]}}]
    out, first = [], 0
    for gpus, profile in layout:
        out.append(
            {
                "devices": list(range(first, first + gpus)),
                "mig-enabled": True,
                "mig-devices": {profile: per_gpu[mig_resource(group, profile)]},
            }
        )
        first += gpus
    return out


def mig_configmap(fleet: Fleet, namespace: str) -> dict[str, Any]:
    """MIG manager ConfigMap (key `config.yaml`, format `version: v1` + `mig-configs`)."""
    configs: dict[str, Any] = {MIG_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for group in fleet.node_groups:
        config = mig_config(group)
        if config is not None and _uses_operator_plugin(group):
            configs[group.name] = config
    return _configmap(MIG_CONFIGMAP, namespace, {"config.yaml": _yaml({"version": "v1", "mig-configs": configs})})


def _configmap(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "gpufleet"}},
        "data": data,
    }


# Bottlerocket's `mig.profile` keys are `<model>.<memory>gb` in lower case, and its MIG manager supports only
# these boards (bottlerocket-project-website data/settings/1.54.x/kubelet-device-plugins.toml; nvidia-migmanager).
_BOTTLEROCKET_MIG_KEYS = {
    ("A100", 40960): "a100.40gb",
    ("A100", 81920): "a100.80gb",
    ("H100", 81920): "h100.80gb",
    ("H200", 144384): "h200.141gb",
}


def bottlerocket_mig_key(group: NodeGroup) -> str | None:
    info = catalog.lookup(group.instance_type)
    return _BOTTLEROCKET_MIG_KEYS.get((info.gpu_model, info.gpu_memory_mib)) if info else None


def bottlerocket_sharing_settings(group: NodeGroup) -> dict[str, Any]:
    """Keys for Bottlerocket's `[settings.kubelet-device-plugins.nvidia]` table (dotted keys for nested tables).

    Why: docs/admission-and-sharing.md, "Design notes", sharing.bottlerocket_sharing_settings."""
    sharing = group.sharing
    if not is_bottlerocket(group):
        return {}
    if sharing.strategy is SharingStrategy.TIME_SLICING:
        return {
            "device-sharing-strategy": "time-slicing",
            "time-slicing.replicas": sharing.replicas,
            "time-slicing.rename-by-default": False,
            "time-slicing.fail-requests-greater-than-one": True,
        }
    if sharing.strategy is SharingStrategy.MPS:
        return {"device-sharing-strategy": "mps", "mps.replicas": sharing.replicas, "mps.rename-by-default": False}
    if sharing.strategy is SharingStrategy.MIG:
        key = bottlerocket_mig_key(group)
        if key is None or not sharing.profile:
            return {}
        return {"device-partitioning-strategy": "mig", f'mig.profile."{key}"': sharing.profile}
    return {}


# ---------------------------------------------------------------------------------------------------------------
# The isolation contract users read (docs/admission-and-sharing.md keeps the same table; a test compares them).


@dataclass(frozen=True, slots=True, kw_only=True)
class Contract:
    strategy: SharingStrategy
    memory_bound: str
    fault_isolation: str
    reconfigure_cost: str


CONTRACTS: dict[SharingStrategy, Contract] = {
    SharingStrategy.EXCLUSIVE: Contract(
        strategy=SharingStrategy.EXCLUSIVE,
        memory_bound="the whole GPU, not shared",
        fault_isolation="full: one pod per GPU",
        reconfigure_cost="none",
    ),
    SharingStrategy.TIME_SLICING: Contract(
        strategy=SharingStrategy.TIME_SLICING,
        memory_bound="none: any pod can allocate all GPU memory and starve the others",
        fault_isolation="none: pods take turns on one GPU; a fault that needs a GPU reset hits every pod on it",
        reconfigure_cost=(
            "low: the device plugin restarts and advertises the new count; running pods keep their GPU (after lowering"
            " replicas the node stays over-committed until they end)"
        ),
    ),
    SharingStrategy.MPS: Contract(
        strategy=SharingStrategy.MPS,
        memory_bound="yes: 1/replicas of GPU memory and of SMs per pod (MPS control daemon limits)",
        fault_isolation="none: a fatal fault in one client ends every client of that GPU's MPS server",
        reconfigure_cost=(
            "medium: the MPS control daemon restarts, so running pods on the node lose their GPU; drain first"
        ),
    ),
    SharingStrategy.MIG: Contract(
        strategy=SharingStrategy.MIG,
        memory_bound="hardware: each instance has its own memory, cache and SMs",
        fault_isolation="hardware: a fault in one instance does not reach the others",
        reconfigure_cost=(
            "high: the MIG manager needs the GPUs idle, stops the node's GPU daemons and repartitions (minutes); drain"
            " first"
        ),
    ),
}


def contract_line(group: NodeGroup) -> str:
    """One plan.md table row: the group's sharing, what a pod gets, and its isolation contract."""
    info = catalog.lookup(group.instance_type)
    sharing = group.sharing
    per_gpu = devices_per_gpu(group)
    units = per_gpu.get(GPU_RESOURCE, 1)
    contract = CONTRACTS[sharing.strategy]
    if is_mixed(group):
        what = "MIG mixed: " + ", ".join(
            f"{gpus} GPUs of {p} ({per_gpu[mig_resource(group, p)]} each)" for gpus, p in mig_layout(group)
        )
    elif sharing.strategy is SharingStrategy.MIG:
        what = f"MIG {sharing.profile}: {units} per GPU"
    elif sharing.strategy is SharingStrategy.EXCLUSIVE:
        what = "Exclusive: 1 per GPU"
    else:
        what = f"{sharing.strategy.value}: {units} pods per GPU"
    if sharing.strategy is SharingStrategy.MPS and info is not None:
        what += f" ({info.gpu_memory_mib // units} MiB each)"
    per_node = ", ".join(f"{n} `{name}`" for name, n in advertised(group).items()) or "?"
    if is_bottlerocket(group):
        selected = "Bottlerocket settings (user data)"
    else:
        labels = sharing_node_labels(group)
        selected = ", ".join(f"`{k}={v}`" for k, v in labels.items()) or "defaults (no label)"
    return (
        f"| {group.name} | {what} | {per_node} | {contract.memory_bound} | {contract.fault_isolation} |"
        f" {contract.reconfigure_cost} | {selected} |"
    )


CONTRACT_HEADER = (
    "| node group | sharing | devices per node | memory bound | fault isolation | reconfigure cost | selected by |",
    "|---|---|---|---|---|---|---|",
)
