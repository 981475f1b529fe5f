"""The typed, frozen fleet model. Built once from schema-valid, default-filled data (`Fleet.create`).

Why, with sources: docs/spec.md, "Design notes", gpufleet/spec/fleet.py.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from gpufleet.base.errors import Path
from gpufleet.facts.stages import StageName
from gpufleet.facts.versions import COMPONENTS
from gpufleet.spec.fields import at, build, derived, keyed, rest

# Closed sets of the spec, spelled as in the YAML (schemas/fleet.schema.json enums; tests/unit/test_spec_types.py
# holds them equal), so mypy --strict checks every comparison against them.
TaintEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]
WarmPoolState = Literal["Stopped", "Running", "Hibernated"]
TopologyPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]
TopologyScope = Literal["container", "pod"]
Placement = Literal["None", "Preferred", "Required"]
PodShape = Literal["FullNode", "OneNumaNode"]
UpdateStrategy = Literal["Default", "Minimal"]
AmiType = Literal[
    "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
    "BOTTLEROCKET_x86_64_NVIDIA",
    "BOTTLEROCKET_ARM_64_NVIDIA",
    "AL2023_x86_64_STANDARD",
    "AL2023_ARM_64_STANDARD",
]
LocalStorage = Literal["None", "RAID0"]
QueueingStrategy = Literal["BestEffortFIFO", "StrictFIFO"]
WithinClusterQueue = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimWithinCohort = Literal["Never", "LowerPriority", "Any"]
BorrowWithinCohort = Literal["Never", "LowerPriority"]
ClusterMode = Literal["Create", "Existing"]
EndpointAccess = Literal["Private", "PublicAndPrivate"]
AutoscalerChoice = Literal["Install", "None"]
DriverSource = Literal["Preinstalled", "Operator"]
GdrCopy = Literal["Enabled", "Disabled"]
MigStrategy = Literal["Single", "Mixed"]
Pinning = Literal["Tested", "Explicit"]
PrometheusChoice = Literal["Install", "Existing"]
AutoRepair = Literal["Enabled", "Disabled"]
Remediation = Literal["CordonAndDrain", "CordonOnly", "None"]
LinkType = Literal["InfiniBand", "Ethernet"]
InstallChoice = Literal["Install", "None"]
Provisioner = Literal["ManagedNodeGroup", "Karpenter"]
Devices = Literal["DevicePlugin", "DRA"]


class WorkloadClass(StrEnum):
    TRAINING = "Training"
    INFERENCE = "Inference"
    INTERACTIVE = "Interactive"
    BATCH = "Batch"


class Fabric(StrEnum):
    NONE = "None"
    EFA = "EFA"
    RDMA = "RDMA"


class SharingStrategy(StrEnum):
    EXCLUSIVE = "Exclusive"
    TIME_SLICING = "TimeSlicing"
    MPS = "MPS"
    MIG = "MIG"


class CapacityType(StrEnum):
    ON_DEMAND = "OnDemand"
    SPOT = "Spot"
    CAPACITY_BLOCK = "CapacityBlock"


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    """taints[]: a Kubernetes-spelled taint."""

    key: str
    value: str
    effect: TaintEffect


@dataclass(frozen=True, slots=True, kw_only=True)
class WarmPool:
    """warmPool: pre-initialised instances."""

    min_size: int
    max_prepared_capacity: int | None
    state: WarmPoolState
    reuse_on_scale_in: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Headroom:
    """headroom: whole nodes kept free for serving by low-priority placeholder pods (plan.manifests.headroom)."""

    nodes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MigSlice:
    """sharing.layout[]: `gpus` consecutive GPUs of a node partitioned into `profile` (MIG strategy Mixed)."""

    gpus: int
    profile: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Sharing:
    """sharing: how GPUs are shared between pods."""

    strategy: SharingStrategy
    replicas: int | None
    profile: str | None
    mig_strategy: MigStrategy
    layout: tuple[MigSlice, ...]
    acknowledge_no_isolation: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Topology:
    """topology: kubelet Topology Manager and Kueue placement; None fields are resolved by defaults.py."""

    policy: TopologyPolicy | None
    scope: TopologyScope | None
    placement: Placement | None
    pod_shape: PodShape | None  # podShape


@dataclass(frozen=True, slots=True, kw_only=True)
class Reservation:
    """capacity.reservation: an On-Demand Capacity Reservation (ODCR); exactly one of id, resource_group_arn, open
    and tags is set (rules.py says so when not)."""

    id: str | None
    resource_group_arn: str | None
    open: bool = field(metadata=at(missing=False))  # the schema allows only `open: true`
    tags: Mapping[str, str] | None = None  # Karpenter only: every reservation with these tags
    instance_count: int  # reserved instances, billed around the clock whether they run or not


@dataclass(frozen=True, slots=True, kw_only=True)
class Update:
    """update: node group update config."""

    strategy: UpdateStrategy
    max_unavailable: int | None
    max_unavailable_percentage: int | None


ImagePullMode = Literal["Parallel", "Default"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePull:
    """imagePull: the SOCI snapshotter's parallel-pull-unpack mode or containerd's own pull, and the parallel mode's
    settings (Bottlerocket only); None where omitted (gpufleet.spec.defaults resolves the mode)."""

    mode: ImagePullMode | None
    max_concurrent_downloads_per_image: int | None
    max_concurrent_unpacks_per_image: int | None
    concurrent_download_chunk_size: str | None
    discard_unpacked_layers: bool | None


SnapshotInitializationMode = Literal["ProvisionedRate", "FastSnapshotRestore", "Default"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotInitialization:
    """snapshotInitialization: how a data volume restored from dataVolumeSnapshotId gets the snapshot's blocks
    (Amazon EBS User Guide, "Initialize Amazon EBS volumes"): at a provisioned rate, from a snapshot with fast
    snapshot restore, or lazily from S3 on first read (Default)."""

    mode: SnapshotInitializationMode
    volume_initialization_rate: int | None  # MiB/s, ProvisionedRate only (EC2 allows 100 to 300)
    availability_zones: tuple[str, ...] | None  # FastSnapshotRestore only: the zones it is enabled in


def _headroom(hr: Mapping[str, Any] | None) -> Headroom | None:
    return Headroom(nodes=hr["nodes"]) if hr is not None and hr["nodes"] > 0 else None


def _instance_types(group: Mapping[str, Any], _: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(group["instanceTypes"]) if "instanceTypes" in group else (group["instanceType"],)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeGroup:
    """nodeGroups[]: one GPU instance type, as an EKS managed node group or a Karpenter NodePool (`provisioner`)."""

    name: str
    instance_type: str  # the reference shape (quotas, model, cost): with instance_types, the smallest of them
    # instanceTypes (Karpenter): every type the NodePool may launch, instance_type among them; (instance_type,) else
    instance_types: tuple[str, ...] = field(metadata=derived(_instance_types, reads=("instanceTypes",)))
    workload_class: WorkloadClass
    provisioner: Provisioner
    # devices: what hands the GPUs (and EFA interfaces) to pods (gpufleet.spec.devices says what each one is)
    devices: Devices
    ami_type: AmiType = field(metadata=at("ami.type"))
    ami_release_version: str = field(metadata=at("ami.releaseVersion"))
    capacity_type: CapacityType = field(metadata=at("capacity.type"))
    # capacity.fallback (Karpenter only): the capacity types the NodePool may launch, in Karpenter's order of
    # preference (Reserved, Spot, OnDemand); () when the group has the one capacity type of capacity_type
    capacity_fallback: tuple[str, ...] = field(metadata=at("capacity.fallback", missing=()))
    reservation_id: str | None = field(metadata=at("capacity.reservationId"))  # a Capacity Block's
    reservation: Reservation | None = field(metadata=at("capacity.reservation"))  # an ODCR of an OnDemand group
    min_size: int = field(metadata=at("scaling.minSize"))
    max_size: int = field(metadata=at("scaling.maxSize"))
    desired_size: int | None = field(metadata=at("scaling.desiredSize"))
    warm_pool: WarmPool | None
    headroom: Headroom | None = field(metadata=at(read=_headroom))  # None: no headroom (absent, or nodes 0)
    zone: str | None
    placement_group: str | None  # an existing one by name, "None" for none; None: gpufleet creates one (EFA)
    subnet_ids: tuple[str, ...] | None
    fabric: Fabric
    efa_taint: str  # Enabled | Disabled: the EFA taint on fabric EFA groups
    local_storage: LocalStorage
    sharing: Sharing
    topology: Topology
    images: tuple[str, ...]
    update: Update
    taints: tuple[Taint, ...]
    labels: Mapping[str, str]
    disk_size_gib: int = field(metadata=at("diskSizeGiB"))
    data_volume_snapshot_id: str | None  # Bottlerocket: the data volume's EBS snapshot holding the images
    snapshot_initialization: SnapshotInitialization | None  # None: omitted (lazy load, as mode Default)
    image_pull: ImagePull
    # the gp3 volume holding the container store; None: omitted (gpufleet.spec.defaults.disk_throughput, disk_iops)
    disk_throughput_mibps: int | None = field(metadata=at("diskThroughputMiBps"))
    disk_iops: int | None


def falls_back(group: NodeGroup) -> bool:
    """Whether the group's nodes may come from other capacity once its reservation is used up: a Karpenter pool whose
    capacity.fallback goes on past Reserved."""
    return len(group.capacity_fallback) > 1 and group.capacity_fallback[0] == "Reserved"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSet:
    """imageSets[]: images pre-pulled together."""

    name: str
    images: tuple[str, ...]
    size_gb: float | None = field(
        default=None, metadata=at("sizeGB")
    )  # imageSets[].sizeGB, measured; None: gpufleet.facts.image_pull assumes a size


@dataclass(frozen=True, slots=True, kw_only=True)
class Quota:
    """teams[].quotas[]: GPUs guaranteed on one node group."""

    node_group: str
    gpus: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Prefetch:
    """teams[].prefetch[]: paths of the team's S3 claim on one Inference group that every node of the group reads into
    its Mountpoint cache as it starts, and keeps there (gpufleet.plan.manifests.prefetch)."""

    node_group: str
    paths: tuple[str, ...]  # relative to the team's prefix of the checkpoint bucket (the claim's root)


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """cluster.admins[], teams[].members[]: an IAM role or user that gets one EKS access entry."""

    principal_arn: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Team:
    """teams[]: a team with its namespace, cohort, quotas and members."""

    name: str
    namespace: str
    cohort: str | None
    quotas: tuple[Quota, ...]
    members: tuple[Principal, ...]
    pod_security: str  # Baseline | Restricted (the namespace's Pod Security Admission enforce level)
    priorities: tuple[str, ...] | None  # None: computed (gpufleet.defaults.team_priorities)
    service_types: tuple[str, ...]  # serviceTypes: NodePort, LoadBalancer the team's members may create
    serving_readiness_probe: str | None  # Deny | Warn | Off; None: admission.servingReadinessProbe
    prefetch: tuple[Prefetch, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Priority:
    """admission.priorities[]."""

    name: str
    value: int
    preemptible: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """admission: Kueue settings."""

    pods_ready_timeout_seconds: int | None  # None: gpufleet.spec.cold_start derives it from the slowest group
    backoff_limit_count: int = field(metadata=at("requeuing.backoffLimitCount"))
    backoff_base_seconds: int = field(metadata=at("requeuing.backoffBaseSeconds"))
    backoff_max_seconds: int = field(metadata=at("requeuing.backoffMaxSeconds"))
    queueing_strategy: QueueingStrategy
    within_cluster_queue: WithinClusterQueue = field(metadata=at("preemption.withinClusterQueue"))
    reclaim_within_cohort: ReclaimWithinCohort = field(metadata=at("preemption.reclaimWithinCohort"))
    borrow_within_cohort: BorrowWithinCohort = field(metadata=at("preemption.borrowWithinCohort"))
    priorities: tuple[Priority, ...]
    serving_readiness_probe: str  # Deny | Warn | Off: the serving readiness policy in team namespaces


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemNodes:
    """cluster.systemNodes: the CPU node group for add-ons and controllers (mode Create)."""

    instance_type: str
    release_version: str
    min_size: int
    max_size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    """cluster: the EKS cluster."""

    mode: ClusterMode
    name: str
    region: str
    kubernetes_version: str
    endpoint_access: EndpointAccess
    public_cidrs: tuple[str, ...] | None = field(metadata=at("publicEndpoint.cidrs"))  # None: EKS's 0.0.0.0/0
    open_endpoint_reason: str | None = field(metadata=at("publicEndpoint.acknowledgeOpenToInternet"))
    vpc_id: str = field(metadata=at("network.vpcId"))
    subnet_ids: tuple[str, ...] = field(metadata=at("network.subnetIds"))
    system_nodes: SystemNodes | None
    autoscaler: AutoscalerChoice  # the Cluster Autoscaler in stage 1
    admins: tuple[Principal, ...]


def _pin(key: str) -> Any:
    """A component's pin: versions.<key>.<its pin field> (chart, or tag for an image release)."""
    return at(f"{key}.{COMPONENTS[key].pin_field}")


def _unpinned(_: Mapping[str, Any], given: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(key for key in COMPONENTS if f"versions.{key}" in given["defaulted"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Versions:
    """versions: the upstream components; one the spec does not pin is the release gpufleet is tested with
    (gpufleet.spec.defaults.PINS), and `defaulted` names it (plan.json, plan.md)."""

    gpu_operator: str = field(metadata=_pin("gpuOperator"))
    driver_source: DriverSource = field(metadata=at("driver.source"))
    driver_version: str | None = field(metadata=at("driver.version"))
    toolkit_version: str | None = field(metadata=at("driver.toolkitVersion"))
    # None: computed (gpufleet.spec.defaults.gdrcopy)
    gdrcopy: GdrCopy | None = field(metadata=at("driver.gdrCopy"))
    kueue: str = field(metadata=_pin("kueue"))
    efa_device_plugin: str = field(metadata=_pin("efaDevicePlugin"))
    nvidia_dra_driver: str = field(metadata=_pin("nvidiaDraDriver"))
    efa_dra_driver: str = field(metadata=_pin("efaDraDriver"))
    network_operator: str = field(metadata=_pin("networkOperator"))
    multus: str = field(metadata=_pin("multus"))
    kube_prometheus_stack: str = field(metadata=_pin("kubePrometheusStack"))
    node_problem_detector: str = field(metadata=_pin("nodeProblemDetector"))
    cluster_autoscaler: str = field(metadata=_pin("clusterAutoscaler"))
    karpenter: str = field(metadata=_pin("karpenter"))
    job_set: str = field(metadata=_pin("jobSet"))
    trainer: str = field(metadata=_pin("trainer"))
    leader_worker_set: str = field(metadata=_pin("leaderWorkerSet"))
    keda: str = field(metadata=_pin("keda"))
    mountpoint_s3_csi: str = field(metadata=_pin("mountpointS3Csi"))
    fsx_csi_driver: str = field(metadata=_pin("fsxCsiDriver"))
    addons: Mapping[str, str]
    # component keys (versions.COMPONENTS) the spec does not pin
    defaulted: frozenset[str] = field(metadata=derived(_unpinned))
    pinning: Pinning  # Explicit: every deployed component must be pinned (rules: explicit-pins)


@dataclass(frozen=True, slots=True, kw_only=True)
class Telemetry:
    """telemetry: Prometheus and the idle threshold."""

    prometheus: PrometheusChoice
    existing_namespace: str | None
    idle_sm_active_below: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Health:
    """health: the fault-to-repair loop."""

    auto_repair: AutoRepair
    remediation: Remediation
    dcgm_diag_level: int
    check_interval_seconds: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Images:
    """images: digests of the privileged images gpufleet renders itself (gpufleet.facts.images)."""

    require_digests: bool
    # image key (python, dcgm, multus) -> the spec's `name:tag@sha256:<64 hex>`
    digests: Mapping[str, str] = field(metadata=rest())


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoints:
    """checkpoints: bucket and sizing inputs."""

    bucket: str
    model_parameters: int
    bytes_per_parameter: int
    mean_time_between_failures_hours: float
    interval_minutes: float | None = field(metadata=at(exact=True))
    retention_days: int
    encryption: str  # S3Managed (SSE-S3) or CustomerManagedKey (SSE-KMS with the fleet's own key)
    local_write_gbps: float | None = field(
        metadata=at("localWriteGBps")
    )  # per node, to the RAID0 instance-store array; None: devices x the device figure
    local_device_write_gbps: float = field(metadata=at("localDeviceWriteGBps"))  # per instance-store NVMe device
    bucket_write_gbps: float = field(metadata=at("bucketWriteGBps"))  # per node, to the bucket
    writer_nodes: int | None  # nodes writing shards of one checkpoint in parallel; None: the largest Training group
    save: str  # Synchronous or Asynchronous (training waits only for the GPU-to-host copy)
    host_copy_gbps: float = field(metadata=at("hostCopyGBps"))  # per GPU, GPU-to-host copy of an asynchronous save
    jobs: tuple[CheckpointJob, ...]
    mountpoint: Mountpoint | None = None  # the teams' prefixes as PersistentVolumeClaims (Mountpoint S3 CSI driver)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mountpoint:
    """checkpoints.mountpoint: the teams' prefixes of the bucket mounted through the Mountpoint for Amazon S3 CSI
    driver."""

    uid: int
    gid: int
    cache_fraction: float  # of a RAID0 group's instance-store array, per Mountpoint Pod


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointJob:
    """checkpoints.jobs[]: one training job sized on its own."""

    name: str
    team: str
    node_group: str
    nodes: int
    model_parameters: int
    mean_time_between_failures_hours: float | None
    interval_minutes: float | None = field(metadata=at(exact=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class DataRepository:
    """fsxLustre.dataRepositories[]: one S3 data repository association."""

    bucket: str | None  # None: checkpoints.bucket
    prefix: str  # "" or ending in "/"
    file_system_path: str
    auto_import: tuple[str, ...]  # NEW | CHANGED | DELETED
    auto_export: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FsxLustre:
    """fsxLustre: the fleet's FSx for Lustre file system."""

    deployment_type: str  # SCRATCH_1 | SCRATCH_2 | PERSISTENT_1 | PERSISTENT_2 (FSx API LustreDeploymentType)
    storage_capacity_gib: int = field(metadata=at("storageCapacityGiB"))
    per_unit_storage_throughput: int | None  # MB/s/TiB, persistent types only
    node_group: str | None  # None: the Training group with the largest maxSize
    subnet_id: str | None  # None: the node group's single subnet
    data_repositories: tuple[DataRepository, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RdmaNetwork:
    """network.rdma.networks[]: one RDMA port and its secondary network (one NetworkAttachmentDefinition)."""

    name: str
    interface: str  # the port's netdev, e.g. ibp24s0 (CNI master, device plugin ifNames selector)
    hca: str  # the RDMA device, e.g. mlx5_0 (NCCL_IB_HCA)
    ip_pool: str  # the nv-ipam IPPool the network allocates from


@dataclass(frozen=True, slots=True, kw_only=True)
class Rdma:
    """network.rdma: the ConnectX NICs of fabric RDMA groups."""

    link_type: LinkType  # Ethernet: RoCE
    resource_name: str  # advertised as rdma/<resourceName>
    hca_max: int
    socket_interface: str
    networks: tuple[RdmaNetwork, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BandwidthGate:
    """network.bandwidthGate: the nccl-tests run that gates the rollout after the network stage."""

    image: str
    efficiency: float  # NCCL_TESTS_MIN_BW = rated line rate (GB/s) x efficiency
    timeout_minutes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Network:
    """network: fabric settings of stage 5."""

    bandwidth_gate: BandwidthGate
    rdma: Rdma | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Workloads:
    """workloads: the job APIs teams submit (admission stage); None choices are resolved by gpufleet.spec.defaults."""

    job_set: InstallChoice | None
    trainer: InstallChoice | None
    leader_worker_set: InstallChoice | None
    inference_replica_gpus: Mapping[str, int]  # inference node group -> GPUs one serving replica takes
    serving_model_gb: Mapping[str, float] = field(
        default_factory=dict, metadata=at("servingModelGB")
    )  # inference group -> weights of a replica
    weight_load_gbps: Mapping[str, WeightLoad] = field(
        default_factory=dict, metadata=at("weightLoadGBps")
    )  # inference group -> measured rates
    image_pull_gbps: Mapping[str, float] = field(
        default_factory=dict, metadata=at("imagePullGBps")
    )  # node group -> measured image pull rate


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightLoad:
    """workloads.weightLoadGBps.<group>: weight-load rates measured on one node, GB/s; None: gpufleet's assumption."""

    s3: float | None
    nvme: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """environments.<name>: one stack."""

    name: str = field(metadata=derived())  # its key
    through: StageName = field(metadata=at("rollout.through"))


ClusterRole = Literal["Manager", "Worker"]


def _group_names(groups: Any) -> tuple[str, ...]:
    return tuple(g["name"] for g in groups) if isinstance(groups, list) else ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """clusters[<i>]: one cluster of a fleet of several."""

    name: str
    role: ClusterRole
    region: str
    node_groups: tuple[str, ...] = field(metadata=at(read=_group_names))  # its GPU node groups (a Manager has none)


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiKueue:
    """What one cluster of clusters[] knows of the others (gpufleet.spec.clusters makes it)."""

    cluster: str  # this cluster's name
    role: ClusterRole
    members: tuple[Member, ...]  # every cluster, in the spec's order
    step_size: int  # admission.multiKueue.stepSize
    # The Manager's: the fleet as its Kueue objects mirror it (every worker's node groups, teams with every quota);
    # None on a Worker, whose own fleet is what it runs.
    mirrored: Fleet | None = None
    # Every worker's node groups, on every cluster: what a dispatched workload may need, so each cluster installs the
    # job APIs and ClusterTrainingRuntimes of all of them (gpufleet.spec.defaults.dispatch_groups).
    dispatched: tuple[NodeGroup, ...] = ()

    @property
    def workers(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.role == "Worker")

    @property
    def manager(self) -> Member:
        return next(m for m in self.members if m.role == "Manager")


def _helm_values(helm: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: copy.deepcopy(chart["values"]) for key, chart in sorted((helm or {}).items())}


def _paths(d: Mapping[str, Any], _: Mapping[str, Any]) -> dict[str, Path]:
    """The index of each node group, team and image set in its list, for error paths (the first of a name)."""
    paths: dict[str, Path] = {}
    for kind, section in (("nodeGroup", "nodeGroups"), ("team", "teams"), ("imageSet", "imageSets")):
        for i, item in enumerate(d[section]):
            paths.setdefault(f"{kind}:{item['name']}", (section, i))
    return paths


def _defaulted(_: Mapping[str, Any], given: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(given["defaulted"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    """The whole validated fleet, for one environment (overrides already merged)."""

    name: str = field(metadata=at("metadata.name"))
    cluster: Cluster
    versions: Versions
    node_groups: tuple[NodeGroup, ...]
    image_sets: tuple[ImageSet, ...]
    teams: tuple[Team, ...]
    admission: Admission
    telemetry: Telemetry
    health: Health
    checkpoints: Checkpoints | None
    fsx_lustre: FsxLustre | None
    network: Network
    workloads: Workloads
    images: Images
    gpu_hour_usd: Mapping[str, float] = field(metadata=at("cost.gpuHourUsd", exact=True))
    # helm.<component>.values: Helm values merged last over the values gpufleet renders for that chart's release
    # (gpufleet.plan.builders.common.helm), checked by the rule helm-values
    helm_values: Mapping[str, Mapping[str, Any]] = field(metadata=at("helm", read=_helm_values))
    environments: tuple[Environment, ...] = field(metadata=keyed())
    # index of each node group / team / image set in the source list, for error paths
    paths: Mapping[str, Path] = field(metadata=derived(_paths))
    # the spec paths gpufleet.spec.defaults.fill filled (versions.<key>, cluster.systemNodes, teams[<name>].namespace)
    defaulted: frozenset[str] = field(metadata=derived(_defaulted))
    # clusters[]: this cluster's place among several (gpufleet.spec.clusters); None for a spec of one cluster
    multikueue: MultiKueue | None = field(default=None, metadata=derived())

    def node_group(self, name: str) -> NodeGroup:
        return next(g for g in self.node_groups if g.name == name)

    @property
    def queued(self) -> Fleet:
        """The fleet its Kueue quota describes: a MultiKueue manager's mirror of its workers, else itself."""
        return self.multikueue.mirrored if self.multikueue and self.multikueue.mirrored else self

    def environment(self, name: str) -> Environment:
        return next(e for e in self.environments if e.name == name)

    @staticmethod
    def create(data: Mapping[str, Any], defaulted: frozenset[str] = frozenset()) -> Fleet:
        """Build the model from schema-valid data with every default filled: the static ones (gpufleet.spec.schema) and
        those that depend on other fields (gpufleet.spec.defaults.fill, which says which spec paths it filled)."""
        return build(Fleet, data, {"defaulted": defaulted})
