"""What one idle node of a group offers pods, computed by the model itself from what the plan applies and upstream
facts, never by the renderer's helpers (a model that reuses the renderer cannot catch its bugs).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/node_resources.py.
"""

from __future__ import annotations

import base64
import binascii
import email
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpufleet.facts import catalog, stages
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate import claims
from gpufleet.spec.devices import device_managing
from gpufleet.spec.fleet import Fabric, NodeGroup, SharingStrategy

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
DAEMONSET_CPU_MILLI, DAEMONSET_MEMORY_MIB = 1000, 2048
EVICTION_MEMORY_MIB = 100
KUBE_RESERVED_EPHEMERAL_MIB, NODEFS_EVICTION_PERCENT = 1024, 10
EFA_HUGEPAGES_MIB = 5128 * 2
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSetup:
    """What the rendered launch template gives a node."""

    system_reserved_cpu: int = 0  # millicores
    system_reserved_memory: int = 0  # MiB
    topology_policy: str = "none"  # kubelet defaults
    topology_scope: str = "container"
    cpu_manager_policy: str = "none"
    raid0: bool = False
    volume_gib: int | None = None  # the volume that holds /var/lib/kubelet when not on instance store
    efa_interfaces: int = 0
    # Bottlerocket runs its own NVIDIA device plugin, configured in its settings (kubelet-device-plugins.nvidia:
    # device-sharing-strategy, time-slicing.replicas; bottlerocket.dev 1.54.x api/settings/kubelet-device-plugins)
    plugin_replicas: int | None = None


def _cpu_milli(value: Any) -> int:
    text = str(value)
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _mib(value: Any) -> int:
    text = str(value)
    for suffix, factor in (("Gi", 1024), ("Mi", 1), ("Ki", 1 / 1024)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(text) // _MIB


def _resources(plan: RolloutPlan) -> dict[str, Mapping[str, Any]]:
    return {r.id: r.args for s in plan.stages for r in s.content.resources}


def _objects(plan: RolloutPlan, kind: str) -> list[Mapping[str, Any]]:
    return [
        r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if isinstance(r.args.get("object"), Mapping) and r.args["object"].get("kind") == kind
    ]


def _user_data(text: str) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """(NodeConfig spec, Bottlerocket settings) of the launch template's user data."""
    try:
        decoded = base64.b64decode(text, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        decoded = text
    if decoded.lstrip().startswith("MIME-Version"):
        message = email.message_from_string(decoded)
        for part in message.walk():
            if part.get_content_type() == "application/node.eks.aws":
                payload = part.get_payload()
                config = yaml.safe_load(payload if isinstance(payload, str) else "")
                if isinstance(config, Mapping) and config.get("kind") == "NodeConfig":
                    return config.get("spec") or {}, None
        return None, None
    try:
        settings = tomllib.loads(decoded).get("settings")
    except tomllib.TOMLDecodeError:
        return None, None
    return None, settings if isinstance(settings, Mapping) else None


def node_setup(plan: RolloutPlan, node_group_args: Mapping[str, Any]) -> NodeSetup:
    ref = (node_group_args.get("launchTemplate") or {}).get("id")
    template = _resources(plan).get(getattr(ref, "resource", ""))
    if template is None:
        return NodeSetup(volume_gib=node_group_args.get("diskSize"))
    volumes = [int((b.get("ebs") or {}).get("volumeSize") or 0) for b in template.get("blockDeviceMappings") or []]
    efa = sum(1 for n in template.get("networkInterfaces") or [] if n.get("interfaceType") in ("efa", "efa-only"))
    config, settings = _user_data(str(template.get("userData") or ""))
    if config is not None:
        kubelet = (config.get("kubelet") or {}).get("config") or {}
        reserved = kubelet.get("systemReserved") or {}
        return NodeSetup(
            system_reserved_cpu=_cpu_milli(reserved.get("cpu", 0)),
            system_reserved_memory=_mib(reserved.get("memory", "0Mi")),
            topology_policy=kubelet.get("topologyManagerPolicy", "none"),
            topology_scope=kubelet.get("topologyManagerScope", "container"),
            cpu_manager_policy=kubelet.get("cpuManagerPolicy", "none"),
            raid0=((config.get("instance") or {}).get("localStorage") or {}).get("strategy") == "RAID0",
            volume_gib=volumes[0] if volumes else None,  # AL2023: the root volume holds /var/lib/kubelet
            efa_interfaces=efa,
        )
    if settings is not None:
        k8s = settings.get("kubernetes") or {}
        reserved = k8s.get("system-reserved") or {}
        commands = settings.get("bootstrap-commands") or {}
        raid0 = any(
            ["apiclient", "ephemeral-storage", "init"] in (c.get("commands") or [])
            for c in commands.values()
            if isinstance(c, Mapping)
        )
        plugin = (settings.get("kubelet-device-plugins") or {}).get("nvidia") or {}
        strategy = plugin.get("device-sharing-strategy")
        replicas = int((plugin.get(strategy) or {}).get("replicas", 1)) if strategy in ("time-slicing", "mps") else 1
        return NodeSetup(
            plugin_replicas=replicas,
            system_reserved_cpu=_cpu_milli(reserved.get("cpu", 0)),
            system_reserved_memory=_mib(reserved.get("memory", "0Mi")),
            topology_policy=k8s.get("topology-manager-policy", "none"),
            topology_scope=k8s.get("topology-manager-scope", "container"),
            cpu_manager_policy=k8s.get("cpu-manager-policy", "none"),
            raid0=raid0,
            volume_gib=volumes[-1] if volumes else None,  # Bottlerocket: the data volume, after the OS volume
            efa_interfaces=efa,
        )
    return NodeSetup(volume_gib=volumes[0] if volumes else None, efa_interfaces=efa)


def karpenter_setup(node_class: Mapping[str, Any]) -> NodeSetup:
    """A Karpenter group's node setup from its EC2NodeClass spec: Topology and CPU managers, systemReserved, RAID0,
    the kubelet's volume and EFA devices.

    Why: docs/explain-model.md, "Design notes", node_resources.karpenter_setup."""
    volumes = [
        _mib(str((b.get("ebs") or {}).get("volumeSize") or "0Gi")) // 1024
        for b in node_class.get("blockDeviceMappings") or []
    ]
    interfaces = node_class.get("networkInterfaces") or []
    reserved = (node_class.get("kubelet") or {}).get("systemReserved") or {}
    config, settings = _user_data(str(node_class.get("userData") or ""))
    kubelet = ((config or {}).get("kubelet") or {}).get("config") or {}
    k8s = (settings or {}).get("kubernetes") or {}
    bottlerocket = settings is not None
    plugin = ((settings or {}).get("kubelet-device-plugins") or {}).get("nvidia") or {}
    strategy = plugin.get("device-sharing-strategy")
    replicas = int((plugin.get(strategy) or {}).get("replicas", 1)) if strategy in ("time-slicing", "mps") else 1
    return NodeSetup(
        plugin_replicas=replicas if bottlerocket else None,
        system_reserved_cpu=_cpu_milli(reserved.get("cpu", 0)),
        system_reserved_memory=_mib(reserved.get("memory", "0Mi")),
        topology_policy=k8s.get("topology-manager-policy") or kubelet.get("topologyManagerPolicy", "none"),
        topology_scope=k8s.get("topology-manager-scope") or kubelet.get("topologyManagerScope", "container"),
        cpu_manager_policy=k8s.get("cpu-manager-policy") or kubelet.get("cpuManagerPolicy", "none"),
        raid0=node_class.get("instanceStorePolicy") == "RAID0",
        volume_gib=(volumes[-1] if bottlerocket else volumes[0]) if volumes else None,
        # The node's EFA devices are its efa-only interfaces: Karpenter launches the listed interfaces as written,
        # the primary `interface` an ENA interface without an EFA device (aws/karpenter-provider-aws
        # pkg/providers/launchtemplate/launchtemplate.go generateNetworkInterfaces @ v1.14.1).
        efa_interfaces=sum(1 for n in interfaces if n.get("interfaceType") == "efa-only"),
    )


def _karpenter_values(plan: RolloutPlan) -> Mapping[str, Any]:
    for s in plan.included():
        for r in s.content.resources:
            if str(r.args.get("chart", "")).rsplit("/", 1)[-1] == "karpenter":
                return r.args.get("values") or {}
    return {}


def _count(value: Any) -> int:
    """A NodeOverlay capacity quantity in the model's units: MiB for hugepages (…Mi, …Gi), else a count."""
    text = str(value)
    return _mib(text) if text.endswith(("Mi", "Gi", "Ki")) else int(text)


def _overlay_selects(requirements: list[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """Whether a NodeOverlay's requirements admit an instance type of the pool: every requirement (In, NotIn,
    Exists, DoesNotExist over the pool's labels and the instance type's well-known ones); an empty list admits all
    (kubernetes-sigs/karpenter pkg/controllers/nodeoverlay/controller.go getOverlaidOfferings @ v1.14.1)."""
    for req in requirements:
        key, op, values = str(req.get("key")), req.get("operator"), [str(v) for v in req.get("values") or []]
        present = key in labels
        ok = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(op), False)
        if not ok:
            return False
    return True


def karpenter_capacity(
    plan: RolloutPlan,
    group: NodeGroup,
    node_class: Mapping[str, Any],
    labels: Mapping[str, str],
    node: Mapping[str, int],
) -> dict[str, int]:
    """What Karpenter's scheduling simulation believes one instance of the pool offers, which decides whether it
    makes a NodeClaim for a pending pod (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling: an
    instance type is a candidate only when resources.Fits the pod's requests in its allocatable, and Fits counts a
    resource the instance type does not list as 0).

    Why: docs/explain-model.md, "Design notes", node_resources.karpenter_capacity."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    interfaces = node_class.get("networkInterfaces")
    efa = (
        sum(1 for n in interfaces if n.get("interfaceType") == "efa-only")
        if interfaces is not None
        else info.max_efa_interfaces
    )
    out: dict[str, int] = {
        "cpu": info.vcpus * 1000,
        "memory": info.memory_mib,
        "pods": node.get("pods", 0),
        "ephemeral-storage": node.get("ephemeral-storage", 0),
        GPU: info.gpu_count,
    }
    if efa:
        out[EFA] = efa
    gates = (_karpenter_values(plan).get("settings") or {}).get("featureGates") or {}
    if gates.get("nodeOverlay") is True:
        overlays = sorted(
            _objects(plan, "NodeOverlay"), key=lambda o: (-int(o["spec"].get("weight") or 0), o["metadata"]["name"])
        )
        applied: dict[str, int] = {}
        for overlay in overlays:
            spec = overlay["spec"]
            if _overlay_selects(spec.get("requirements") or [], labels):
                for resource, value in (spec.get("capacity") or {}).items():
                    applied.setdefault(str(resource), _count(value))  # the higher weight wins
        out.update(applied)
    return out


def kube_reserved_cpu_milli(vcpus: int) -> int:
    """nodeadm getCPUMillicoresToReserve."""
    total, reserved = vcpus * 1000, 0
    for start, end, per_10000 in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, total, 25)):
        if total > start:
            reserved += (min(total, end) - start) * per_10000 // 10000
    return reserved


def ephemeral_storage_mib(group: NodeGroup, setup: NodeSetup) -> int:
    """kubelet's nodefs less kubeReserved and evictionHard: the instance-store array under RAID0 (EC2 reports its
    size in GB), else the volume that holds /var/lib/kubelet."""
    info = catalog.lookup(group.instance_type)
    if setup.raid0 and info is not None and info.local_nvme_gib > 0:
        total = info.local_nvme_gib * 10**9 // _MIB
    else:
        total = (setup.volume_gib or 0) * 1024
    return total - KUBE_RESERVED_EPHEMERAL_MIB - -(-total * NODEFS_EVICTION_PERCENT // 100)


def _gpu_operator_values(plan: RolloutPlan) -> Mapping[str, Any]:
    for s in plan.included():
        for r in s.content.resources:
            if str(r.args.get("chart", "")).rsplit("/", 1)[-1] == "gpu-operator":
                return r.args.get("values") or {}
    return {}


def _config_map(plan: RolloutPlan, name: str) -> Mapping[str, Any]:
    return next((o.get("data") or {} for o in _objects(plan, "ConfigMap") if o["metadata"]["name"] == name), {})


def mig_slices(plan: RolloutPlan, labels: Mapping[str, str], gpus: int) -> list[tuple[int, str, int]]:
    """(GPU index, resource, slices) of the mig-parted config the node's nvidia.com/mig.config label selects."""
    chosen = labels.get("nvidia.com/mig.config")
    text = _config_map(plan, "gpufleet-mig-config").get("config.yaml")
    if not chosen or not text:
        return []
    mixed = (_gpu_operator_values(plan).get("mig") or {}).get("strategy") == "mixed"
    out = []
    for entry in (yaml.safe_load(text).get("mig-configs") or {}).get(chosen) or []:
        if not entry.get("mig-enabled"):
            continue
        devices = entry.get("devices") or []
        for gpu in range(gpus) if devices == "all" else devices:
            for profile, count in (entry.get("mig-devices") or {}).items():
                out.append((int(gpu), f"nvidia.com/mig-{profile}" if mixed else GPU, int(count)))
    return out


def _replicas(plan: RolloutPlan, labels: Mapping[str, str]) -> int:
    """Replicas of nvidia.com/gpu in the device-plugin config the node's label selects (time-slicing or MPS)."""
    name = labels.get("nvidia.com/device-plugin.config")
    text = _config_map(plan, "gpufleet-device-plugin-config").get(name or "")
    if not text:
        return 1
    sharing = (yaml.safe_load(text) or {}).get("sharing") or {}
    for mode in ("timeSlicing", "mps"):
        for r in (sharing.get(mode) or {}).get("resources") or []:
            if r.get("name") == GPU:
                return int(r.get("replicas", 1))
    return 1


def extended(plan: RolloutPlan, group: NodeGroup, labels: Mapping[str, str], setup: NodeSetup) -> dict[str, int]:
    """The extended resources (and hugepages) one node advertises in this environment."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    if device_managing(group).claims:
        # devices DRA: the drivers publish the GPUs (stage 1) and EFA interfaces (the network stage) as devices of
        # their DeviceClasses, no extended resource (gpufleet.simulate.claims); the EFA setup's huge pages stay.
        efa = bool(stages.included("network", plan.through) and group.fabric is Fabric.EFA and setup.efa_interfaces)
        devices = claims.published(info.gpu_count, setup.efa_interfaces, efa_driver=efa)
        return {**devices, "hugepages-2Mi": EFA_HUGEPAGES_MIB} if efa else devices
    out: dict[str, int] = {GPU: info.gpu_count}
    if stages.included("sharing", plan.through):
        if group.sharing.strategy is SharingStrategy.MIG:
            slices = mig_slices(plan, labels, info.gpu_count)
            if slices:
                out = {}
                for _, resource, n in slices:
                    out[resource] = out.get(resource, 0) + n
        elif group.sharing.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
            replicas = setup.plugin_replicas if setup.plugin_replicas is not None else _replicas(plan, labels)
            out[GPU] = info.gpu_count * replicas
    if stages.included("network", plan.through):
        if group.fabric is Fabric.EFA and setup.efa_interfaces:
            out[EFA] = setup.efa_interfaces
            out["hugepages-2Mi"] = EFA_HUGEPAGES_MIB
        rdma = plan.fleet.network.rdma
        if group.fabric is Fabric.RDMA and rdma is not None:
            out[f"rdma/{rdma.resource_name}"] = rdma.hca_max
    return out


def allocatable(plan: RolloutPlan, group: NodeGroup, labels: Mapping[str, str], setup: NodeSetup) -> dict[str, int]:
    """cpu (millicores), memory (MiB), pods, ephemeral-storage (MiB) and the extended resources a workload pod may
    request on one idle node."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    max_pods = catalog.max_pods(group.instance_type)
    return {
        "cpu": info.vcpus * 1000
        - kube_reserved_cpu_milli(info.vcpus)
        - setup.system_reserved_cpu
        - DAEMONSET_CPU_MILLI,
        "memory": info.memory_mib
        - (11 * max_pods + 255)
        - EVICTION_MEMORY_MIB
        - setup.system_reserved_memory
        - DAEMONSET_MEMORY_MIB,
        "pods": max_pods,
        "ephemeral-storage": ephemeral_storage_mib(group, setup),
        **extended(plan, group, labels, setup),
    }


def numa_nodes(group: NodeGroup) -> int:
    info = catalog.lookup(group.instance_type)
    return 2 if info is not None and info.gpu_count >= 8 else 1
