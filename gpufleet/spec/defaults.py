"""Every default that depends on the rest of the spec, resolved in one place, each with its reason.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/spec/defaults.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpufleet.facts import ami_releases, catalog, image_pull
from gpufleet.facts.stages import StageName
from gpufleet.facts.versions import COMPONENTS, default_release
from gpufleet.spec.devices import device_managing
from gpufleet.spec.fleet import (
    Fabric,
    Fleet,
    NodeGroup,
    Placement,
    PodShape,
    Team,
    TopologyPolicy,
    TopologyScope,
    WorkloadClass,
)
from gpufleet.spec.provisioning import provisioning


@dataclass(frozen=True, slots=True, kw_only=True)
class Computed:
    """One computed default: the spec field it fills, what it resolves to, and why."""

    path: str  # as in docs/spec-reference.md, e.g. nodeGroups[].topology.policy
    rule: str
    reason: str
    fields: tuple[str, ...] = ()  # the spec reference rows it is the default of, when not just `path`


PINS = Computed(
    path="versions.<component>",
    fields=tuple(f"versions.{key}" for key in COMPONENTS),
    rule="the release this gpufleet is tested with (the newest supported one in gpufleet/facts/versions.py)",
    reason=(
        "nothing floats: an omitted pin still deploys one exact release, recorded in plan.json and plan.md, so a "
        "gpufleet upgrade that bumps it shows in `gpufleet diff`"
    ),
)
# The schema's defaults of cluster.systemNodes' own fields (tests/unit/test_defaults.py holds them equal).
SYSTEM_NODES_INSTANCE_TYPE, SYSTEM_NODES_MIN, SYSTEM_NODES_MAX = "m7i.xlarge", 2, 6
SYSTEM_NODES = Computed(
    path="cluster.systemNodes",
    rule=(
        f"with mode Create, {SYSTEM_NODES_INSTANCE_TYPE}, {SYSTEM_NODES_MIN} to {SYSTEM_NODES_MAX} nodes, on the newest"
        " AL2023 standard AMI release gpufleet knows for kubernetesVersion (none with mode Existing, or when no"
        " release is known)"
    ),
    reason="every GPU group is tainted, so CoreDNS and the controllers need CPU nodes; two survive one node loss",
)
TEAM_NAMESPACE = Computed(
    path="teams[].namespace",
    rule="the team's name",
    reason="one namespace per team, named as the team, keeps its quota, queue and access readable together",
)


TOPOLOGY_POLICY = Computed(
    path="nodeGroups[].topology.policy",
    rule="restricted for Training and Inference, none otherwise",
    reason=(
        "restricted admits a pod only on the narrowest NUMA set that holds its GPUs, NICs and pinned CPUs, and still "
        "admits a full-node 8-GPU pod on a dual-socket type, which single-numa-node rejects outright (kubernetes "
        "pkg/kubelet/cm/topologymanager policy_restricted.go, policy_single_numa_node.go)"
    ),
)
TOPOLOGY_SCOPE = Computed(
    path="nodeGroups[].topology.scope",
    rule="pod when the policy is not none, else container",
    reason="a pod's GPUs, NICs and CPUs are aligned together only at pod scope",
)
POD_SHAPE = Computed(
    path="nodeGroups[].topology.podShape",
    rule="OneNumaNode when topology.policy is single-numa-node, else FullNode",
    reason=(
        "single-numa-node admits a pod only when one NUMA node holds all its GPUs, NICs and pinned CPUs (kubernetes"
        " pkg/kubelet/cm/topologymanager policy_single_numa_node.go), so the work such a group runs is one NUMA node"
        " per pod, and the gate and the canonical pod take that shape"
    ),
)
PLACEMENT = Computed(
    path="nodeGroups[].topology.placement",
    rule=(
        "Preferred on a fixed-size (minSize = maxSize) EFA/RDMA group of an instance type EC2 reports topology for, "
        "with devices DevicePlugin, when every team with quota on it has quota only on such groups; else None"
    ),
    reason=(
        "Kueue TAS counts only Ready nodes and creates no pod for the autoscaler, so it only helps a fixed-size group;"
        " a ClusterQueue mixing TAS and non-TAS flavors refuses pod sets without a topology request (kueue v0.19.2"
        " pkg/scheduler/flavorassigner/tas_flavorassigner.go)"
    ),
)
DESIRED_SIZE = Computed(
    path="nodeGroups[].scaling.desiredSize",
    rule="minSize",
    reason="the group starts at its floor and the autoscaler grows it on demand",
)
MAX_UNAVAILABLE = Computed(
    path="nodeGroups[].update.maxUnavailable",
    rule="1 (when maxUnavailablePercentage is not set either)",
    reason="EKS's own default: one node of the group is replaced at a time during an update",
)
GDRCOPY = Computed(
    path="versions.driver.gdrCopy",
    rule="Enabled with driver source Operator when a Training group has fabric EFA, else Disabled",
    reason=(
        "NCCL, NVSHMEM and libfabric's EFA provider use GDRCopy for small GPU-memory copies (ai-on-eks enables it "
        "for EFA training); the GPU Operator loads gdrdrv only beside the driver it installs (gpufleet.versions "
        "GpuOperatorRelease.gdrcopy_needs_operator_driver)"
    ),
)
TEAM_PRIORITIES = Computed(
    path="teams[].priorities",
    rule=(
        "every preemptible admission.priorities class, and the non-preemptible ones only when the team has a quota on"
        " an Inference node group"
    ),
    reason=(
        "a non-preemptible class wins every cohort contention, is immune to borrowing preemption and, through its"
        " PriorityClass's PreemptLowerPriority, lets the kube-scheduler evict other teams' gang pods: it is for"
        " serving, which only a team with Inference quota runs"
    ),
)
IP_POOL = Computed(
    path="network.rdma.networks[].ipPool",
    rule="the network's name",
    reason="one nv-ipam IPPool per secondary network, named after it, is the Network Operator's own example layout",
)
TRAINER = Computed(
    path="workloads.trainer",
    rule="Install when the fleet has a Training group, else None",
    reason=(
        "training teams submit TrainJobs (or the runtimes' JobSets); without the controller and CRDs the API server "
        "refuses them (`no matches for kind`), as ai-on-eks and the HyperPod setup install Kubeflow training"
    ),
)
JOB_SET = Computed(
    path="workloads.jobSet",
    rule="Install when the fleet has a Training group or workloads.trainer resolves to Install, else None",
    reason=(
        "Kubeflow Trainer runs every TrainJob as a JobSet, and multi-node jobs that are not TrainJobs are JobSets; "
        "gpufleet installs JobSet itself (the Trainer chart's jobset.install is false), so one pin owns it"
    ),
)
LEADER_WORKER_SET = Computed(
    path="workloads.leaderWorkerSet",
    rule=(
        "Install when workloads.inferenceReplicaGpus gives an Inference group more GPUs per replica than one of its "
        "nodes has, else None"
    ),
    reason=(
        "a replica larger than a node is a leader and workers started, admitted and restarted together: a "
        "LeaderWorkerSet, which Kueue admits as one pod group per replica"
    ),
)
IMAGE_PULL_MODE = Computed(
    path="nodeGroups[].imagePull.mode",
    rule=(
        "Parallel where the AMI release has it (AL2023 v20250821, Bottlerocket 1.44.0), the instance type is one"
        " nodeadm enables it on (AL2023: 4 vCPUs and 7 GiB), the volume holding the store is not set below 600 MiB/s"
        " and no dataVolumeSnapshotId is restored; else Default"
    ),
    reason=(
        "GPU images are large: the SOCI snapshotter's parallel pull took a 10.8 GB image in 60 s on AL2023 and 45 s on"
        " Bottlerocket where containerd's own pull took 112 s (aws-samples/karpenter-blueprints soci-snapshotter)"
    ),
)
DISK_THROUGHPUT = Computed(
    path="nodeGroups[].diskThroughputMiBps",
    rule="600 where the group pulls in parallel onto its EBS volume, else 125 (gp3's baseline)",
    reason=(
        "parallel pull writes each layer to disk before unpacking it and is slower than containerd's pull below about"
        " 600 MiB/s (nodeadm doc/examples.md); with RAID0 on AL2023 (v20251217 on) and on a Bottlerocket launch"
        " template (1.46.0 on) the store is on the array"
    ),
)
DISK_IOPS = Computed(
    path="nodeGroups[].diskIops",
    rule="3000 (gp3's baseline), or the least the throughput needs at 0.25 MiB/s per IOPS",
    reason="IOPS above 3000 are billed, and gp3 allows at most 0.25 MiB/s of throughput per provisioned IOPS",
)
COMPUTED: tuple[Computed, ...] = (
    SYSTEM_NODES,
    PINS,
    GDRCOPY,
    TOPOLOGY_POLICY,
    TOPOLOGY_SCOPE,
    POD_SHAPE,
    PLACEMENT,
    DESIRED_SIZE,
    MAX_UNAVAILABLE,
    TEAM_NAMESPACE,
    TEAM_PRIORITIES,
    IP_POOL,
    JOB_SET,
    TRAINER,
    LEADER_WORKER_SET,
    IMAGE_PULL_MODE,
    DISK_THROUGHPUT,
    DISK_IOPS,
)


def fill(data: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """Schema-valid data with static defaults filled -> the same with the computed defaults the model is built
    with filled too (component pins, the system node group, team namespaces), and the spec paths it filled."""
    filled: list[str] = []
    cluster = dict(data["cluster"])
    if "systemNodes" not in cluster and cluster["mode"] == "Create":
        release = ami_releases.newest(ami_releases.SYSTEM_NODES_AMI_TYPE, cluster["kubernetesVersion"])
        if release is not None:
            cluster["systemNodes"] = {
                "instanceType": SYSTEM_NODES_INSTANCE_TYPE,
                "releaseVersion": release,
                "minSize": SYSTEM_NODES_MIN,
                "maxSize": SYSTEM_NODES_MAX,
            }
            filled.append(SYSTEM_NODES.path)
    versions = dict(data["versions"])
    for key, component in COMPONENTS.items():
        if key not in versions:
            versions[key] = {component.pin_field: default_release(key)}
            filled.append(f"versions.{key}")
    teams = []
    for team in data["teams"]:
        if "namespace" not in team:
            team = {**team, "namespace": team["name"]}
            filled.append(f"teams[{team['name']}].namespace")
        teams.append(team)
    out = {**data, "cluster": cluster, "versions": versions, "teams": teams}
    rdma = data.get("network", {}).get("rdma")
    if rdma is not None and "networks" in rdma:
        networks = [{"ipPool": n["name"], **n} for n in rdma["networks"]]
        out["network"] = {**data["network"], "rdma": {**rdma, "networks": networks}}
    return out, frozenset(filled)


def team_priorities(fleet: Fleet, team: Team) -> tuple[str, ...]:
    """teams[].priorities, resolved (gpufleet.spec.defaults.TEAM_PRIORITIES), in admission.priorities order."""
    if team.priorities is not None:
        return tuple(p.name for p in fleet.admission.priorities if p.name in team.priorities)
    classes = {g.name: g.workload_class for g in fleet.node_groups}
    serves = any(classes.get(q.node_group) is WorkloadClass.INFERENCE for q in team.quotas)
    return tuple(p.name for p in fleet.admission.priorities if p.preemptible or serves)


def serving_readiness_probe(fleet: Fleet, team: Team) -> str:
    """teams[].servingReadinessProbe, or admission.servingReadinessProbe: Deny | Warn | Off."""
    return team.serving_readiness_probe or fleet.admission.serving_readiness_probe


def topology_policy(group: NodeGroup) -> TopologyPolicy:
    if group.topology.policy is not None:
        return group.topology.policy
    return "restricted" if group.workload_class in (WorkloadClass.TRAINING, WorkloadClass.INFERENCE) else "none"


def pod_shape(group: NodeGroup) -> PodShape:
    """topology.podShape, resolved (POD_SHAPE)."""
    if group.topology.pod_shape is not None:
        return group.topology.pod_shape
    return "OneNumaNode" if topology_policy(group) == "single-numa-node" else "FullNode"


def topology_scope(group: NodeGroup) -> TopologyScope:
    if group.topology.scope is not None:
        return group.topology.scope
    return "pod" if topology_policy(group) != "none" else "container"


def _tas_capable(group: NodeGroup) -> bool:
    """A group whose capacity Kueue TAS can count: an EFA/RDMA group of a type EC2 reports topology for, with its
    size fixed (minSize = maxSize).

    Why: docs/architecture.md, "Design notes", defaults._tas_capable."""
    if group.topology.placement is not None:
        return group.topology.placement != "None"
    return (
        group.fabric in (Fabric.EFA, Fabric.RDMA)
        and group.instance_type in catalog.TOPOLOGY_INSTANCE_TYPES
        and group.min_size == group.max_size
        # Kueue TAS does not count DRA devices (gpufleet.spec.devices DeviceManaging.kueue_tas).
        and device_managing(group).kueue_tas
    )


def placement(fleet: Fleet, group: NodeGroup) -> Placement:
    """topology.placement, resolved: the spec's value, else Preferred where TAS can count the group's capacity and
    every team with quota on it has quota only on such groups, else None.

    Why: docs/architecture.md, "Design notes", defaults.placement."""
    if group.topology.placement is not None:
        return group.topology.placement
    if not _tas_capable(group):
        return "None"
    for team in fleet.teams:
        groups = [fleet.node_group(q.node_group) for q in team.quotas]
        if group in groups and not all(_tas_capable(g) for g in groups):
            return "None"
    return "Preferred"


def gdrcopy(fleet: Fleet) -> bool:
    """versions.driver.gdrCopy, resolved."""
    if fleet.versions.gdrcopy is not None:
        return fleet.versions.gdrcopy == "Enabled"
    efa_training = any(g.fabric is Fabric.EFA and g.workload_class is WorkloadClass.TRAINING for g in fleet.node_groups)
    return fleet.versions.driver_source == "Operator" and efa_training


def dispatch_groups(fleet: Fleet) -> tuple[NodeGroup, ...]:
    """The node groups the workload APIs are resolved over: the fleet's own, or, on any cluster of clusters[], every
    worker's.

    Why: docs/architecture.md, "Design notes", defaults.dispatch_groups."""
    return fleet.multikueue.dispatched if fleet.multikueue is not None else fleet.node_groups


def trainer(fleet: Fleet) -> bool:
    """workloads.trainer, resolved."""
    if fleet.workloads.trainer is not None:
        return fleet.workloads.trainer == "Install"
    return any(g.workload_class is WorkloadClass.TRAINING for g in dispatch_groups(fleet))


def job_set(fleet: Fleet) -> bool:
    """workloads.jobSet, resolved."""
    if fleet.workloads.job_set is not None:
        return fleet.workloads.job_set == "Install"
    return trainer(fleet) or any(g.workload_class is WorkloadClass.TRAINING for g in dispatch_groups(fleet))


def multi_node_replicas(fleet: Fleet, groups: tuple[NodeGroup, ...] | None = None) -> list[str]:
    """Inference groups (of `groups`, else the fleet's) whose serving replica (workloads.inferenceReplicaGpus) needs
    more GPUs than a node has."""
    out = []
    for group in fleet.node_groups if groups is None else groups:
        info = catalog.lookup(group.instance_type)
        gpus = fleet.workloads.inference_replica_gpus.get(group.name)
        if group.workload_class is WorkloadClass.INFERENCE and info and gpus and gpus > info.gpu_count:
            out.append(group.name)
    return out


def leader_worker_set(fleet: Fleet) -> bool:
    """workloads.leaderWorkerSet, resolved."""
    if fleet.workloads.leader_worker_set is not None:
        return fleet.workloads.leader_worker_set == "Install"
    return bool(multi_node_replicas(fleet, dispatch_groups(fleet)))


def desired_size(group: NodeGroup) -> int:
    return group.desired_size if group.desired_size is not None else group.min_size


def max_unavailable(group: NodeGroup) -> int:
    return group.update.max_unavailable or 1


# AL2023 nodeadm's setup-local-disks bind-mounts the SOCI snapshotter's store (/var/lib/soci-snapshotter-grpc) onto the
# RAID0 array from release v20251217 (awslabs/amazon-eks-ami CHANGELOG.md, "feat: mount soci directory to instance
# store", #2548; templates/al2023/runtime/bin/setup-local-disks).
# Bottlerocket: docs/architecture.md, "Design notes", defaults.store_on_ebs.
SOCI_ON_RAID0_AL2023_DATE = "20251217"


def store_on_ebs(group: NodeGroup) -> bool:
    """Whether the group's image store (containerd's, or the SOCI snapshotter's in parallel mode) is on its EBS volume
    rather than the instance-store array."""
    if group.local_storage != "RAID0":
        return True
    info = catalog.lookup(group.instance_type)
    if info is None or info.local_nvme_gib == 0:
        return True
    if group.ami_type.startswith("BOTTLEROCKET"):
        return group.provisioner == "Karpenter" or not image_pull.bottlerocket_default_bind(group.ami_release_version)
    return group.ami_release_version.rsplit("-", 1)[-1] < SOCI_ON_RAID0_AL2023_DATE


def _parallel_possible(group: NodeGroup) -> bool:
    if image_pull.parallel_floor(group.ami_type, group.ami_release_version) is not None:
        return False
    if group.data_volume_snapshot_id is not None:
        return False
    if not group.ami_type.startswith("BOTTLEROCKET"):
        info = catalog.lookup(group.instance_type)
        if info is not None and (
            info.vcpus < image_pull.AL2023_MIN_VCPUS or info.memory_mib < image_pull.AL2023_MIN_MEMORY_GIB * 1024
        ):
            return False
    given = group.disk_throughput_mibps
    return given is None or given >= image_pull.PARALLEL_MIN_MIBPS or not store_on_ebs(group)


def image_pull_mode(group: NodeGroup) -> str:
    if group.image_pull.mode is not None:
        return group.image_pull.mode
    return "Parallel" if _parallel_possible(group) else "Default"


def parallel_pull(group: NodeGroup) -> bool:
    return image_pull_mode(group) == "Parallel"


def disk_throughput(group: NodeGroup) -> int:
    if group.disk_throughput_mibps is not None:
        return group.disk_throughput_mibps
    if parallel_pull(group) and store_on_ebs(group):
        return image_pull.PARALLEL_MIN_MIBPS
    return image_pull.GP3_BASELINE_MIBPS


def disk_iops(group: NodeGroup) -> int:
    if group.disk_iops is not None:
        return group.disk_iops
    return max(image_pull.GP3_BASELINE_IOPS, math.ceil(disk_throughput(group) / image_pull.GP3_MIBPS_PER_IOPS))


def applied(
    fleet: Fleet, included: tuple[StageName, ...], deployed: Mapping[str, str]
) -> list[tuple[str, str, Computed]]:
    """(field, resolved value, default) for every computed default this fleet took, in spec order: pins only of the
    components the environment deploys (`deployed`: component key -> version, gpufleet.plan.pins), placement only where
    the admission stage is in `included` and there are teams (nothing reads them otherwise)."""
    out: list[tuple[str, str, Computed]] = []
    nodes = fleet.cluster.system_nodes
    if SYSTEM_NODES.path in fleet.defaulted and nodes is not None:
        value = (
            f"{nodes.instance_type}, {nodes.min_size} to {nodes.max_size} nodes, AMI release {nodes.release_version}"
        )
        out.append((SYSTEM_NODES.path, value, SYSTEM_NODES))
    out += [(f"versions.{key}", version, PINS) for key, version in deployed.items() if key in fleet.versions.defaulted]
    if fleet.versions.gdrcopy is None:
        out.append(("versions.driver.gdrCopy", "Enabled" if gdrcopy(fleet) else "Disabled", GDRCOPY))
    for group in fleet.node_groups:
        at = f"nodeGroups[{group.name}]"
        if group.topology.policy is None:
            out.append((f"{at}.topology.policy", topology_policy(group), TOPOLOGY_POLICY))
        if group.topology.scope is None:
            out.append((f"{at}.topology.scope", topology_scope(group), TOPOLOGY_SCOPE))
        if group.topology.pod_shape is None and pod_shape(group) == "OneNumaNode":
            out.append((f"{at}.topology.podShape", pod_shape(group), POD_SHAPE))
        if group.topology.placement is None and "admission" in included and fleet.teams:
            out.append((f"{at}.topology.placement", placement(fleet, group), PLACEMENT))
        if group.image_pull.mode is None:
            out.append((f"{at}.imagePull.mode", image_pull_mode(group), IMAGE_PULL_MODE))
        if group.disk_throughput_mibps is None:
            out.append((f"{at}.diskThroughputMiBps", str(disk_throughput(group)), DISK_THROUGHPUT))
        if group.disk_iops is None:
            out.append((f"{at}.diskIops", str(disk_iops(group)), DISK_IOPS))
        if not provisioning(group).auto_scaling_group:
            continue  # a NodePool has no desired size and no update config (validate refuses both on the group)
        if group.desired_size is None:
            out.append((f"{at}.scaling.desiredSize", str(desired_size(group)), DESIRED_SIZE))
        if group.update.max_unavailable is None and group.update.max_unavailable_percentage is None:
            out.append((f"{at}.update.maxUnavailable", str(max_unavailable(group)), MAX_UNAVAILABLE))
    out += [
        (field, team.namespace, TEAM_NAMESPACE)
        for team in fleet.teams
        if (field := f"teams[{team.name}].namespace") in fleet.defaulted
    ]
    if "admission" in included:
        out += [
            (f"teams[{team.name}].priorities", ", ".join(team_priorities(fleet, team)) or "none", TEAM_PRIORITIES)
            for team in fleet.teams
            if team.priorities is None
        ]
    if "admission" in included and fleet.teams:
        w = fleet.workloads
        for path, given, resolved, default in (
            ("workloads.jobSet", w.job_set, job_set(fleet), JOB_SET),
            ("workloads.trainer", w.trainer, trainer(fleet), TRAINER),
            ("workloads.leaderWorkerSet", w.leader_worker_set, leader_worker_set(fleet), LEADER_WORKER_SET),
        ):
            if given is None:
                out.append((path, "Install" if resolved else "None", default))
    return out
