"""Kueue objects (API kueue.x-k8s.io/v1beta2) and the controller Configuration, as plain dicts.

Why, with sources: docs/admission-and-sharing.md, "Design notes", gpufleet/plan/manifests/kueue.py.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpufleet.facts import catalog
from gpufleet.facts.versions import KUEUE
from gpufleet.plan.manifests import node_bootstrap
from gpufleet.plan.manifests.sharing import advertised, devices_per_gpu
from gpufleet.spec import cold_start, defaults
from gpufleet.spec.devices import counted, device_managing, quota_resource
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup, Priority, Quota, Team
from gpufleet.spec.names import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    LABEL_TEAM,
    group_taints,
    tolerations_for,
)

API = "kueue.x-k8s.io/v1beta2"
CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
LABEL_NAMESPACE_NAME = "kubernetes.io/metadata.name"

# Integrations, spelled as Kueue 0.19 names them: the built-in kinds always, and the custom job kinds the
# fleet installs.
JOBSET_FRAMEWORK = "jobset.x-k8s.io/jobset"
TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"
LWS_FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
# Built-in kinds Kueue always manages in team namespaces.
BUILT_IN_FRAMEWORKS = ("batch/job", "pod", "deployment", "statefulset")
RESOURCES = {
    JOBSET_FRAMEWORK: ("jobset.x-k8s.io", "jobsets", "JobSet"),
    TRAINJOB_FRAMEWORK: ("trainer.kubeflow.org", "trainjobs", "TrainJob"),
    LWS_FRAMEWORK: ("leaderworkerset.x-k8s.io", "leaderworkersets", "LeaderWorkerSet"),
}


def installed_frameworks(fleet: Fleet) -> tuple[str, ...]:
    """The Kueue integrations of the custom job kinds the fleet installs, in Kueue's documented order.

    Why: docs/admission-and-sharing.md, "Design notes", kueue.installed_frameworks."""
    out: list[str] = []
    if not fleet.teams:
        return ()
    if defaults.job_set(fleet):
        out.append(JOBSET_FRAMEWORK)
    if defaults.trainer(fleet):
        out.append(TRAINJOB_FRAMEWORK)
    if defaults.leader_worker_set(fleet):
        out.append(LWS_FRAMEWORK)
    return tuple(out)


def frameworks(fleet: Fleet) -> tuple[str, ...]:
    """Kueue's integrations.frameworks: batch Jobs, then the installed custom kinds, then pods, Deployments and
    StatefulSets.

    Why: docs/admission-and-sharing.md, "Design notes", kueue.frameworks."""
    return (BUILT_IN_FRAMEWORKS[0], *installed_frameworks(fleet), *BUILT_IN_FRAMEWORKS[1:])


def served_kinds(fleet: Fleet) -> tuple[str, ...]:
    """The custom job kinds the fleet serves (JobSet, TrainJob, LeaderWorkerSet)."""
    return tuple(RESOURCES[f][2] for f in installed_frameworks(fleet))


# Topology-aware scheduling: the EKS network-topology node labels, coarsest first, then the node
# (https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html).
# Why: docs/admission-and-sharing.md, "Design notes", kueue.TOPOLOGY_NAME.
TOPOLOGY_NAME = "aws-network"
TOPOLOGY_LEVELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
)
# ---------------------------------------------------------------------------------------------------------------
# What a node keeps for itself, so that quota matches what pods can actually be given.
DAEMONSET_CPU_MILLI = 1000
DAEMONSET_MEMORY_MIB = 2048
EVICTION_MEMORY_MIB = 100


def kube_reserved_cpu_milli(vcpus: int) -> int:
    total = vcpus * 1000
    reserved = 0
    for start, end, per_10000 in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, total, 25)):
        if total > start:
            reserved += (min(total, end) - start) * per_10000 // 10000
    return reserved


def kube_reserved_memory_mib(max_pods: int) -> int:
    return 11 * max_pods + 255


def _mib(quantity: str) -> int:
    units = {"Gi": 1024, "Mi": 1}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity[: -len(suffix)]) * factor
    raise ValueError(f"unsupported memory quantity {quantity!r}")


def node_reserve(group: NodeGroup) -> tuple[int, int]:
    """(CPU millicores, memory MiB) one node of the group keeps from pods."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    cpu = kube_reserved_cpu_milli(info.vcpus) + DAEMONSET_CPU_MILLI
    memory = kube_reserved_memory_mib(catalog.max_pods(info.name)) + EVICTION_MEMORY_MIB + DAEMONSET_MEMORY_MIB
    policy, _, _ = node_bootstrap.topology(group)
    if policy != "none":
        cpu += int(node_bootstrap.SYSTEM_RESERVED_CPU) * 1000
        memory += _mib(node_bootstrap.SYSTEM_RESERVED_MEMORY)
    return cpu, memory


@dataclass(frozen=True, slots=True)
class PerGpu:
    """What one physical GPU of a group brings to a quota."""

    devices: int  # devices per GPU (sharing replicas / MIG instances; the smallest slice of a mixed layout)
    cpu_milli: int
    memory_mib: int
    efa: float  # EFA interfaces per GPU; 0 on groups without fabric EFA


def per_gpu(group: NodeGroup, *, with_sharing: bool = True) -> PerGpu:
    """`with_sharing`: whether the environment includes the sharing stage (before it, one device is one GPU)."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    cpu, memory = node_reserve(group)
    efa = info.max_efa_interfaces / info.gpu_count if group.fabric is Fabric.EFA else 0.0
    return PerGpu(
        devices=max(devices_per_gpu(group, with_sharing=with_sharing).values()),
        cpu_milli=(info.vcpus * 1000 - cpu) // info.gpu_count,
        memory_mib=(info.memory_mib - memory) // info.gpu_count,
        efa=efa,
    )


def capacity_gpus(group: NodeGroup) -> int:
    """Physical GPUs of the group at maxSize."""
    info = catalog.lookup(group.instance_type)
    return group.max_size * info.gpu_count if info else 0


def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def resource_amounts(group: NodeGroup, gpus: int, *, with_sharing: bool = True) -> dict[str, Any]:
    """The quantities `gpus` physical GPUs of the group stand for, by resource name (EFA rounded up: a team
    with one GPU of an 8-GPU, 4-EFA node must still be able to ask for one interface)."""
    shape = per_gpu(group)
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    amounts: dict[str, Any] = {"cpu": _cpu(shape.cpu_milli * gpus), "memory": f"{shape.memory_mib * gpus}Mi"}
    for name, per_node in advertised(group, with_sharing=with_sharing).items():
        amounts[counted(group, name)] = per_node * gpus // info.gpu_count
    if group.fabric is Fabric.EFA:
        amounts[counted(group, EFA_RESOURCE)] = math.ceil(shape.efa * gpus)
    return amounts


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**LABEL_MANAGED_BY, **(labels or {})}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


# ---------------------------------------------------------------------------------------------------------------
# Objects


# ResourceFlavor.spec.nodeTaints and .tolerations hold at most 8 items each (apis/kueue/v1beta2, MaxItems).
FLAVOR_MAX_TAINTS = 8


def flavor_taints(group: NodeGroup) -> list[dict[str, str]]:
    """The taints the flavor carries: the group's, GPU and EFA first, cut at Kueue's limit of 8. Pods admitted to
    a group with more taints must tolerate the rest themselves (the stage warns)."""
    return group_taints(group)[:FLAVOR_MAX_TAINTS]


# What one device of the flavor's resources is worth, on the ResourceFlavor, so `gpufleet diff` can label a quota in
# its unit from the trees alone: a JSON map resource -> devices per physical GPU, and the sharing strategy.
ANN_DEVICES_PER_GPU = "gpufleet.io/devices-per-gpu"
ANN_SHARING = "gpufleet.io/sharing"


def resource_flavor(fleet: Fleet, group: NodeGroup, *, with_sharing: bool = True) -> dict[str, Any]:
    taints = flavor_taints(group)
    spec: dict[str, Any] = {
        "nodeLabels": {LABEL_NODE_GROUP: group.name},
        "nodeTaints": taints,
        "tolerations": tolerations_for(taints),
    }
    if defaults.placement(fleet, group) != "None":
        spec["topologyName"] = TOPOLOGY_NAME
    per_gpu = devices_per_gpu(group, with_sharing=with_sharing)
    meta = _meta(group.name, labels={LABEL_NODE_GROUP: group.name})
    meta["annotations"] = {
        ANN_DEVICES_PER_GPU: json.dumps(per_gpu, sort_keys=True, separators=(",", ":")),
        ANN_SHARING: group.sharing.strategy.value if with_sharing else "Exclusive",
    }
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": meta, "spec": spec}


def topology() -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Topology",
        "metadata": _meta(TOPOLOGY_NAME),
        "spec": {"levels": [{"nodeLabel": level} for level in TOPOLOGY_LEVELS]},
    }


def cohort(name: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Cohort", "metadata": _meta(name), "spec": {}}


def covered_resources(fleet: Fleet, team: Team, *, with_sharing: bool = True) -> list[str]:
    groups = [fleet.node_group(q.node_group) for q in team.quotas]
    covered = ["cpu", "memory", GPU_RESOURCE]
    covered += sorted({name for g in groups for name in advertised(g, with_sharing=with_sharing)} - {GPU_RESOURCE})
    if any(g.fabric is Fabric.EFA for g in groups):
        covered.append(EFA_RESOURCE)
    # Groups whose pods claim their devices (devices DRA): the devices of each DeviceClass, under Kueue's
    # deviceClassMappings name (device_class_mappings).
    covered += [name for name in claimed_resources(groups) if name not in covered]
    return covered


def claimed_resources(groups: list[NodeGroup]) -> list[str]:
    """The names the DRA devices of `groups` are counted under, GPUs then EFA interfaces, each once."""
    names = [counted(g, GPU_RESOURCE) for g in groups] + [
        counted(g, EFA_RESOURCE) for g in groups if g.fabric is Fabric.EFA
    ]
    return [n for n in dict.fromkeys(names) if n not in (GPU_RESOURCE, EFA_RESOURCE)]


def device_class_mappings(fleet: Fleet) -> list[dict[str, Any]]:
    """Kueue's resources.deviceClassMappings (apis/config/v1beta2 DeviceClassMapping {name, deviceClassNames} @
    v0.19.2): each DeviceClass a team's DRA group claims from, under the name its ClusterQueue covers.

    Why: docs/admission-and-sharing.md, "Design notes", kueue.device_class_mappings."""
    groups = [fleet.node_group(q.node_group) for t in fleet.teams for q in t.quotas]
    classes = [
        c for g in groups for r, c in device_managing(g).claimed.items() if r == GPU_RESOURCE or g.fabric is Fabric.EFA
    ]
    return [{"name": quota_resource(c), "deviceClassNames": [c]} for c in dict.fromkeys(classes)]


def _flavor_quota(
    fleet: Fleet, quota: Quota, covered: list[str], has_cohort: bool, with_sharing: bool
) -> dict[str, Any]:
    group = fleet.node_group(quota.node_group)
    nominal = resource_amounts(group, quota.gpus, with_sharing=with_sharing)
    borrowing = (
        resource_amounts(group, quota.borrowing_limit, with_sharing=with_sharing)
        if has_cohort and quota.borrowing_limit is not None
        else None
    )
    lending = (
        resource_amounts(group, quota.lending_limit, with_sharing=with_sharing)
        if has_cohort and quota.lending_limit is not None
        else None
    )
    resources = []
    for name in covered:
        entry: dict[str, Any] = {"name": name, "nominalQuota": nominal.get(name, 0)}
        if borrowing is not None:
            entry["borrowingLimit"] = borrowing.get(name, 0)
        if lending is not None:
            entry["lendingLimit"] = lending.get(name, 0)
        resources.append(entry)
    return {"name": group.name, "resources": resources}


def _preemptible_ceiling(priorities: tuple[Priority, ...]) -> int | None:
    """Highest value of a preemptible class when some class is not preemptible (else None: no threshold)."""
    if all(p.preemptible for p in priorities):
        return None
    values = [p.value for p in priorities if p.preemptible]
    return max(values) if values else None


def cluster_queue(
    fleet: Fleet, team: Team, *, with_sharing: bool = True, admission_checks: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`with_sharing`: whether the environment includes the sharing stage (a mixed MIG group's resource names).

    Why: docs/admission-and-sharing.md, "Design notes", kueue.cluster_queue."""
    adm = fleet.admission
    covered = covered_resources(fleet, team, with_sharing=with_sharing)
    has_cohort = team.cohort is not None
    preemption: dict[str, Any] = {"withinClusterQueue": adm.within_cluster_queue}
    if has_cohort:
        preemption["reclaimWithinCohort"] = adm.reclaim_within_cohort
        borrow: dict[str, Any] = {"policy": adm.borrow_within_cohort}
        ceiling = _preemptible_ceiling(adm.priorities)
        if adm.borrow_within_cohort != "Never" and ceiling is not None:
            # A borrowing workload may preempt only preemptible classes in other teams' queues.
            borrow["maxPriorityThreshold"] = ceiling
        preemption["borrowWithinCohort"] = borrow
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {LABEL_NAMESPACE_NAME: team.namespace}},
        "queueingStrategy": adm.queueing_strategy,
        "preemption": preemption,
    }
    if team.quotas:
        spec["resourceGroups"] = [
            {
                "coveredResources": covered,
                "flavors": [_flavor_quota(fleet, q, covered, has_cohort, with_sharing) for q in team.quotas],
            }
        ]
    if admission_checks:
        # admissionChecksStrategy, not the deprecated admissionChecks list (apis/kueue/v1beta2 clusterqueue_types.go).
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in admission_checks]}
    if has_cohort:
        spec = {"cohortName": team.cohort, **spec}
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": _meta(team.name, labels={LABEL_TEAM: team.name}),
        "spec": spec,
    }


def local_queue(team: Team, name: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": _meta(name or team.name, team.namespace, {LABEL_TEAM: team.name}),
        "spec": {"clusterQueue": team.name},
    }


# A workload without a queue name in a team namespace gets the namespace's LocalQueue `default`, so it still
# goes through the team's ClusterQueue.
DEFAULT_LOCAL_QUEUE = "default"


def default_local_queue(team: Team) -> dict[str, Any] | None:
    """The team namespace's `default` LocalQueue (None when the team's own queue already has that name)."""
    return None if team.name == DEFAULT_LOCAL_QUEUE else local_queue(team, DEFAULT_LOCAL_QUEUE)


def team_namespace(team: Team, kubernetes_version: str) -> dict[str, Any]:
    """The team's namespace: its Pod Security level (`baseline` unless the team asks for `restricted`) enforced,
    pinned to the cluster's version so an upgrade of the API server does not tighten the rules under running teams."""
    labels = {
        LABEL_TEAM: team.name,
        "pod-security.kubernetes.io/enforce": team.pod_security.lower(),
        "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": team.namespace, "labels": {**LABEL_MANAGED_BY, **labels}},
    }


def workload_priority_class(priority: Priority) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "WorkloadPriorityClass",
        "metadata": _meta(priority.name),
        "value": priority.value,
        "description": _priority_description(priority),
    }


def priority_class(priority: Priority) -> dict[str, Any]:
    """The pod PriorityClass matching a WorkloadPriorityClass.

    Why: docs/admission-and-sharing.md, "Design notes", kueue.priority_class."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _meta(priority.name),
        "value": priority.value,
        "globalDefault": False,
        "preemptionPolicy": "Never" if priority.preemptible else "PreemptLowerPriority",
        "description": _priority_description(priority),
    }


def _priority_description(priority: Priority) -> str:
    kind = "preemptible by higher classes" if priority.preemptible else "not preemptible: no class ranks above it"
    return f"gpufleet priority {priority.name} ({priority.value}), {kind}"


# ---------------------------------------------------------------------------------------------------------------
# The controller Configuration and the Helm values


def team_namespaces(fleet: Fleet) -> list[str]:
    return sorted({t.namespace for t in fleet.teams})


def controller_configuration(fleet: Fleet, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole controller Configuration: it replaces the chart's document, so the pinned chart's own settings
    (versions.KueueRelease.chart_configuration) come first.

    Why: docs/admission-and-sharing.md, "Design notes", kueue.controller_configuration."""
    adm = fleet.admission
    assert fleet.versions.kueue is not None  # rules: the admission stage needs a pinned Kueue
    return {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        **copy.deepcopy(dict(KUEUE[fleet.versions.kueue].chart_configuration)),
        # v1beta2 has no `enable`: the block's presence turns the feature on.
        "waitForPodsReady": {
            "timeout": f"{cold_start.pods_ready_timeout_seconds(fleet)}s",
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffLimitCount": adm.backoff_limit_count,
                "backoffBaseSeconds": adm.backoff_base_seconds,
                "backoffMaxSeconds": adm.backoff_max_seconds,
            },
        },
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": LABEL_NAMESPACE_NAME, "operator": "In", "values": team_namespaces(fleet)}]
        },
        "integrations": {"frameworks": list(frameworks(fleet))},
        # Kueue blocks a workload requesting a resource its ClusterQueue does not cover (quotaCheckStrategy
        # BlockUndeclared, the default).
        # Why: docs/admission-and-sharing.md, "Design notes", kueue.resources.
        "resources": {
            "excludeResourcePrefixes": ["ephemeral-storage", "hugepages-", "rdma/"],
            **({"deviceClassMappings": mappings} if (mappings := device_class_mappings(fleet)) else {}),
        },
        **(extra or {}),
    }


def helm_values(
    fleet: Fleet,
    *,
    prometheus: bool,
    configuration: Mapping[str, Any] | None = None,
    feature_gates: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Values of the kueue chart (keys checked against charts/kueue/values.yaml at <version>).

    Why: docs/admission-and-sharing.md, "Design notes", kueue.helm_values."""
    manager: dict[str, Any] = {"replicas": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}}
    if feature_gates:
        manager["featureGates"] = feature_gates
    return {
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                controller_configuration(fleet, configuration), sort_keys=False
            )
        },
        # Two replicas with leader election: the second serves the admission webhooks while the leader is
        # rescheduled, so job creation in team namespaces does not fail during a node drain.
        "controllerManager": manager,
        # A ServiceMonitor for Kueue's metrics; its CRD exists once the telemetry stage ran.
        "enablePrometheus": prometheus,
    }
