"""The typed, frozen fleet model. Built once from schema-valid, default-filled data (`Fleet.create`).

Field names follow the YAML (snake_case here); each docstring starts with the YAML name. Defaults are not
declared here: static ones come from the schema, computed ones from `gpufleet.spec.defaults`.
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
    open: bool
    tags: Mapping[str, str] | None = None  # Karpenter only: every reservation with these tags
    instance_count: int  # reserved instances, billed around the clock whether they run or not


@dataclass(frozen=True, slots=True, kw_only=True)
class Update:
    """update: node group update config."""

    strategy: UpdateStrategy
    max_unavailable: int | None
    max_unavailable_percentage: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeGroup:
    """nodeGroups[]: one GPU instance type, as an EKS managed node group or a Karpenter NodePool (`provisioner`)."""

    name: str
    instance_type: str  # the reference shape (quotas, model, cost): with instance_types, the smallest of them
    # instanceTypes (Karpenter): every type the NodePool may launch, instance_type among them; (instance_type,) else
    instance_types: tuple[str, ...]
    workload_class: WorkloadClass
    provisioner: Provisioner
    # devices: what hands the GPUs (and EFA interfaces) to pods (gpufleet.spec.devices says what each one is)
    devices: Devices
    ami_type: AmiType
    ami_release_version: str
    capacity_type: CapacityType
    # capacity.fallback (Karpenter only): the capacity types the NodePool may launch, in Karpenter's order of
    # preference (Reserved, Spot, OnDemand); () when the group has the one capacity type of capacity_type
    capacity_fallback: tuple[str, ...]
    reservation_id: str | None  # a Capacity Block's
    reservation: Reservation | None  # an ODCR of an OnDemand group
    min_size: int
    max_size: int
    desired_size: int | None
    warm_pool: WarmPool | None
    headroom: Headroom | None  # None: no headroom (absent, or nodes 0)
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
    disk_size_gib: int
    data_volume_snapshot_id: str | None  # Bottlerocket: the data volume's EBS snapshot holding the images


def falls_back(group: NodeGroup) -> bool:
    """Whether the group's nodes may come from other capacity once its reservation is used up: a Karpenter pool whose
    capacity.fallback goes on past Reserved."""
    return len(group.capacity_fallback) > 1 and group.capacity_fallback[0] == "Reserved"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSet:
    """imageSets[]: images pre-pulled together."""

    name: str
    images: tuple[str, ...]
    size_gb: float | None = None  # imageSets[].sizeGB, measured; None: gpufleet.facts.image_pull assumes a size


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
    backoff_limit_count: int
    backoff_base_seconds: int
    backoff_max_seconds: int
    queueing_strategy: QueueingStrategy
    within_cluster_queue: WithinClusterQueue
    reclaim_within_cohort: ReclaimWithinCohort
    borrow_within_cohort: BorrowWithinCohort
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
    public_cidrs: tuple[str, ...] | None  # publicEndpoint.cidrs; None: EKS's default 0.0.0.0/0
    open_endpoint_reason: str | None  # publicEndpoint.acknowledgeOpenToInternet
    vpc_id: str
    subnet_ids: tuple[str, ...]
    system_nodes: SystemNodes | None
    autoscaler: AutoscalerChoice  # the Cluster Autoscaler in stage 1
    admins: tuple[Principal, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Versions:
    """versions: the upstream components; one the spec does not pin is the release gpufleet is tested with
    (gpufleet.spec.defaults.PINS), and `defaulted` names it (plan.json, plan.md)."""

    gpu_operator: str
    driver_source: DriverSource
    driver_version: str | None
    toolkit_version: str | None
    gdrcopy: GdrCopy | None  # versions.driver.gdrCopy; None: computed (gpufleet.spec.defaults.gdrcopy)
    kueue: str
    efa_device_plugin: str
    nvidia_dra_driver: str
    efa_dra_driver: str
    network_operator: str
    multus: str
    kube_prometheus_stack: str
    node_problem_detector: str
    cluster_autoscaler: str
    karpenter: str
    job_set: str
    trainer: str
    leader_worker_set: str
    keda: str
    mountpoint_s3_csi: str
    fsx_csi_driver: str
    addons: Mapping[str, str]
    defaulted: frozenset[str]  # component keys (versions.COMPONENTS) the spec does not pin
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
    digests: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoints:
    """checkpoints: bucket and sizing inputs."""

    bucket: str
    model_parameters: int
    bytes_per_parameter: int
    mean_time_between_failures_hours: float
    interval_minutes: float | None
    retention_days: int
    encryption: str  # S3Managed (SSE-S3) or CustomerManagedKey (SSE-KMS with the fleet's own key)
    local_write_gbps: float | None  # per node, to the RAID0 instance-store array; None: devices x the device figure
    local_device_write_gbps: float  # per instance-store NVMe device
    bucket_write_gbps: float  # per node, to the bucket
    writer_nodes: int | None  # nodes writing shards of one checkpoint in parallel; None: the largest Training group
    save: str  # Synchronous or Asynchronous (training waits only for the GPU-to-host copy)
    host_copy_gbps: float  # per GPU, GPU-to-host copy of an asynchronous save
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
    interval_minutes: float | None


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
    storage_capacity_gib: int
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
    serving_model_gb: Mapping[str, float] = field(default_factory=dict)  # inference group -> weights of a replica
    weight_load_gbps: Mapping[str, WeightLoad] = field(default_factory=dict)  # inference group -> measured rates
    image_pull_gbps: Mapping[str, float] = field(default_factory=dict)  # node group -> measured image pull rate


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightLoad:
    """workloads.weightLoadGBps.<group>: weight-load rates measured on one node, GB/s; None: gpufleet's assumption."""

    s3: float | None
    nvme: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """environments.<name>: one stack."""

    name: str
    through: StageName


ClusterRole = Literal["Manager", "Worker"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """clusters[<i>]: one cluster of a fleet of several."""

    name: str
    role: ClusterRole
    region: str
    node_groups: tuple[str, ...]  # the names of its GPU node groups (a Manager has none)


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

    @property
    def workers(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.role == "Worker")

    @property
    def manager(self) -> Member:
        return next(m for m in self.members if m.role == "Manager")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    """The whole validated fleet, for one environment (overrides already merged)."""

    name: str
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
    gpu_hour_usd: Mapping[str, float]
    # helm.<component>.values: Helm values merged last over the values gpufleet renders for that chart's release
    # (gpufleet.plan.builders.common.helm), checked by the rule helm-values
    helm_values: Mapping[str, Mapping[str, Any]]
    environments: tuple[Environment, ...]
    # index of each node group / team / image set in the source list, for error paths
    paths: Mapping[str, Path]
    # the spec paths gpufleet.spec.defaults.fill filled (versions.<key>, cluster.systemNodes, teams[<name>].namespace)
    defaulted: frozenset[str]
    # clusters[]: this cluster's place among several (gpufleet.spec.clusters); None for a spec of one cluster
    multikueue: MultiKueue | None = None

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
        return _fleet(data, defaulted)


def _reservation(d: Mapping[str, Any] | None) -> Reservation | None:
    if d is None:
        return None
    return Reservation(
        id=d.get("id"),
        resource_group_arn=d.get("resourceGroupArn"),
        open="open" in d,  # the schema allows only `open: true`
        tags=dict(sorted(d["tags"].items())) if "tags" in d else None,
        instance_count=d["instanceCount"],
    )


def _node_group(d: Mapping[str, Any]) -> NodeGroup:
    wp = d.get("warmPool")
    hr = d.get("headroom")
    sh = d["sharing"]
    topo = d["topology"]
    upd = d["update"]
    return NodeGroup(
        name=d["name"],
        instance_type=d["instanceType"],
        instance_types=tuple(d["instanceTypes"]) if "instanceTypes" in d else (d["instanceType"],),
        workload_class=WorkloadClass(d["workloadClass"]),
        provisioner=d["provisioner"],
        devices=d["devices"],
        ami_type=d["ami"]["type"],
        ami_release_version=d["ami"]["releaseVersion"],
        capacity_type=CapacityType(d["capacity"]["type"]),
        capacity_fallback=tuple(d["capacity"]["fallback"]) if "fallback" in d["capacity"] else (),
        reservation_id=d["capacity"].get("reservationId"),
        reservation=_reservation(d["capacity"].get("reservation")),
        min_size=d["scaling"]["minSize"],
        max_size=d["scaling"]["maxSize"],
        desired_size=d["scaling"].get("desiredSize"),
        warm_pool=(
            None
            if wp is None
            else WarmPool(
                min_size=wp["minSize"],
                max_prepared_capacity=wp.get("maxPreparedCapacity"),
                state=wp["state"],
                reuse_on_scale_in=wp["reuseOnScaleIn"],
            )
        ),
        headroom=Headroom(nodes=hr["nodes"]) if hr is not None and hr["nodes"] > 0 else None,
        zone=d.get("zone"),
        placement_group=d.get("placementGroup"),
        subnet_ids=tuple(d["subnetIds"]) if "subnetIds" in d else None,
        fabric=Fabric(d["fabric"]),
        efa_taint=d["efaTaint"],
        local_storage=d["localStorage"],
        sharing=Sharing(
            strategy=SharingStrategy(sh["strategy"]),
            replicas=sh.get("replicas"),
            profile=sh.get("profile"),
            mig_strategy=sh["migStrategy"],
            layout=tuple(MigSlice(gpus=s["gpus"], profile=s["profile"]) for s in sh["layout"]),
            acknowledge_no_isolation=sh["acknowledgeNoIsolation"],
        ),
        topology=Topology(
            policy=topo.get("policy"),
            scope=topo.get("scope"),
            placement=topo.get("placement"),
            pod_shape=topo.get("podShape"),
        ),
        images=tuple(d["images"]),
        update=Update(
            strategy=upd["strategy"],
            max_unavailable=upd.get("maxUnavailable"),
            max_unavailable_percentage=upd.get("maxUnavailablePercentage"),
        ),
        taints=tuple(Taint(key=t["key"], value=t["value"], effect=t["effect"]) for t in d["taints"]),
        labels=dict(sorted(d["labels"].items())),
        disk_size_gib=d["diskSizeGiB"],
        data_volume_snapshot_id=d.get("dataVolumeSnapshotId"),
    )


def _principals(items: Any) -> tuple[Principal, ...]:
    return tuple(Principal(principal_arn=p["principalArn"]) for p in items)


def _chart(versions: Mapping[str, Any], key: str) -> str:
    return str(versions[key][COMPONENTS[key].pin_field])


def _system_nodes(c: Mapping[str, Any]) -> SystemNodes | None:
    """None when omitted and gpufleet.spec.defaults.fill left it so (mode Existing, or no AMI release known: the rules
    ask)."""
    if "systemNodes" not in c:
        return None
    sn = c["systemNodes"]
    return SystemNodes(
        instance_type=sn["instanceType"],
        release_version=sn["releaseVersion"],
        min_size=sn["minSize"],
        max_size=sn["maxSize"],
    )


def _network(d: Mapping[str, Any]) -> Network:
    gate = d["bandwidthGate"]
    rdma = d.get("rdma")
    return Network(
        bandwidth_gate=BandwidthGate(
            image=gate["image"], efficiency=float(gate["efficiency"]), timeout_minutes=gate["timeoutMinutes"]
        ),
        rdma=(
            None
            if rdma is None
            else Rdma(
                link_type=rdma["linkType"],
                resource_name=rdma["resourceName"],
                hca_max=rdma["hcaMax"],
                socket_interface=rdma["socketInterface"],
                networks=tuple(
                    RdmaNetwork(name=n["name"], interface=n["interface"], hca=n["hca"], ip_pool=n["ipPool"])
                    for n in rdma["networks"]
                ),
            )
        ),
    )


def _fsx_lustre(d: Mapping[str, Any] | None) -> FsxLustre | None:
    if d is None:
        return None
    return FsxLustre(
        deployment_type=d["deploymentType"],
        storage_capacity_gib=d["storageCapacityGiB"],
        per_unit_storage_throughput=d.get("perUnitStorageThroughput"),
        node_group=d.get("nodeGroup"),
        subnet_id=d.get("subnetId"),
        data_repositories=tuple(
            DataRepository(
                bucket=r.get("bucket"),
                prefix=r["prefix"],
                file_system_path=r["fileSystemPath"],
                auto_import=tuple(r["autoImport"]),
                auto_export=tuple(r["autoExport"]),
            )
            for r in d["dataRepositories"]
        ),
    )


def _fleet(d: Mapping[str, Any], defaulted: frozenset[str]) -> Fleet:
    c = d["cluster"]
    endpoint = c.get("publicEndpoint")
    v = d["versions"]
    adm = d["admission"]
    tel = d["telemetry"]
    hl = d["health"]
    cp = d.get("checkpoints")
    paths: dict[str, Path] = {}
    for i, g in enumerate(d["nodeGroups"]):
        paths.setdefault(f"nodeGroup:{g['name']}", ("nodeGroups", i))
    for i, t in enumerate(d["teams"]):
        paths.setdefault(f"team:{t['name']}", ("teams", i))
    for i, s in enumerate(d["imageSets"]):
        paths.setdefault(f"imageSet:{s['name']}", ("imageSets", i))
    return Fleet(
        name=d["metadata"]["name"],
        cluster=Cluster(
            mode=c["mode"],
            name=c["name"],
            region=c["region"],
            kubernetes_version=c["kubernetesVersion"],
            endpoint_access=c["endpointAccess"],
            public_cidrs=tuple(endpoint["cidrs"]) if endpoint and "cidrs" in endpoint else None,
            open_endpoint_reason=endpoint.get("acknowledgeOpenToInternet") if endpoint else None,
            vpc_id=c["network"]["vpcId"],
            subnet_ids=tuple(c["network"]["subnetIds"]),
            system_nodes=_system_nodes(c),
            autoscaler=c["autoscaler"],
            admins=_principals(c["admins"]),
        ),
        versions=Versions(
            gpu_operator=_chart(v, "gpuOperator"),
            driver_source=v["driver"]["source"],
            driver_version=v["driver"].get("version"),
            toolkit_version=v["driver"].get("toolkitVersion"),
            gdrcopy=v["driver"].get("gdrCopy"),
            kueue=_chart(v, "kueue"),
            efa_device_plugin=_chart(v, "efaDevicePlugin"),
            nvidia_dra_driver=_chart(v, "nvidiaDraDriver"),
            efa_dra_driver=_chart(v, "efaDraDriver"),
            network_operator=_chart(v, "networkOperator"),
            multus=_chart(v, "multus"),
            kube_prometheus_stack=_chart(v, "kubePrometheusStack"),
            node_problem_detector=_chart(v, "nodeProblemDetector"),
            cluster_autoscaler=_chart(v, "clusterAutoscaler"),
            karpenter=_chart(v, "karpenter"),
            job_set=_chart(v, "jobSet"),
            trainer=_chart(v, "trainer"),
            leader_worker_set=_chart(v, "leaderWorkerSet"),
            keda=_chart(v, "keda"),
            mountpoint_s3_csi=_chart(v, "mountpointS3Csi"),
            fsx_csi_driver=_chart(v, "fsxCsiDriver"),
            addons=dict(sorted(v["addons"].items())),
            defaulted=frozenset(key for key in COMPONENTS if f"versions.{key}" in defaulted),
            pinning=v["pinning"],
        ),
        node_groups=tuple(_node_group(g) for g in d["nodeGroups"]),
        image_sets=tuple(
            ImageSet(name=s["name"], images=tuple(s["images"]), size_gb=float(s["sizeGB"]) if "sizeGB" in s else None)
            for s in d["imageSets"]
        ),
        teams=tuple(
            Team(
                name=t["name"],
                namespace=t["namespace"],
                cohort=t.get("cohort"),
                quotas=tuple(
                    Quota(
                        node_group=q["nodeGroup"],
                        gpus=q["gpus"],
                        borrowing_limit=q.get("borrowingLimit"),
                        lending_limit=q.get("lendingLimit"),
                    )
                    for q in t["quotas"]
                ),
                members=_principals(t["members"]),
                pod_security=t["podSecurity"],
                priorities=tuple(t["priorities"]) if "priorities" in t else None,
                service_types=tuple(t["serviceTypes"]),
                serving_readiness_probe=t.get("servingReadinessProbe"),
                prefetch=tuple(Prefetch(node_group=p["nodeGroup"], paths=tuple(p["paths"])) for p in t["prefetch"]),
            )
            for t in d["teams"]
        ),
        admission=Admission(
            pods_ready_timeout_seconds=adm.get("podsReadyTimeoutSeconds"),
            backoff_limit_count=adm["requeuing"]["backoffLimitCount"],
            backoff_base_seconds=adm["requeuing"]["backoffBaseSeconds"],
            backoff_max_seconds=adm["requeuing"]["backoffMaxSeconds"],
            queueing_strategy=adm["queueingStrategy"],
            within_cluster_queue=adm["preemption"]["withinClusterQueue"],
            reclaim_within_cohort=adm["preemption"]["reclaimWithinCohort"],
            borrow_within_cohort=adm["preemption"]["borrowWithinCohort"],
            priorities=tuple(
                Priority(name=p["name"], value=p["value"], preemptible=p["preemptible"]) for p in adm["priorities"]
            ),
            serving_readiness_probe=adm["servingReadinessProbe"],
        ),
        telemetry=Telemetry(
            prometheus=tel["prometheus"],
            existing_namespace=tel.get("existingNamespace"),
            idle_sm_active_below=float(tel["idleSmActiveBelow"]),
        ),
        health=Health(
            auto_repair=hl["autoRepair"],
            remediation=hl["remediation"],
            dcgm_diag_level=hl["dcgmDiagLevel"],
            check_interval_seconds=hl["checkIntervalSeconds"],
        ),
        checkpoints=(
            None
            if cp is None
            else Checkpoints(
                bucket=cp["bucket"],
                model_parameters=cp["modelParameters"],
                bytes_per_parameter=cp["bytesPerParameter"],
                mean_time_between_failures_hours=float(cp["meanTimeBetweenFailuresHours"]),
                interval_minutes=cp.get("intervalMinutes"),
                retention_days=cp["retentionDays"],
                encryption=cp["encryption"],
                local_write_gbps=None if cp.get("localWriteGBps") is None else float(cp["localWriteGBps"]),
                local_device_write_gbps=float(cp["localDeviceWriteGBps"]),
                bucket_write_gbps=float(cp["bucketWriteGBps"]),
                writer_nodes=cp.get("writerNodes"),
                save=cp["save"],
                host_copy_gbps=float(cp["hostCopyGBps"]),
                jobs=tuple(
                    CheckpointJob(
                        name=j["name"],
                        team=j["team"],
                        node_group=j["nodeGroup"],
                        nodes=j["nodes"],
                        model_parameters=j["modelParameters"],
                        mean_time_between_failures_hours=(
                            None
                            if j.get("meanTimeBetweenFailuresHours") is None
                            else float(j["meanTimeBetweenFailuresHours"])
                        ),
                        interval_minutes=j.get("intervalMinutes"),
                    )
                    for j in cp["jobs"]
                ),
                mountpoint=(
                    None
                    if cp.get("mountpoint") is None
                    else Mountpoint(
                        uid=cp["mountpoint"]["uid"],
                        gid=cp["mountpoint"]["gid"],
                        cache_fraction=float(cp["mountpoint"]["cacheFraction"]),
                    )
                ),
            )
        ),
        fsx_lustre=_fsx_lustre(d.get("fsxLustre")),
        network=_network(d["network"]),
        images=Images(
            require_digests=d["images"]["requireDigests"],
            digests={k: v for k, v in sorted(d["images"].items()) if k != "requireDigests"},
        ),
        workloads=Workloads(
            job_set=d["workloads"].get("jobSet"),
            trainer=d["workloads"].get("trainer"),
            leader_worker_set=d["workloads"].get("leaderWorkerSet"),
            inference_replica_gpus=dict(sorted(d["workloads"]["inferenceReplicaGpus"].items())),
            serving_model_gb={k: float(v) for k, v in sorted(d["workloads"]["servingModelGB"].items())},
            weight_load_gbps={
                k: WeightLoad(s3=float(v["s3"]) if "s3" in v else None, nvme=float(v["nvme"]) if "nvme" in v else None)
                for k, v in sorted(d["workloads"]["weightLoadGBps"].items())
            },
            image_pull_gbps={k: float(v) for k, v in sorted(d["workloads"]["imagePullGBps"].items())},
        ),
        gpu_hour_usd=dict(sorted(d["cost"]["gpuHourUsd"].items())),
        helm_values={key: copy.deepcopy(chart["values"]) for key, chart in sorted((d.get("helm") or {}).items())},
        environments=tuple(
            Environment(name=name, through=env["rollout"]["through"]) for name, env in sorted(d["environments"].items())
        ),
        paths=paths,
        defaulted=defaulted,
    )
