"""Workloads as the gates see them: a kind, a namespace, labels, and pod sets (a pod template and a count).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/workload.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Kinds, with the API groups they may come from.
KINDS = {
    "Job": ("batch",),
    "JobSet": ("jobset.x-k8s.io",),
    "PyTorchJob": ("kubeflow.org",),
    "MPIJob": ("kubeflow.org",),
    "TrainJob": ("trainer.kubeflow.org",),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io",),
    "Deployment": ("apps",),
    "StatefulSet": ("apps",),
    "DaemonSet": ("apps",),
    "Pod": ("",),
}
# The Kueue integration (apis/config/v1beta2 integrations.frameworks name) that manages each kind.
FRAMEWORK = {
    "Job": "batch/job",
    "JobSet": "jobset.x-k8s.io/jobset",
    "PyTorchJob": "kubeflow.org/pytorchjob",
    "MPIJob": "kubeflow.org/mpijob",
    "TrainJob": "trainer.kubeflow.org/trainjob",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/leaderworkerset",
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "Pod": "pod",
}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Kueue TAS pod-template annotations (kueue apis/kueue/v1beta2/topology_types.go).
TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)


class WorkloadError(ValueError):
    """A manifest object the model cannot read (message names the field)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Container:
    name: str
    requests: Mapping[str, int]  # canonical units: cpu millicores, memory/hugepages MiB, else count
    limits: Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSpec:
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Mapping[str, Any], ...] = ()  # nodeSelectorTerms (ORed)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    topology_request: bool = False
    # The pod spec as written (securityContext, volumes, env: what Pod Security and the admission policies read).
    raw: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)  # the pod template's (or Pod's) metadata.labels
    # The devices its ResourceClaims hold, as `<class>.deviceclass.resource.k8s.io/devices` -> count, and the claims
    # whose devices must share one PCIe root (gpufleet.simulate.claims; set by the verdict, which has the templates).
    claimed: Mapping[str, int] = field(default_factory=dict)
    aligned: tuple[tuple[str, Mapping[str, int]], ...] = ()

    def request(self) -> dict[str, int]:
        """The pod's effective request: max(sum of app containers, largest init container) per resource, and the
        devices its claims hold (one allocation per pod, whatever its containers share)."""
        total: dict[str, int] = dict(self.claimed)
        for c in self.containers:
            for k, v in c.requests.items():
                total[k] = total.get(k, 0) + v
        for c in self.init_containers:
            for k, v in c.requests.items():
                total[k] = max(total.get(k, 0), v)
        return total

    def guaranteed(self) -> bool:
        """QoS Guaranteed: every container has cpu and memory limits equal to its requests."""
        return all(
            c.limits.get(r) is not None and c.requests.get(r) == c.limits.get(r)
            for c in self.containers + self.init_containers
            for r in ("cpu", "memory")
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSet:
    name: str
    count: int
    pod: PodSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    kind: str
    namespace: str
    name: str
    labels: Mapping[str, str]
    pod_sets: tuple[PodSet, ...]
    owner_kinds: tuple[str, ...] = ()
    # (apiVersion, kind) of the ownerReference marked controller, if any
    controller: tuple[str, str] | None = None
    api_version: str = ""
    controllers: tuple[
        tuple[str, str, str], ...
    ] = ()  # (apiVersion, kind, name) of ownerReferences with controller: true
    spec: Mapping[str, Any] = field(default_factory=dict)  # the object's spec as written (a TrainJob's overrides)
    groups: int = 1  # a LeaderWorkerSet's replicas: Kueue admits each group (leader + workers) as its own workload
    # The pod sets of the Workload Kueue computes, where they differ from the pods the controller creates (a
    # TrainJob: trainjob_pod_sets); None when they are pod_sets.
    kueue_pod_sets: tuple[PodSet, ...] | None = None
    # (ScaledObject, its maxReplicaCount) where this is a target judged at KEDA's maximum (gpufleet.simulate.scaling)
    scaled_by: tuple[str, int] | None = None

    @property
    def pod_count(self) -> int:
        return sum(ps.count for ps in self.pod_sets)

    @property
    def queue_name(self) -> str | None:
        return self.labels.get(QUEUE_LABEL) or None


_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|Ki|Mi|Gi|Ti|M|G|T|)$")
_MIB = {
    "": 1 / (1024 * 1024),
    "k": 1000 / (1024 * 1024),
    "Ki": 1 / 1024,
    "Mi": 1,
    "Gi": 1024,
    "Ti": 1024 * 1024,
    "M": 1e6 / (1024 * 1024),
    "G": 1e9 / (1024 * 1024),
    "T": 1e12 / (1024 * 1024),
}


def quantity(resource: str, value: Any, where: str) -> int:
    """A Kubernetes quantity in the model's unit for `resource` (rounded up: a fraction still needs a whole unit)."""
    text = str(value)
    match = _QUANTITY.match(text)
    if match is None:
        raise WorkloadError(f"{where}: {text!r} is not a Kubernetes quantity")
    number, suffix = float(match.group(1)), match.group(2)
    if not math.isfinite(number) or number > 2**63:  # beyond the API server's int64 quantities
        raise WorkloadError(f"{where}: {text!r} is larger than a Kubernetes quantity can be")
    if resource == "cpu":
        milli = number if suffix == "m" else number * 1000 * {"": 1, "k": 1000}.get(suffix, 1)
        return int(-(-milli // 1))
    if resource == "memory" or resource.startswith("hugepages-") or resource == "ephemeral-storage":
        return int(-(-(number * _MIB.get(suffix, 1)) // 1)) if suffix != "m" else 0
    return int(number)


def _resources(raw: Any, where: str) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{where}: must be a mapping of resource names to quantities")
    return {str(k): quantity(str(k), v, f"{where}.{k}") for k, v in raw.items()}


# PodSpec fields the model reads by name (core/v1 PodSpec: each a string)
_POD_TEXT_FIELDS = ("priorityClassName", "schedulerName", "runtimeClassName", "serviceAccountName")


def _mapping(raw: Any, where: str) -> Mapping[str, Any]:
    """A field that must be a mapping, {} when absent: the API server rejects any other type, and
    explain must not crash on it (`resources: "x"`, `affinity: "x"`)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{where}: must be a mapping")
    return raw


def _strings(raw: Any, where: str) -> dict[str, str]:
    """A map[string]string field (nodeSelector, labels): keys and values strings."""
    mapping = _mapping(raw, where)
    for key, value in mapping.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise WorkloadError(f"{where}: must map strings to strings, not {key!r}: {value!r}")
    return dict(mapping)


def _container(raw: Any, where: str) -> Container:
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{where}: must be a mapping")
    res = _mapping(raw.get("resources"), f"{where}.resources")
    limits = _resources(res.get("limits"), f"{where}.resources.limits")
    requests = _resources(res.get("requests"), f"{where}.resources.requests")
    # A resource with only a limit is requested at the limit (API defaulting, pkg/apis/core/v1/defaults.go).
    requests = {**limits, **requests}
    return Container(name=str(raw.get("name", "")), requests=requests, limits=limits)


def _list(raw: Any, where: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WorkloadError(f"{where}: must be a list")
    return raw


def pod_spec(template: Any, where: str) -> PodSpec:
    """A pod template (`metadata` + `spec`) or a Pod."""
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise WorkloadError(f"{where}.spec: a pod template needs a spec")
    spec = template["spec"]
    for name in _POD_TEXT_FIELDS:
        if not isinstance(spec.get(name, ""), str):
            raise WorkloadError(f"{where}.spec.{name}: must be a name")
    containers = _list(spec.get("containers"), f"{where}.spec.containers")
    if not containers:
        raise WorkloadError(f"{where}.spec.containers: a pod needs at least one container")
    node_affinity = _mapping(
        _mapping(spec.get("affinity"), f"{where}.spec.affinity").get("nodeAffinity"),
        f"{where}.spec.affinity.nodeAffinity",
    )
    affinity = _mapping(
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"),
        f"{where}.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    )
    annotations = _mapping(
        _mapping(template.get("metadata"), f"{where}.metadata").get("annotations"), f"{where}.metadata.annotations"
    )
    return PodSpec(
        containers=tuple(_container(c, f"{where}.spec.containers[{i}]") for i, c in enumerate(containers)),
        init_containers=tuple(
            _container(c, f"{where}.spec.initContainers[{i}]")
            for i, c in enumerate(_list(spec.get("initContainers"), f"{where}.spec.initContainers"))
        ),
        node_selector=_strings(spec.get("nodeSelector"), f"{where}.spec.nodeSelector"),
        required_terms=tuple(_list(affinity.get("nodeSelectorTerms"), f"{where}.spec.affinity.nodeAffinity")),
        tolerations=tuple(_list(spec.get("tolerations"), f"{where}.spec.tolerations")),
        topology_request=any(a in annotations for a in TOPOLOGY_ANNOTATIONS),
        raw=spec,
        labels=_strings(
            _mapping(template.get("metadata"), f"{where}.metadata").get("labels"), f"{where}.metadata.labels"
        ),
    )


def _count(value: Any, default: int, where: str) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or value < 0:
        raise WorkloadError(f"{where}: must be a non-negative integer")
    return value


def job_pods(job: Mapping[str, Any], where: str) -> int:
    """The pods a Job runs at once as Kueue counts them: min(parallelism, completions), parallelism defaulting to 1
    and a Job without completions (a work queue) running `parallelism` (kueue v0.19.2
    pkg/controller/jobs/job/job_controller.go `podsCount`; jobset_controller.go `PodsCountPerReplica`)."""
    parallelism = _count(job.get("parallelism"), 1, f"{where}.parallelism")
    completions = job.get("completions")
    if completions is None:
        return parallelism
    return min(parallelism, _count(completions, 1, f"{where}.completions"))


def _replica_specs(spec: Mapping[str, Any], key: str) -> list[PodSet]:
    specs = spec.get(key)
    if not isinstance(specs, Mapping) or not specs:
        raise WorkloadError(f"spec.{key}: needs at least one replica type")
    return [
        PodSet(
            name=str(role).lower(),
            count=_count(_mapping(rs, f"spec.{key}.{role}").get("replicas"), 1, f"spec.{key}.{role}.replicas"),
            pod=pod_spec(_mapping(rs, f"spec.{key}.{role}").get("template"), f"spec.{key}.{role}.template"),
        )
        for role, rs in specs.items()
    ]


def _pod_sets(kind: str, obj: Mapping[str, Any]) -> list[PodSet]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise WorkloadError("spec: missing")
    if kind == "Pod":
        return [PodSet(name="main", count=1, pod=pod_spec(obj, ""))]
    if kind == "Job":
        return [PodSet(name="main", count=job_pods(spec, "spec"), pod=pod_spec(spec.get("template"), "spec.template"))]
    if kind in ("Deployment", "StatefulSet"):
        return [
            PodSet(
                name="main",
                count=_count(spec.get("replicas"), 1, "spec.replicas"),
                pod=pod_spec(spec.get("template"), "spec.template"),
            )
        ]
    if kind == "DaemonSet":
        return [PodSet(name="main", count=1, pod=pod_spec(spec.get("template"), "spec.template"))]
    if kind == "JobSet":
        out = []
        for i, raw in enumerate(_list(spec.get("replicatedJobs"), "spec.replicatedJobs")):
            where = f"spec.replicatedJobs[{i}]"
            rj = _mapping(raw, where)
            job = _mapping(_mapping(rj.get("template"), f"{where}.template").get("spec"), f"{where}.template.spec")
            count = _count(rj.get("replicas"), 1, f"{where}.replicas") * job_pods(job, f"{where}.template.spec")
            out.append(
                PodSet(
                    name=str(rj.get("name", i)),
                    count=count,
                    pod=pod_spec(job.get("template"), f"{where}.template.spec.template"),
                )
            )
        if not out:
            raise WorkloadError("spec.replicatedJobs: needs at least one replicated job")
        return out
    if kind == "PyTorchJob":
        return _replica_specs(spec, "pytorchReplicaSpecs")
    if kind == "MPIJob":
        return _replica_specs(spec, "mpiReplicaSpecs")
    if kind == "TrainJob":
        # Trainer v2: the pod shape lives in the referenced runtime; what the TrainJob itself says is the node
        # count and per-node resources (trainer.kubeflow.org/v1alpha1 Trainer.numNodes, resourcesPerNode).
        trainer = _mapping(spec.get("trainer"), "spec.trainer")
        resources = _mapping(trainer.get("resourcesPerNode"), "spec.trainer.resourcesPerNode")
        container = {"name": "node", "resources": resources}
        pod = pod_spec({"spec": {"containers": [container]}}, "spec.trainer")
        return [PodSet(name="node", count=_count(trainer.get("numNodes"), 1, "spec.trainer.numNodes"), pod=pod)]
    if kind == "LeaderWorkerSet":
        return lws_pod_sets(spec)
    raise AssertionError(kind)


def lws_pod_sets(spec: Mapping[str, Any]) -> list[PodSet]:
    """One group of a LeaderWorkerSet as Kueue's integration builds its workload (kueue v0.19.2
    pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go podSets): with a leaderTemplate, pod set
    `leader` (1 pod) and `worker` (size - 1); without one, pod set `main` of `size` pods from the workerTemplate
    (size defaults to 1).

    Why: docs/explain-model.md, "Design notes", workload.lws_pod_sets."""
    template = spec.get("leaderWorkerTemplate")
    if not isinstance(template, Mapping):
        raise WorkloadError("spec.leaderWorkerTemplate: missing")
    size = _count(template.get("size"), 1, "spec.leaderWorkerTemplate.size")
    worker = pod_spec(template.get("workerTemplate"), "spec.leaderWorkerTemplate.workerTemplate")
    if template.get("leaderTemplate") is None:
        return [PodSet(name="main", count=size, pod=worker)]
    leader = pod_spec(template.get("leaderTemplate"), "spec.leaderWorkerTemplate.leaderTemplate")
    return [PodSet(name="leader", count=1, pod=leader), PodSet(name="worker", count=size - 1, pod=worker)]


# --- TrainJob: its pods come from the referenced runtime ---------------------------------------------------------

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def _merged_resources(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """trainingruntime.MergeResourceRequirements (kubeflow/trainer v2.3.0 pkg/util/trainingruntime): a strategic
    merge of the TrainJob's resourcesPerNode over the runtime container's: limits and requests merge key by key."""
    out = {k: dict(v) for k, v in base.items() if isinstance(v, Mapping)}
    for key in ("limits", "requests"):
        if isinstance(override.get(key), Mapping):
            out[key] = {**out.get(key, {}), **override[key]}
    return out


def _replaced_resources(override: Mapping[str, Any]) -> dict[str, Any]:
    """Trainer v2.2.1's JobSet builder (pkg/runtime/framework/plugins/jobset/builder.go Trainer): the `node`
    container's resources become resourcesPerNode's limits and requests, whatever the runtime's were."""
    return {k: dict(override[k]) for k in ("limits", "requests") if isinstance(override.get(k), Mapping)}


def trainjob_pod_sets(
    spec: Mapping[str, Any], runtime_spec: Mapping[str, Any], *, replace_resources: bool = False
) -> list[PodSet]:
    """A TrainJob's pod sets from its runtime's JobSet template with the TrainJob's overrides, as the Trainer's
    runtime framework builds the JobSet Kueue admits (kueue v0.19.2 pkg/controller/jobs/trainjob getChildJobSet):
    each replicated job is one pod set of its parallelism (default 1); the one labelled ancestor `trainer` runs
    mlPolicy.numNodes pods, or the TrainJob's trainer.numNodes (torch plugin EnforceMLPolicy); with MPI
    runLauncherAsNode the `node` job runs numNodes - 1 (at least 1; mpi plugin EnforceMLPolicy).

    Why: docs/explain-model.md, "Design notes", workload.trainjob_pod_sets."""
    trainer = spec.get("trainer") or {}
    ml = runtime_spec.get("mlPolicy") or {}
    mpi = ml.get("mpi") if isinstance(ml.get("mpi"), Mapping) else None
    launcher_as_node = bool(mpi and mpi.get("runLauncherAsNode"))
    jobs = _list(
        ((runtime_spec.get("template") or {}).get("spec") or {}).get("replicatedJobs"), "runtime replicatedJobs"
    )
    out = []
    for i, rj in enumerate(jobs):
        name = str(rj.get("name", i))
        template = rj.get("template") or {}
        job = template.get("spec") or {}
        ancestor = ((template.get("metadata") or {}).get("labels") or {}).get(ANCESTOR_LABEL)
        count = _count(job.get("parallelism"), 1, f"runtime replicatedJobs[{i}].parallelism")
        if ancestor == "trainer" and ml:
            count = _count(ml.get("numNodes"), 1, "runtime mlPolicy.numNodes")
            if trainer.get("numNodes") is not None and not mpi:
                count = _count(trainer.get("numNodes"), 1, "spec.trainer.numNodes")
        if mpi and name == "node" and trainer.get("numNodes") is not None:
            numbers = _count(trainer.get("numNodes"), 1, "spec.trainer.numNodes")
            count = max(numbers - 1, 1) if launcher_as_node else numbers
        pod_template = dict(job.get("template") or {})
        pod = dict(pod_template.get("spec") or {})
        if ancestor == "trainer" or (launcher_as_node and name == "node"):
            containers = []
            for c in _list(pod.get("containers"), f"runtime replicatedJobs[{i}] containers"):
                c = dict(c)
                if c.get("name") == "node":
                    if ancestor == "trainer":
                        for key in ("image", "command", "args"):
                            if trainer.get(key) is not None:
                                c[key] = trainer[key]
                    if trainer.get("env"):
                        env = {e.get("name"): e for e in c.get("env") or []}
                        env.update({e.get("name"): e for e in trainer["env"]})
                        c["env"] = list(env.values())
                    per_node = trainer.get("resourcesPerNode")
                    if isinstance(per_node, Mapping) and replace_resources:
                        if any(isinstance(per_node.get(k), Mapping) for k in ("limits", "requests")):
                            c["resources"] = _replaced_resources(per_node)
                    elif isinstance(per_node, Mapping):
                        c["resources"] = _merged_resources(c.get("resources") or {}, per_node)
                containers.append(c)
            pod["containers"] = containers
        out.append(
            PodSet(
                name=name,
                count=count,
                pod=pod_spec({**pod_template, "spec": pod}, f"runtime replicatedJobs[{i}].template.spec.template"),
            )
        )
    if not out:
        raise WorkloadError("the runtime has no replicated jobs")
    return out


def is_workload(obj: Any) -> bool:
    return isinstance(obj, Mapping) and obj.get("kind") in KINDS and isinstance(obj.get("apiVersion"), str)


def _identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a Workload says of the object itself: its kind, apiVersion and metadata."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise WorkloadError("metadata.name: missing")
    labels = _strings(meta.get("labels"), "metadata.labels")
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):  # was read as str([1]): "[1]"
        raise WorkloadError("metadata.namespace: must be a name")
    refs = [o for o in _list(meta.get("ownerReferences"), "metadata.ownerReferences") if isinstance(o, Mapping)]
    controllers = tuple(
        (str(o.get("apiVersion", "")), str(o.get("kind")), str(o.get("name", "")))
        for o in refs
        if o.get("controller") is True
    )
    return {
        "kind": str(obj["kind"]),
        "namespace": str(namespace or "default"),
        "name": str(meta["name"]),
        "labels": {str(k): str(v) for k, v in labels.items()},
        "owner_kinds": tuple(str(o.get("kind")) for o in refs),
        "controller": next(
            ((str(o.get("apiVersion", "")), str(o.get("kind", ""))) for o in refs if o.get("controller") is True), None
        ),
        "api_version": str(obj.get("apiVersion", "")),
        "controllers": controllers,
    }


def workload(obj: Mapping[str, Any]) -> Workload:
    """The workload of one manifest object (raises WorkloadError naming the bad field)."""
    identity = _identity(obj)
    kind = identity["kind"]
    return Workload(
        **identity,
        pod_sets=tuple(_pod_sets(kind, obj)),
        spec=obj.get("spec") or {},
        groups=_count((obj.get("spec") or {}).get("replicas"), 1, "spec.replicas") if kind == "LeaderWorkerSet" else 1,
    )


def unserved(obj: Mapping[str, Any]) -> Workload:
    """The workload of an object of a kind the API server does not serve at its apiVersion: its kind and metadata
    only.

    Why: docs/explain-model.md, "Design notes", workload.unserved."""
    return Workload(**_identity(obj), pod_sets=())
