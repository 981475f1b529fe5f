"""Node user data: nodeadm NodeConfig (AL2023) or TOML settings (Bottlerocket), plus the image pre-pull.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/manifests/node_bootstrap.py.
"""

from __future__ import annotations

from email.message import Message
from typing import Any

import yaml

from gpufleet.base.render import render
from gpufleet.facts import catalog, image_pull
from gpufleet.spec import defaults
from gpufleet.spec.fleet import NodeGroup

MIME_BOUNDARY = "==GPUFLEET=="

# The static CPU manager needs a non-zero CPU reservation or the kubelet refuses to start
# (https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#static-policy-configuration).
# Why: docs/stage-1.md, "Design notes", node_bootstrap.SYSTEM_RESERVED_CPU.
SYSTEM_RESERVED_CPU = "1"
SYSTEM_RESERVED_MEMORY = "2Gi"


def topology(group: NodeGroup) -> tuple[str, str, str]:
    """(topologyManagerPolicy, topologyManagerScope, cpuManagerPolicy); the first two default by workload class
    (gpufleet.spec.defaults.TOPOLOGY_POLICY, TOPOLOGY_SCOPE), the CPU manager is static wherever NUMA alignment is
    on."""
    policy, scope = defaults.topology_policy(group), defaults.topology_scope(group)
    cpu = "static" if policy != "none" else "none"
    return policy, scope, cpu


def numa_nodes(group: NodeGroup) -> int:
    """NUMA nodes of the instance type.

    Why: docs/stage-1.md, "Design notes", node_bootstrap.numa_nodes."""
    info = catalog.lookup(group.instance_type)
    return 2 if info is not None and info.gpu_count >= 8 else 1


def system_reserved(group: NodeGroup) -> dict[str, str] | None:
    """kubelet systemReserved where the static CPU manager runs (see SYSTEM_RESERVED_CPU), else None."""
    if topology(group)[0] == "none":
        return None
    return {"cpu": SYSTEM_RESERVED_CPU, "memory": SYSTEM_RESERVED_MEMORY}


def node_config(group: NodeGroup, *, karpenter: bool = False) -> dict[str, Any]:
    """`karpenter`: for an EC2NodeClass's userData, without what the EC2NodeClass sets itself and Karpenter writes
    into its own NodeConfig (systemReserved from spec.kubelet, the RAID0 array from instanceStorePolicy), so the two
    NodeConfigs nodeadm merges never disagree."""
    policy, scope, cpu = topology(group)
    kubelet: dict[str, Any] = {}
    if policy != "none":
        kubelet = {
            "topologyManagerPolicy": policy,
            "topologyManagerScope": scope,
            "cpuManagerPolicy": cpu,
        }
        if not karpenter:
            kubelet["systemReserved"] = {"cpu": SYSTEM_RESERVED_CPU, "memory": SYSTEM_RESERVED_MEMORY}
    spec: dict[str, Any] = {}
    if kubelet:
        spec["kubelet"] = {"config": kubelet}
    if defaults.parallel_pull(group):
        # nodeadm's parallel pull: the SOCI snapshotter in parallel-pull-unpack mode, with nodeadm's own settings
        # (awslabs/amazon-eks-ami nodeadm/doc/examples.md "Enabling fast image pull"; gpufleet.facts.image_pull).
        spec["featureGates"] = {"FastImagePull": True}
    if group.local_storage == "RAID0" and not karpenter:
        # Stripes the instance-store NVMe into one array at nodeadm's default mount path /mnt/k8s-disks/,
        # and moves containerd and pod logs onto it (fast image unpack, scratch space for checkpoints).
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


PREPULL_UNIT = "gpufleet-prepull.service"
# The DCGM host engine's port, open only to the node and its own pods (gpufleet/templates/close-dcgm-hostengine.sh.j2).
DCGM_PORT_UNIT = "gpufleet-dcgm-port.service"


def boot_prepull(group: NodeGroup) -> bool:
    """Whether the group's user data pulls its images at boot (AL2023 with containerd's own pull).

    Why: docs/stage-1.md, "Design notes", node_bootstrap.boot_prepull."""
    return not group.ami_type.startswith("BOTTLEROCKET") and not defaults.parallel_pull(group)


def prepull_script(parameter: str, region: str, *, raid0: bool) -> str:
    """Pull the group's images into containerd on the disk that serves it, touching neither kubelet nor its lifecycle
    (gpufleet/templates/prepull.sh.j2).

    Why: docs/stage-1.md, "Design notes", node_bootstrap.prepull_script."""
    return render("prepull.sh.j2", parameter=parameter, region=region, raid0=raid0, unit=PREPULL_UNIT)


def image_list_parameter(fleet_name: str, group: NodeGroup) -> str:
    """The SSM parameter that holds a group's pre-pull image list (a StringList)."""
    return f"/gpufleet/{fleet_name}/{group.name}/images"


def _mime(parts: list[tuple[str, str]]) -> str:
    """A multipart/mixed document of (content type, body) parts, written by the standard library's email package
    (nodeadm reads the NodeConfig part, cloud-init runs the shell parts in order)."""
    message = Message()
    message["MIME-Version"] = "1.0"
    message["Content-Type"] = f'multipart/mixed; boundary="{MIME_BOUNDARY}"'
    for content_type, body in parts:
        part = Message()
        part["Content-Type"] = content_type
        part.set_payload(body.rstrip("\n") + "\n")
        message.attach(part)
    return message.as_string()


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


# `localStorage: RAID0` on Bottlerocket: its own API builds the array, as a bootstrap command (1.54.x
# concepts/bootstrap-commands "Configure ephemeral disks", settings.bootstrap-commands.<name>.{commands, essential,
# mode}; Karpenter renders the same two commands for `instanceStorePolicy: RAID0`, aws/karpenter-provider-aws
# pkg/providers/amifamily/bootstrap/bottlerocket.go).
EPHEMERAL_STORAGE_COMMAND = "k8s-ephemeral-storage"
EPHEMERAL_STORAGE_DIRS = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")


def bottlerocket_ephemeral_storage(group: NodeGroup) -> dict[str, Any]:
    """A bare `bind` from Bottlerocket 1.46.0 (the soci store included), the three directories by name before.
    Why: docs/stage-1.md, "Design notes", node_bootstrap.bottlerocket_ephemeral_storage."""
    bind = ["apiclient", "ephemeral-storage", "bind"]
    if not image_pull.bottlerocket_default_bind(group.ami_release_version):
        bind += ["--dirs", *EPHEMERAL_STORAGE_DIRS]
    return {
        "commands": [["apiclient", "ephemeral-storage", "init"], bind],
        "essential": True,
        "mode": "always",
    }


def bottlerocket_parallel_pull(group: NodeGroup) -> dict[str, dict[str, Any]]:
    """The SOCI snapshotter in parallel-pull-unpack mode (https://bottlerocket.dev/en/os/1.53.x/api/settings/
    container-runtime-plugins/, Bottlerocket 1.44.0 and later), with nodeadm's values where the spec sets none
    (gpufleet.facts.image_pull).

    Why: docs/stage-1.md, "Design notes", node_bootstrap.bottlerocket_parallel_pull."""
    pull = group.image_pull
    return {
        "settings.container-runtime": {"snapshotter": "soci"},
        "settings.container-runtime-plugins.soci-snapshotter": {"pull-mode": "parallel-pull-unpack"},
        "settings.container-runtime-plugins.soci-snapshotter.parallel-pull-unpack": {
            "max-concurrent-downloads-per-image": pull.max_concurrent_downloads_per_image
            or image_pull.NODEADM_MAX_CONCURRENT_DOWNLOADS_PER_IMAGE,
            "max-concurrent-unpacks-per-image": pull.max_concurrent_unpacks_per_image
            or image_pull.NODEADM_MAX_CONCURRENT_UNPACKS_PER_IMAGE,
            "concurrent-download-chunk-size": pull.concurrent_download_chunk_size
            or image_pull.NODEADM_CONCURRENT_DOWNLOAD_CHUNK_SIZE,
            "discard-unpacked-layers": image_pull.NODEADM_DISCARD_UNPACKED_LAYERS
            if pull.discard_unpacked_layers is None
            else pull.discard_unpacked_layers,
        },
    }


def ebs_performance(group: NodeGroup) -> dict[str, int]:
    """The store volume's gp3 throughput and IOPS where above the included baseline (125 MiB/s, 3,000 IOPS); nothing
    at the baseline, so a group that keeps it renders the volume as before."""
    throughput, iops = defaults.disk_throughput(group), defaults.disk_iops(group)
    out: dict[str, int] = {}
    if iops != image_pull.GP3_BASELINE_IOPS:
        out["iops"] = iops
    if throughput != image_pull.GP3_BASELINE_MIBPS:
        out["throughput"] = throughput
    return out


def volume_initialization(group: NodeGroup) -> dict[str, int]:
    """The data volume's Provisioned Rate for Volume Initialization (ProvisionedRate): one key for a launch template's
    EBS block device and an EC2NodeClass's.
    Why: docs/stage-1.md, "Design notes", node_bootstrap.volume_initialization."""
    init = group.snapshot_initialization
    if group.data_volume_snapshot_id is None or init is None or init.mode != "ProvisionedRate":
        return {}
    rate = init.volume_initialization_rate
    return {} if rate is None else {"volumeInitializationRate": rate}


def bottlerocket_settings(group: NodeGroup, sharing: dict[str, Any] | None = None, *, karpenter: bool = False) -> str:
    """Bottlerocket TOML user data (https://bottlerocket.dev/en/os/1.54.x/api/settings/kubernetes/).

    Why: docs/stage-1.md, "Design notes", node_bootstrap.bottlerocket_settings."""
    policy, scope, cpu = topology(group)
    tables: dict[str, dict[str, Any]] = {"settings.kubernetes": {}}
    if policy != "none":
        tables["settings.kubernetes"] = {
            "cpu-manager-policy": cpu,
            "topology-manager-policy": policy,
            "topology-manager-scope": scope,
        }
        if not karpenter:
            tables["settings.kubernetes.system-reserved"] = {
                "cpu": f"{int(SYSTEM_RESERVED_CPU) * 1000}m",
                "memory": SYSTEM_RESERVED_MEMORY,
            }
    # Bottlerocket's own NVIDIA device plugin; its defaults already close the NVIDIA_VISIBLE_DEVICES escape
    # (device-list-strategy volume-mounts, visible-devices-envvar-when-unprivileged false).
    tables["settings.kubelet-device-plugins.nvidia"] = {"device-list-strategy": "volume-mounts", **(sharing or {})}
    if defaults.parallel_pull(group):
        tables.update(bottlerocket_parallel_pull(group))
    if group.local_storage == "RAID0" and not karpenter:
        tables[f"settings.bootstrap-commands.{EPHEMERAL_STORAGE_COMMAND}"] = bottlerocket_ephemeral_storage(group)
    out = []
    for name, values in tables.items():
        if not values:
            continue
        out.append(f"[{name}]")
        out += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
        out.append("")
    return "\n".join(out)


def user_data(
    group: NodeGroup,
    image_list: tuple[str, str] | None,
    sharing_toml: dict[str, Any] | None = None,
    *,
    karpenter: bool = False,
) -> str:
    """The full user data text of a group (base64-encoded by the node group builder).

    Why: docs/stage-1.md, "Design notes", node_bootstrap.user_data."""
    if group.ami_type.startswith("BOTTLEROCKET"):
        return bottlerocket_settings(group, sharing_toml, karpenter=karpenter)
    parts = [
        ("application/node.eks.aws", yaml.safe_dump(node_config(group, karpenter=karpenter), sort_keys=True)),
        ('text/x-shellscript; charset="us-ascii"', render("close-visible-devices-escape.sh.j2")),
        ('text/x-shellscript; charset="us-ascii"', render("close-dcgm-hostengine.sh.j2", unit=DCGM_PORT_UNIT)),
    ]
    if image_list is not None:
        parameter, region = image_list
        parts.append(
            (
                'text/x-shellscript; charset="us-ascii"',
                prepull_script(parameter, region, raid0=group.local_storage == "RAID0"),
            )
        )
    return _mime(parts)


# What kubelet keeps of its filesystem for itself (nodeadm's kubelet defaults, awslabs/amazon-eks-ami
# nodeadm/internal/kubelet/config.go: kubeReserved "ephemeral-storage": "1Gi" in withDefaultReservedResources,
# evictionHard "nodefs.available": "10%" in defaultKubeletSubConfig).
KUBE_RESERVED_EPHEMERAL_MIB = 1024
NODEFS_EVICTION_PERCENT = 10
_MIB = 1024 * 1024


def nodefs_mib(group: NodeGroup) -> int:
    """The size of the filesystem that holds /var/lib/kubelet (kubelet's nodefs, its `ephemeral-storage` capacity).

    Why: docs/stage-1.md, "Design notes", node_bootstrap.nodefs_mib."""
    info = catalog.lookup(group.instance_type)
    if group.local_storage == "RAID0" and info is not None and info.local_nvme_gib > 0:
        return info.local_nvme_gib * 10**9 // _MIB
    return group.disk_size_gib * 1024


def ephemeral_storage_mib(group: NodeGroup) -> int:
    """`ephemeral-storage` a node of the group offers pods (allocatable, MiB): its nodefs less kubelet's reservation
    and hard eviction threshold.

    Why: docs/stage-1.md, "Design notes", node_bootstrap.ephemeral_storage_mib."""
    total = nodefs_mib(group)
    return total - KUBE_RESERVED_EPHEMERAL_MIB - -(-total * NODEFS_EVICTION_PERCENT // 100)
