"""Will it run? A workload through every gate a real cluster puts in its way, in the order it meets them:
the API server (is the kind served; then authorization, Pod Security and gpufleet's ValidatingAdmissionPolicies),
Kueue admission, then per pod set: scheduling on the node groups it may use (existing nodes before what the
autoscaler adds), the Cluster Autoscaler bringing the nodes, the kubelet's Topology Manager, the device plugin's
Allocate.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/verdict.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpufleet.base.errors import Path
from gpufleet.facts import catalog, stages
from gpufleet.plan.manifests.sharing import MIG_MIXED
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate import (
    admission_policies,
    api_server,
    authorization,
    claims,
    device_plugin,
    kubelet,
    kueue_admission,
    pod_security,
    preemption,
    scheduling,
    tenancy,
    volumes,
)
from gpufleet.simulate.autoscaler import (
    karpenter_launch,
    karpenter_option,
    nodes_needed,
    scale_up_blocker,
    template_blocker,
)
from gpufleet.simulate.nodes import NodeModel, fleet_nodes
from gpufleet.simulate.workload import QUEUE_LABEL, PodSet, PodSpec, Workload, quantity, trainjob_pod_sets
from gpufleet.spec.names import GPU_RESOURCE, LABEL_NODE_GROUP

ASSUMPTION = (
    "assumes an otherwise idle fleet: no other workload holds quota or nodes; groups grow to maxSize through the"
    " autoscaler (a Karpenter pool: to its NodePool limit)"
)
# With --running: the given workloads hold nodes (not quota: Kueue's own preemption is not modelled).
RUNNING_ASSUMPTION = (
    "assumes the fleet runs only the --running workloads, which hold nodes but no Kueue quota (Kueue's preemption is"
    " not modelled); groups grow to maxSize through the autoscaler (a Karpenter pool: to its NodePool limit)"
)
HEADROOM_ASSUMPTION = "gpufleet's headroom placeholders hold their warm nodes"
SYSTEM_GROUP = "system"
# The labels a pod may select untainted CPU nodes by: gpufleet's system group (AL2023 x86_64, mode Create) or the
# existing cluster's nodes; the kubelet sets kubernetes.io/os on every node.
SYSTEM_LABELS = {LABEL_NODE_GROUP: SYSTEM_GROUP, "kubernetes.io/os": "linux"}
# `api`: what the API server refuses before Kueue sees the workload (a kind it does not serve, Pod Security, a
# ValidatingAdmissionPolicy); `access`: its authorization of the submitter (--as).
STAGES = ("api", "access", "admission", "scheduling", "kubelet", "device-plugin", "autoscaler")
# Policy resource names -> kinds (admissionregistration resourceRules).
_RESOURCE_KIND = {
    "jobs": "Job",
    "jobsets": "JobSet",
    "pods": "Pod",
    "deployments": "Deployment",
    "statefulsets": "StatefulSet",
    "pytorchjobs": "PyTorchJob",
    "mpijobs": "MPIJob",
    "trainjobs": "TrainJob",
    "leaderworkersets": "LeaderWorkerSet",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Reason:
    stage: str
    message: str
    fix: str
    spec_path: Path | None = None  # the fleet spec field to change, when the fix is the spec's

    def json(self) -> dict[str, str]:
        return {"stage": self.stage, "message": self.message, "fix": self.fix}


@dataclass(frozen=True, slots=True, kw_only=True)
class Provision:
    """Nodes a Karpenter NodePool launches for the workload's pods (the model's provisioning: the pool's template
    fits the pending pods Kueue admitted, within its limits; gpufleet.simulate.autoscaler.scale_up_blocker)."""

    node_group: str
    node_pool: str
    nodes: int  # new nodes, beyond those the idle fleet has (a pool keeps none)
    instance_type: str
    capacity_types: tuple[str, ...]

    def text(self) -> str:
        kinds = " or ".join(self.capacity_types)
        return (
            f"provisioned by Karpenter NodePool {self.node_pool}: {self.nodes} new {self.instance_type}"
            f" node{'s' * (self.nodes != 1)} ({kinds}) launched for the pending pods"
        )

    def json(self) -> dict[str, Any]:
        return {
            "nodeGroup": self.node_group,
            "nodePool": self.node_pool,
            "nodes": self.nodes,
            "instanceType": self.instance_type,
            "capacityTypes": list(self.capacity_types),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    kind: str
    namespace: str
    name: str
    runs: bool
    cluster_queue: str | None = None
    flavor: str | None = None
    node_group: str | None = None
    reasons: tuple[Reason, ...] = ()
    notes: tuple[str, ...] = ()
    # The workload's pods, and how many of them run (all of them, or none, except where pods are admitted one by
    # one: a Deployment's); `runs` only when every pod does.
    pods_total: int = 0
    pods_admitted: int = 0
    # The Karpenter NodePools that launch nodes for the pods that run (none on managed node groups).
    provisioned: tuple[Provision, ...] = ()
    assumes: str = ASSUMPTION
    # (pod set index, node group, pods) where the pods run: what `--running` workloads hold (preemption.running)
    placements: tuple[tuple[int, str, int], ...] = ()
    # the residents its pods preempt (preemption.residents_json)
    preempts: tuple[Mapping[str, Any], ...] = ()
    # a LeaderWorkerSet of several replica groups: (groups admitted, groups); Kueue admits each on its own
    groups: tuple[int, int] | None = None
    # (ScaledObject, maxReplicaCount) where the workload is judged at KEDA's maximum (gpufleet.simulate.scaling)
    scaled_by: tuple[str, int] | None = None

    def json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"preempts": [dict(p) for p in self.preempts]} if self.preempts else {}
        if self.groups is not None:
            extra["groups"] = {"total": self.groups[1], "admitted": self.groups[0]}
        if self.scaled_by is not None:
            extra["scaledBy"] = {"scaledObject": self.scaled_by[0], "maxReplicaCount": self.scaled_by[1]}
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "runs": self.runs,
            "pods": {"total": self.pods_total, "admitted": self.pods_admitted},
            "clusterQueue": self.cluster_queue,
            "flavor": self.flavor,
            "nodeGroup": self.node_group,
            "provisionedBy": [p.json() for p in self.provisioned],
            "reasons": [r.json() for r in self.reasons],
            **extra,
            "assumes": self.assumes,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetModel:
    """Everything the gates read, derived once from the plan of one environment."""

    plan: RolloutPlan
    nodes: Mapping[str, NodeModel]
    kueue: kueue_admission.Kueue | None
    queue_policy: tuple[frozenset[str], frozenset[str], str] | None  # (kinds, namespaces, message)
    system_nodes: bool
    # the most pods the system group's nodes hold (maxSize times the type's maxPods); None on an Existing cluster,
    # whose nodes gpufleet does not know
    system_pods: int | None = None
    paths: Mapping[str, Path] = field(default_factory=dict)
    # kind -> apiVersions the API server serves (gpufleet.simulate.api_server.served_kinds)
    served: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(api_server.BUILT_IN))
    # namespace -> (Pod Security level, version) the plan's Namespaces enforce
    pod_security: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    policies: tuple[admission_policies.BoundPolicy, ...] = ()
    serving: admission_policies.ServingTargets | None = None  # what marks a pod template as bound for Inference
    tenants: tenancy.TenantPolicies | None = None  # the tenant admission policies the plan renders
    # name -> spec of each ClusterTrainingRuntime the plan renders (gpufleet.plan.manifests.workloads.runtimes)
    runtimes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # the PriorityClasses the plan renders, and the pods that hold each group's nodes (gpufleet.simulate.preemption)
    priorities: Mapping[str, preemption.PodPriority] = field(default_factory=dict)
    residents: Mapping[str, tuple[preemption.Resident, ...]] = field(default_factory=dict)
    assumes: str = ASSUMPTION
    # the PersistentVolumeClaims, volumes and CSI node plugins the plan renders (gpufleet.simulate.volumes)
    volumes: volumes.Volumes = field(default_factory=volumes.Volumes)
    # (namespace, name) -> ResourceClaimSpec of the ResourceClaimTemplates the plan renders (and explain is given),
    # and DeviceClass -> the stage whose driver creates it (gpufleet.simulate.claims)
    claim_templates: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    device_classes: Mapping[str, tuple[str, bool]] = field(default_factory=dict)

    def group_path(self, group: str, *rest: str | int) -> Path | None:
        base = self.paths.get(f"nodeGroup:{group}")
        return None if base is None else base + rest


def _queue_policy(plan: RolloutPlan) -> tuple[frozenset[str], frozenset[str], str] | None:
    policy = binding = None
    for stage in plan.included():
        for res in stage.content.resources:
            obj = res.args.get("object") or {}
            if obj.get("metadata", {}).get("name") == "gpufleet-require-queue-name":
                if obj["kind"] == "ValidatingAdmissionPolicy":
                    policy = obj
                elif obj["kind"] == "ValidatingAdmissionPolicyBinding":
                    binding = obj
    if policy is None or binding is None:
        return None
    kinds = frozenset(
        _RESOURCE_KIND[r]
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
        for r in rule["resources"]
        if r in _RESOURCE_KIND
    )
    namespaces = frozenset(
        v for e in binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"] for v in e["values"]
    )
    return kinds, namespaces, policy["spec"]["validations"][0]["message"]


def _system_pods(plan: RolloutPlan) -> int | None:
    system = plan.fleet.cluster.system_nodes
    if plan.fleet.cluster.mode == "Existing" or system is None:
        return None
    return system.max_size * catalog.max_pods(system.instance_type)


def fleet_model(plan: RolloutPlan) -> FleetModel:
    priorities = preemption.priority_classes(plan)
    residents = preemption.standing(plan, priorities)
    nodes = {n.group: n for n in fleet_nodes(plan)}
    return FleetModel(
        plan=plan,
        nodes=nodes,
        kueue=kueue_admission.from_plan(plan),
        queue_policy=_queue_policy(plan),
        # mode Create: gpufleet's untainted system group (cluster.systemNodes); mode Existing: the cluster's own nodes.
        system_nodes=plan.fleet.cluster.mode == "Existing" or plan.fleet.cluster.system_nodes is not None,
        system_pods=_system_pods(plan),
        paths=plan.fleet.paths,
        served=api_server.served_kinds(plan),
        pod_security=pod_security.namespace_levels(plan),
        policies=admission_policies.bound_policies(plan),
        serving=admission_policies.serving_targets(plan, nodes),
        tenants=tenancy.from_plan(plan),
        runtimes=_runtimes(plan),
        priorities=priorities,
        residents=residents,
        volumes=volumes.from_plan(plan),
        claim_templates=claims.templates(plan),
        device_classes=claims.device_classes(plan),
        assumes=f"{ASSUMPTION}; {HEADROOM_ASSUMPTION}" if residents else ASSUMPTION,
    )


def with_running(model: FleetModel, wl: Workload, verdict: Verdict) -> FleetModel:
    """The model once `wl` runs where `verdict` placed it: its pods hold those nodes (not Kueue quota).

    Why: docs/explain-model.md, "Design notes", verdict.with_running."""
    residents = {g: list(r) for g, r in model.residents.items()}
    on_nodes = [(i, g, n) for i, g, n in verdict.placements if g in model.nodes]
    for group, pods in preemption.running(wl, model.priorities, on_nodes).items():
        residents.setdefault(group, []).extend(pods)
    headroom = any(r.own for rs in model.residents.values() for r in rs)
    return replace(
        model,
        residents={g: tuple(r) for g, r in residents.items()},
        assumes=f"{RUNNING_ASSUMPTION}; {HEADROOM_ASSUMPTION}" if headroom else RUNNING_ASSUMPTION,
    )


def _runtimes(plan: RolloutPlan) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for stage in plan.included():
        for res in stage.content.resources:
            obj = res.args.get("object") or {}
            if obj.get("kind") == "ClusterTrainingRuntime":
                out[str(obj["metadata"]["name"])] = obj.get("spec") or {}
    return out


def _from_runtime(model: FleetModel, wl: Workload) -> tuple[Workload | None, Reason | None, str | None]:
    """A TrainJob with the pod sets of its runtime (workload.trainjob_pod_sets), or the Trainer webhook's refusal of
    a ClusterTrainingRuntime that does not exist (kubeflow/trainer v2.3.0 pkg/runtime/core/clustertrainingruntime.go
    ValidateObjects: "specified clusterTrainingRuntime must be created before the TrainJob is created").

    Why: docs/explain-model.md, "Design notes", verdict._from_runtime."""
    ref = wl.spec.get("runtimeRef") or {}
    name = str(ref.get("name") or "")
    if (ref.get("kind") or "ClusterTrainingRuntime") != "ClusterTrainingRuntime":
        return (
            wl,
            None,
            f"runtime {ref.get('kind')} {name} is namespaced, outside the fleet: pods read from spec.trainer",
        )
    runtime = model.runtimes.get(name)
    if runtime is None:
        known = ", ".join(sorted(model.runtimes)) or "none"
        return (
            None,
            Reason(
                stage="api",
                message=(
                    f'denied by the Trainer\'s webhook: ClusterTrainingRuntime "{name}" does not exist (specified'
                    " clusterTrainingRuntime must be created before the TrainJob is created)"
                ),
                fix=f"set spec.runtimeRef.name to one of the fleet's runtimes: {known}",
            ),
            None,
        )
    pods = tuple(trainjob_pod_sets(wl.spec, runtime))
    # Kueue v0.19.2 builds the TrainJob's Workload with Trainer v2.2.1 (its go.mod), which replaces the runtime's
    # `node` resources with resourcesPerNode; Trainer v2.3.0's controller merges them into the pods it creates.
    kueue = tuple(trainjob_pod_sets(wl.spec, runtime, replace_resources=True))
    if [ps.pod.request() for ps in kueue] == [ps.pod.request() for ps in pods]:
        return replace(wl, pod_sets=pods), None, None
    differ = [
        f"{ps.name} {_requests(k.pod.request())} (the pods: {_requests(ps.pod.request())})"
        for ps, k in zip(pods, kueue, strict=True)
        if ps.pod.request() != k.pod.request()
    ]
    note = (
        "Kueue's Workload and the pods differ: Kueue v0.19.2 computes the Workload with Trainer v2.2.1, which"
        " replaces the runtime's node resources with spec.trainer.resourcesPerNode, while Trainer v2.3.0 merges"
        f" them into the pods it creates; quota per pod: {'; '.join(differ)}"
    )
    return replace(wl, pod_sets=pods, kueue_pod_sets=kueue), None, note


def _requests(request: Mapping[str, int]) -> str:
    return ", ".join(f"{r} {kueue_admission.fmt(r, v)}" for r, v in sorted(request.items()) if v) or "nothing"


def _effective_pod(pod: PodSpec, flavor: kueue_admission.Flavor | None) -> tuple[PodSpec, list[Mapping[str, Any]]]:
    """The pod as the scheduler sees it: Kueue's flavor injection, then ExtendedResourceToleration."""
    selector = dict(pod.node_selector)
    tolerations = list(pod.tolerations)
    if flavor is not None:
        selector.update(flavor.node_labels)
        tolerations += list(flavor.tolerations)
    tolerations += scheduling.extended_resource_tolerations(pod)
    effective = PodSpec(
        containers=pod.containers,
        init_containers=pod.init_containers,
        node_selector=selector,
        required_terms=pod.required_terms,
        tolerations=tuple(tolerations),
        topology_request=pod.topology_request,
        raw=pod.raw,  # its priorityClassName decides preemption (gpufleet.simulate.preemption)
        labels=pod.labels,
        claimed=pod.claimed,
        aligned=pod.aligned,
    )
    return effective, tolerations


def _wants_gpu_nodes(pod: PodSpec) -> bool:
    return any(scheduling.is_extended(r) and v > 0 for r, v in pod.request().items())


def _place_with_volumes(
    model: FleetModel,
    namespace: str,
    ps: PodSet,
    pod: PodSpec,
    tolerations: list[Mapping[str, Any]],
    daemon: bool,
    already: Mapping[str, int] | None = None,
    effects: dict[str, preemption.Outcome] | None = None,
) -> tuple[list[str], Reason | None]:
    """_place, with the pod's PersistentVolumeClaims: the scheduler's VolumeBinding first (a missing claim stops
    the pod; a bound volume's node affinity narrows the groups), then kubelet's mount on the group it lands on."""
    binding = volumes.bind(model.volumes, namespace, ps.pod.raw, model.plan.environment)
    if binding.refusal:
        return [], Reason(stage="scheduling", message=binding.refusal[0], fix=binding.refusal[1])
    if not binding.volumes:
        return _place(model, ps, pod, tolerations, daemon, already, effects)
    allowed = {g: n for g, n in model.nodes.items() if binding.allows(n.labels)}
    selected = [n for n in model.nodes.values() if scheduling.matches_node(pod, n.labels)]
    if not any(n.group in allowed for n in selected) and not (
        model.system_nodes and binding.allows(SYSTEM_LABELS) and scheduling.matches_node(pod, SYSTEM_LABELS)
    ):
        names = ", ".join(str(pv["metadata"]["name"]) for pv in binding.volumes)
        return [], Reason(
            stage="scheduling",
            message=(
                f"node(s) had volume node affinity conflict: volume {names} may be used on node group"
                f" {', '.join(sorted(allowed)) or 'none'} only"
            ),
            fix=f"select node group {', '.join(sorted(allowed))} (nodeSelector gpufleet.io/node-group), or mount"
            " that group's claim",
        )
    restricted = replace(model, nodes=allowed, system_nodes=model.system_nodes and binding.allows(SYSTEM_LABELS))
    groups, stop = _place(restricted, ps, pod, tolerations, daemon, already, effects)
    if stop:
        return groups, stop
    for group in groups:
        taints = model.nodes[group].taints if group in model.nodes else ()
        failed = volumes.mount_error(model.volumes, binding, namespace, ps.pod.raw, group, taints)
        if failed:
            return [], Reason(stage="kubelet", message=failed[0], fix=failed[1])
    return groups, None


def _place(
    model: FleetModel,
    ps: PodSet,
    pod: PodSpec,
    tolerations: list[Mapping[str, Any]],
    daemon: bool,
    already: Mapping[str, int] | None = None,
    effects: dict[str, preemption.Outcome] | None = None,
) -> tuple[list[str], Reason | None]:
    """The node groups this pod set runs on, or the first gate that stops it.

    Why: docs/explain-model.md, "Design notes", verdict._place."""
    already = already or {}
    request = scheduling.fit_request(pod)
    # A Karpenter pool of several instance types: the type Karpenter launches for these pods (the cheapest that fits
    # them, autoscaler.karpenter_launch), whose labels, resources and topology the gates below judge.
    nodes = [karpenter_option(n, pod, already.get(n.group, 0) + ps.count) for n in model.nodes.values()]
    selected = [n for n in nodes if scheduling.matches_node(pod, n.labels)]
    # The device plugin's resource names stop a pod only where no selected group advertises what it asks for.
    refusals = [(node, mig) for node in selected if (mig := device_plugin.unadvertised_mig(node, pod))]
    if refusals and len(refusals) == len(selected):
        node, mig = refusals[0]
        mixed = device_plugin.advertised_mig(node)
        fix = (
            f"request one of {', '.join(mixed)} (one MIG slice each)"
            if mixed
            else f"request {GPU_RESOURCE} (one MIG slice each)"
        )
        return [], Reason(stage="device-plugin", message=mig, fix=f"{fix} on node group {node.group}")
    explicit = bool(pod.node_selector or pod.required_terms)
    tolerated = [n for n in selected if not scheduling.untolerated(n.taints, tolerations)]
    if daemon:
        refused = [n for n in selected if n not in tolerated]
        if refused and explicit:
            t = scheduling.untolerated(refused[0].taints, tolerations)[0]
            return [], Reason(
                stage="scheduling",
                message=(
                    f"node group {refused[0].group} has taint {t['key']}={t['value']}:{t['effect']} the DaemonSet does"
                    " not tolerate"
                ),
                fix=f"add a toleration for {t['key']}",
            )
        groups = [n.group for n in tolerated]
        if (
            not groups
            and model.system_nodes
            and not _wants_gpu_nodes(pod)
            and scheduling.matches_node(pod, SYSTEM_LABELS)
        ):
            return [SYSTEM_GROUP], None
        if not groups:
            return [], Reason(
                stage="scheduling",
                message="the DaemonSet selects no node of this fleet it tolerates",
                fix="select a node group by gpufleet.io/node-group and tolerate its taints",
            )
        for node in tolerated:
            refusal = _on_node(model, node, pod, tolerations, 1)
            if refusal:
                return [], refusal
        return groups, None
    on_system = model.system_nodes and not _wants_gpu_nodes(pod) and scheduling.matches_node(pod, SYSTEM_LABELS)
    if on_system and not tolerated:
        return _on_system(model, already.get(SYSTEM_GROUP, 0) + ps.count)
    if not selected:
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(pod.node_selector.items())) or "its node affinity"
        return [], Reason(
            stage="scheduling",
            message=f"no node group matches {wanted}",
            fix=(
                "select a node group with nodeSelector gpufleet.io/node-group: <group>"
                f" ({', '.join(sorted(model.nodes))})"
            ),
        )
    if not tolerated:
        node = selected[0]
        t = scheduling.untolerated(node.taints, tolerations)[0]
        return [], Reason(
            stage="scheduling",
            message=f"node(s) had untolerated taint {{{t['key']}: {t['value']}}} on node group {node.group}",
            fix=(
                f"add a toleration for {t['key']}, or submit it through the team's queue (Kueue adds the flavor's"
                " tolerations)"
            ),
        )
    fitting = [
        n
        for n in tolerated
        if not scheduling.insufficient(request, n.allocatable) and not claims.misaligned(n.instance_type, pod.aligned)
    ]
    if not fitting:
        node = tolerated[0]
        missing = scheduling.insufficient(request, node.allocatable)
        unallocatable = _unallocatable(node, pod, missing)
        if unallocatable:
            return [], unallocatable
        later = _later_stage(model, node, missing)
        if later:
            return [], later
        detail = ", ".join(
            f"{r} (asks {kueue_admission.fmt(r, request[r])}, a node offers"
            f" {kueue_admission.fmt(r, node.allocatable.get(r, 0))})"
            for r in missing
        )
        # a Karpenter pool of several instance types: the roomiest of them (autoscaler.karpenter_launch)
        largest = (
            f" ({node.instance_type}, the roomiest of its instance types the pod may get)"
            if model.nodes[node.group].instance_options
            else ""
        )
        return [], Reason(
            stage="scheduling",
            message=f"Insufficient {', '.join(missing)} on node group {node.group}{largest}: {detail}",
            fix="ask for at most what one node offers (`gpufleet plan` lists the per-node shape)",
        )

    # kube-scheduler places pods only on nodes that exist; the autoscaler adds nodes for the pods it could not place.
    # Why: docs/explain-model.md, "Design notes", verdict.pods_on.
    def pods_on(node: NodeModel) -> int:
        return already.get(node.group, 0) + ps.count

    # A group whose nodes hold residents: kube-scheduler's fit and preemption among them (gpufleet.simulate.preemption).
    priority = preemption.pod_priority(model.priorities, pod)
    outcomes = {
        n.group: preemption.schedule(
            n, model.residents[n.group], request, pods_on(n), priority, scalable=n.template is not None
        )
        for n in fitting
        if model.residents.get(n.group)
    }

    def on_existing(node: NodeModel) -> bool:
        if node.group in outcomes:
            outcome = outcomes[node.group]
            return outcome.placed == pods_on(node) and outcome.added == 0
        return nodes_needed(node, pod, pods_on(node)) <= node.min_size

    existing = [n for n in fitting if on_existing(n)]
    ordered = existing + [n for n in fitting if n not in existing]
    stop: Reason | None = None
    for node in ordered:
        outcome = outcomes.get(node.group)
        stop = (
            _among_residents(model, node, pod, tolerations, pods_on(node), priority, outcome)
            if outcome is not None
            else _on_node(model, node, pod, tolerations, pods_on(node))
        )
        if stop is None:
            if outcome is not None and effects is not None:
                effects[node.group] = outcome
            return [node.group], None
    return [], stop


def _unallocatable(node: NodeModel, pod: PodSpec, missing: list[str]) -> Reason | None:
    """kube-scheduler's DynamicResources filter on the group's node: the claims' devices (by DeviceClass) beyond what
    its drivers publish, or claims constrained to one PCIe root that its layout cannot hold."""
    short = [r for r in missing if r in pod.claimed]
    if short:
        what = ", ".join(
            f"{pod.claimed[r]} {claims.class_of(r)} device(s) (a node publishes {node.allocatable.get(r, 0)})"
            for r in short
        )
        plugin = not any(claims.class_of(r) for r in node.allocatable if claims.class_of(r))
        why = (
            f" (devices DevicePlugin: its GPUs are {GPU_RESOURCE}, which a pod asks for in its limits)"
            if plugin
            else ""
        )
        return Reason(
            stage="scheduling",
            message=f"cannot allocate all claims on node group {node.group}{why}: its pods claim {what}",
            fix=(
                f"select a node group with devices DRA (nodeSelector gpufleet.io/node-group), or ask for {GPU_RESOURCE}"
                " in the limits here"
                if plugin
                else "claim at most what one node publishes (the templates <group>-gpu-<n> go up to a whole node)"
            ),
        )
    aligned = claims.misaligned(node.instance_type, pod.aligned)
    if aligned:
        return Reason(
            stage="scheduling",
            message=f"cannot allocate all claims on node group {node.group}: {aligned}",
            fix="ask for fewer aligned pairs per pod (one claim per GPU and its EFA interface), or drop the constraint",
        )
    return None


def _on_system(model: FleetModel, pods: int) -> tuple[list[str], Reason | None]:
    """The untainted CPU nodes take what the GPU groups refuse, up to the pods their nodes hold (NodeResourcesFit
    counts every pod against the node's allocatable pods)."""
    if model.system_pods is None or pods <= model.system_pods:
        return [SYSTEM_GROUP], None
    system = model.plan.fleet.cluster.system_nodes
    assert system is not None
    return [], Reason(
        stage="autoscaler",
        message=(
            f"node group {SYSTEM_GROUP} may grow to {system.max_size} node(s) of at most"
            f" {catalog.max_pods(system.instance_type)} pods each ({system.instance_type}); {pods} pod(s) need more"
        ),
        fix="raise cluster.systemNodes.maxSize, or ask for fewer pods",
        spec_path=("cluster", "systemNodes", "maxSize"),
    )


def _among_residents(
    model: FleetModel,
    node: NodeModel,
    pod: PodSpec,
    tolerations: list[Mapping[str, Any]],
    pods: int,
    priority: preemption.PodPriority,
    outcome: preemption.Outcome,
) -> Reason | None:
    """The gates of `_on_node` for a group whose nodes hold residents: the scale-up is the outcome's (nodes the
    residents leave, what the pod may preempt, maxSize), then the kubelet's and the device plugin's."""
    path = model.group_path(node.group, "scaling")
    if outcome.placed < pods and not outcome.held:
        # nothing it may not preempt holds a node: the group is simply too small, as without residents
        return _on_node(model, node, pod, tolerations, pods)
    if outcome.placed < pods:
        policy = "" if priority.preempts else ", preemptionPolicy Never"
        held = (
            f" and {outcome.held} of them hold pods it may not preempt ({', '.join(outcome.holders)}; its priority"
            f" is {priority.text()}{policy})"
            if outcome.held
            else ""
        )
        grows = "keeps" if node.template is None else "may grow to"
        scaler = " and nothing scales it up" if node.template is None else ""
        message = (
            f"node group {node.group} {grows} {node.max_size if node.template else node.min_size} node(s){scaler}"
            f"{held}: {pods - outcome.placed} of {pods} pod(s) of this shape find no node"
        )
        own = any(r.own for r in model.residents[node.group])
        fix = f"raise nodeGroups[{node.group}].scaling.maxSize"
        if outcome.held:
            fix += (", or lower its headroom.nodes" if own else "") + ", or run it at a priority that may preempt them"
        else:
            fix += ", or ask for fewer pods"
        return Reason(stage="autoscaler", message=message, fix=fix, spec_path=path)
    if outcome.added:
        blocked = template_blocker(node, pod, tolerations)
        if blocked:
            return Reason(stage="autoscaler", message=blocked[0], fix=blocked[1], spec_path=path)
    return _on_node(model, node, pod, tolerations, pods, scaled=True)


# The device plugin that advertises a resource, and the rollout stage that installs it (gpufleet.facts.stages;
# docs/network-and-storage.md: the EFA device plugin, its hugepages and the RDMA shared device plugin come with the
# network stage; docs/admission-and-sharing.md: MIG slices by profile once the sharing stage partitions the GPUs).
_ADVERTISED_BY: tuple[tuple[str, str, stages.StageName], ...] = (
    ("vpc.amazonaws.com/efa", "the EFA device plugin", "network"),
    ("hugepages-2Mi", "the EFA setup (2 MiB hugepages)", "network"),
    ("rdma/", "the RDMA shared device plugin", "network"),
    ("nvidia.com/mig-", "the MIG manager's partitioning", "sharing"),
)


def _later_stage(model: FleetModel, node: NodeModel, missing: list[str]) -> Reason | None:
    """A missing resource this environment's rollout has not reached yet: the reason names the stage,
    instead of "ask for at most what one node offers"."""
    for resource in missing:
        if node.allocatable.get(resource, 0):
            continue
        for prefix, component, stage in _ADVERTISED_BY:
            if resource.startswith(prefix) and not stages.included(stage, model.plan.through):
                env = model.plan.environment
                return Reason(
                    stage="scheduling",
                    message=(
                        f"Insufficient {resource} on node group {node.group}: {resource} is advertised by {component},"
                        f" which the {stage} stage (stage {stages.index(stage)}) installs; environment {env} rolls out"
                        f" through {model.plan.through} (stage {stages.index(model.plan.through)})"
                    ),
                    fix=f"roll out through {stage} (environments.{env}.rollout.through), or ask for no {resource}",
                    spec_path=("environments", env, "rollout", "through"),
                )
    return None


def _on_node(
    model: FleetModel,
    node: NodeModel,
    pod: PodSpec,
    tolerations: list[Mapping[str, Any]],
    pods: int,
    scaled: bool = False,
) -> Reason | None:
    """The autoscaler's, the kubelet's and the device plugin's gates on one group (`scaled`: the scale-up was judged
    already)."""
    blocked = None if scaled else scale_up_blocker(node, pod, tolerations, pods)
    if blocked is None and not scaled:
        blocked = _from_zero_with_claims(node, pod, pods)
    if blocked:
        return Reason(
            stage="autoscaler", message=blocked[0], fix=blocked[1], spec_path=model.group_path(node.group, "scaling")
        )
    refused = kubelet.topology_error(node, pod)
    if refused:
        what, needed = refused
        gpus = node.per_numa.get(GPU_RESOURCE, {}).get(0, 0)
        # A MIG group (strategy single) advertises slices under nvidia.com/gpu, not whole GPUs; a mixed one by profile.
        unit = f"MIG slices ({GPU_RESOURCE})" if node.mig_strategy else "GPUs"
        if node.mig_strategy == MIG_MIXED:
            gpus = sum(node.per_numa.get(r, {}).get(0, 0) for r in device_plugin.advertised_mig(node))
            unit = f"MIG slices ({', '.join(device_plugin.advertised_mig(node))})"
        message = (
            f"TopologyAffinityError on node group {node.group}: Topology Manager {node.topology_policy} (scope"
            f" {node.topology_scope}) cannot align the {what}'s devices and CPUs on"
            f" {'one NUMA node' if node.topology_policy == 'single-numa-node' else 'a preferred NUMA set'};"
            f" {node.instance_type} has {len(node.numa_nodes)} NUMA nodes with {gpus} {unit} each and the narrowest fit"
            f" spans {needed}"
        )
        fix = (
            f"set topology.policy: restricted on node group {node.group} (admits the narrowest NUMA set), or ask for at"
            f" most {gpus} {unit} per pod"
        )
        return Reason(
            stage="kubelet", message=message, fix=fix, spec_path=model.group_path(node.group, "topology", "policy")
        )
    error = device_plugin.allocate_error(node, pod)
    if error:
        return Reason(
            stage="device-plugin",
            message=f"UnexpectedAdmissionError on node group {node.group}: {error}",
            fix=f"ask for {GPU_RESOURCE}: 1 per container on shared node group {node.group}, or use an Exclusive group",
        )
    return None


def _from_zero_with_claims(node: NodeModel, pod: PodSpec, pods: int) -> tuple[str, str] | None:
    """The Cluster Autoscaler (1.35, DRA handling locked on) simulates a pod's claims against a template node's
    ResourceSlices.

    Why: docs/explain-model.md, "Design notes", verdict._from_zero_with_claims."""
    if node.template is None or node.node_pool is not None or not pod.claimed or node.min_size > 0:
        return None
    if nodes_needed(node, pod, pods) == 0:
        return None
    return (
        f"node group {node.group} has no node (minSize 0) and the Cluster Autoscaler's template for it, built from"
        " the Auto Scaling group, has no ResourceSlices: a pod that claims devices fits no template node, so no"
        " scale-up (the autoscaler copies a running node's ResourceSlices once the group has one)",
        f"set nodeGroups[{node.group}].scaling.minSize to 1 or more: the autoscaler then scales the group from its"
        " running node's template up to maxSize",
    )


# Controllers whose children the queue-name policy exempts (its matchCondition not-created-by-a-kueue-managed-parent):
# Kueue admits the parent as one workload.
_MANAGED_PARENTS = (("jobset.x-k8s.io", "JobSet"), ("kubeflow.org", "MPIJob"), ("trainer.kubeflow.org", "TrainJob"))


def _kueue_managed_parent(wl: Workload) -> bool:
    if wl.controller is None:
        return False
    api_version, kind = wl.controller
    return any(api_version.startswith(f"{group}/") and kind == k for group, k in _MANAGED_PARENTS)


def _admission_policy(model: FleetModel, wl: Workload) -> Reason | None:
    if model.queue_policy is None or model.kueue is None:
        return None
    kinds, namespaces, message = model.queue_policy
    if wl.kind not in kinds or wl.namespace not in namespaces or _kueue_managed_parent(wl):
        return None
    if kueue_admission.queue_name(model.kueue, wl):
        return None
    return Reason(
        stage="api",
        message=f"denied by ValidatingAdmissionPolicy gpufleet-require-queue-name: {message}",
        fix=f"set the label {QUEUE_LABEL}: <team> on the {wl.kind}",
    )


def _serving_readiness(model: FleetModel, wl: Workload) -> tuple[Reason | None, str | None]:
    """gpufleet-serving-readiness on the object's creation: (the refusal under a Deny binding, the warning under a
    Warn binding)."""
    if model.serving is None:
        return None, None
    failed = admission_policies.serving_readiness(
        model.policies,
        model.serving,
        kind=wl.kind,
        name=wl.name,
        namespace=wl.namespace,
        controllers=wl.controllers,
        pod_sets=wl.pod_sets,
    )
    if failed is None:
        return None, None
    action, message = failed
    policy = admission_policies.SERVING_READINESS
    if action == "Warn":
        return None, f"the API server warns (ValidatingAdmissionPolicy {policy}, Warn): {message}"
    team = next((t for t in model.plan.fleet.teams if t.namespace == wl.namespace), None)
    return (
        Reason(
            stage="api",
            message=f"denied by ValidatingAdmissionPolicy {policy}: {message}",
            fix=(
                "give each container that requests GPUs a readinessProbe that sends one inference (the recipes in"
                " docs/inference.md)" + (f", or set teams[{team.name}].servingReadinessProbe: Warn" if team else "")
            ),
            spec_path=None,
        ),
        None,
    )


def _api(model: FleetModel, wl: Workload) -> Reason | None:
    """The API server's refusal of the object, before authorization: a kind this fleet does not serve."""
    refused = api_server.not_served(model.served, wl.kind, wl.api_version)
    if refused:
        return Reason(stage="api", message=refused[0], fix=refused[1])
    return None


# The kinds whose pod template the API server validates with the object itself (apps and batch validation calls
# ValidatePodTemplateSpec): a Pod, or one of these, is refused at create; a custom kind is created, and the pods or
# Jobs its controller makes are refused.
_TEMPLATE_VALIDATED = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})


def _not_overcommitable(resource: str) -> bool:
    """An extended resource (a domain-prefixed name outside kubernetes.io: nvidia.com/gpu, vpc.amazonaws.com/efa)
    or huge pages: requests may not exceed, and may not be given without, a limit (pkg/apis/core/helper
    IsOvercommitAllowed, IsExtendedResourceName)."""
    extended = "/" in resource and "kubernetes.io/" not in resource and not resource.startswith("requests.")
    return extended or resource.startswith("hugepages-")


def _invalid_pods(wl: Workload, detail: str, what: str) -> str:
    if wl.kind in _TEMPLATE_VALIDATED:
        return f'{wl.kind} "{wl.name}" is invalid: {detail} ({what}): the API server refuses it'
    return (
        f"the {wl.kind}'s pods are invalid: {detail} ({what}) (the {wl.kind} is created; its controller fails to"
        " create them)"
    )


def _pod_validation(wl: Workload) -> Reason | None:
    """The API server's validation of the pod spec, before any admission plugin: a non-overcommitable resource in a
    container's requests needs it in the limits too, at the same value, and no request may exceed its limit
    (kubernetes pkg/apis/core/validation/validation.go validateResourceRequirements; a limit alone sets the
    request)."""
    prefix = "spec" if wl.kind == "Pod" else "spec.template.spec"
    for ps in wl.pod_sets:
        raw = ps.pod.raw
        for key in ("initContainers", "containers"):
            for i, c in enumerate(raw.get(key) or []):
                resources = (c.get("resources") if isinstance(c, dict) else None) or {}
                requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
                missing = sorted(r for r in requests if _not_overcommitable(str(r)) and r not in limits)
                unequal = sorted(
                    r
                    for r in requests
                    if _not_overcommitable(str(r))
                    and r in limits
                    and quantity(r, requests[r], r) != quantity(r, limits[r], r)
                )
                exceeding = sorted(
                    r
                    for r in requests
                    if not _not_overcommitable(str(r))
                    and r in limits
                    and quantity(r, requests[r], r) > quantity(r, limits[r], r)
                )
                if (unequal or exceeding) and not missing:
                    # validation.go: "For non overcommitable resources, not only requests can't exceed limits, they
                    # also can't be lower, i.e. must be equal." Both errors name the requests field, not its key.
                    r = (unequal or exceeding)[0]
                    rule = "equal to" if unequal else "less than or equal to"
                    detail = (
                        f'{prefix}.{key}[{i}].resources.requests: Invalid value: "{requests[r]}": must be {rule} {r}'
                        f" limit of {limits[r]}"
                    )
                    what = f"container {c.get('name')} requests {requests[r]} {r} with a limit of {limits[r]}"
                    fix = (
                        f"set {r} to the same value in the container's requests and limits (or only in the limits)"
                        if unequal
                        else f"raise the container's {r} limit to its request or above (or lower the request)"
                    )
                    if wl.kind == "TrainJob":
                        what += " after Trainer merges spec.trainer.resourcesPerNode over the runtime's resources"
                        fix = (
                            f"set {r} in spec.trainer.resourcesPerNode's requests and limits alike (Trainer keeps the"
                            " runtime's value of what resourcesPerNode leaves out)"
                        )
                    return Reason(stage="api", message=_invalid_pods(wl, detail, what), fix=fix)
                if not missing:
                    continue
                where = f"{prefix}.{key}[{i}].resources.limits"
                detail = f"{where}: Required value: Limit must be set for non overcommitable resources"
                what = f"{missing[0]} is in container {c.get('name')}'s requests without a limit"
                return Reason(
                    stage="api",
                    message=_invalid_pods(wl, detail, what),
                    fix=f"set {', '.join(missing)} in the container's limits (a limit alone sets the request to it)",
                )
    return None


def _pod_admission(model: FleetModel, wl: Workload) -> Reason | None:
    """What the API server refuses when the workload's pods are created: Pod Security of the namespace first, then
    gpufleet's ValidatingAdmissionPolicies (the PodSecurity plugin runs before ValidatingAdmissionPolicy in the API
    server's validating admission order).

    Why: docs/explain-model.md, "Design notes", verdict._pod_admission."""
    who = f'pods "{wl.name}" are' if wl.kind == "Pod" else f"the {wl.kind}'s pods are"
    created = "" if wl.kind == "Pod" else f" (the {wl.kind} is created; its controller fails to create them)"
    level, version = model.pod_security.get(wl.namespace, ("privileged", "latest"))
    team = next((t.name for t in model.plan.fleet.teams if t.namespace == wl.namespace), None)
    for ps in wl.pod_sets:
        refused = pod_security.forbidden(level, version, ps.pod.raw)
        if refused:
            where = f"teams[{team}].podSecurity" if team else f"the namespace's {pod_security.ENFORCE} label"
            return Reason(
                stage="api",
                message=f"{who} forbidden: {refused}{created}",
                fix=f"remove what Pod Security {level} forbids from pod set {ps.name}; namespace {wl.namespace}"
                f" enforces {level} ({where})",
            )
        denied = admission_policies.pod_refusal(model.policies, wl.namespace, ps.pod.raw)
        if denied:
            return Reason(
                stage="api",
                message=f"{who} denied by ValidatingAdmissionPolicy {denied[0]}: {denied[1]}{created}",
                fix="request nvidia.com/gpu in the container that sets NVIDIA_VISIBLE_DEVICES, or set it to void",
            )
    return None


def _claimed(model: FleetModel, ns: str, pod_sets: tuple[PodSet, ...], mappings: Mapping[str, str] | None) -> tuple[
    tuple[PodSet, ...], list[claims.PodClaims]
]:  # fmt: skip
    out, read = [], []
    for i, ps in enumerate(pod_sets):
        pc = claims.read(model.claim_templates, ns, ps.pod.raw, pod_set=i, pod_set_name=ps.name, mappings=mappings)
        read.append(pc)
        out.append(replace(ps, pod=replace(ps.pod, claimed=claims.requested(pc), aligned=pc.aligned)))
    return tuple(out), read


def _with_claims(model: FleetModel, wl: Workload) -> tuple[Workload, Reason | None, list[str]]:
    """The workload with the devices its pods' ResourceClaims hold (gpufleet.simulate.claims), or what stops it
    before scheduling: Kueue's refusal of a shared claim, a missing template, a shape or a DeviceClass it does not
    count (the Workload stays inadmissible), or, outside Kueue, a template or DeviceClass the cluster lacks."""
    if not any(ps.pod.raw.get("resourceClaims") for ps in (*wl.pod_sets, *(wl.kueue_pod_sets or ()))):
        return wl, None, []
    kueue = model.kueue
    managed = kueue is not None and kueue_admission.managed(kueue, wl)[0]
    mappings = kueue.device_classes if kueue is not None and managed else None
    pods, read = _claimed(model, wl.namespace, wl.pod_sets, mappings)
    kueue_sets, kueue_read = (
        _claimed(model, wl.namespace, wl.kueue_pod_sets, mappings) if wl.kueue_pod_sets else (None, read)
    )
    wl = replace(wl, pod_sets=pods, kueue_pod_sets=kueue_sets)
    notes = list(dict.fromkeys(n for pc in read for n in pc.notes))
    known = sorted(name for ns, name in model.claim_templates if ns == wl.namespace)
    templates = f": {', '.join(known)}" if known else " (it has none)"
    if managed:
        if any(pc.shared for pc in kueue_read):
            return (
                wl,
                Reason(
                    stage="admission",
                    message=f"the Workload is inadmissible: {claims.SHARED_CLAIM} (a pod names a ResourceClaim)",
                    fix=(
                        "give each pod its own claim from a ResourceClaimTemplate (resourceClaimTemplateName): Kueue"
                        f" v0.19.2 counts only those; namespace {wl.namespace}'s templates{templates}"
                    ),
                ),
                notes,
            )
        error = next((pc.kueue_error for pc in kueue_read if pc.kueue_error), None)
        if error:
            if "not found" in error and "Internal error" in error:
                fix = f"reference a ResourceClaimTemplate of namespace {wl.namespace}{templates}"
            elif "is not mapped" in error:
                mapped = ", ".join(sorted(mappings or {})) or "none"
                fix = f"claim devices of a DeviceClass Kueue counts (resources.deviceClassMappings: {mapped})"
            else:
                fix = (
                    "ask for an exact count in the template (exactly.allocationMode ExactCount with a count): the"
                    " only request Kueue v0.19.2 counts"
                )
            return wl, Reason(
                stage="admission", message=f"the Workload is inadmissible: {error}", fix=fix
            ), notes  # fmt: skip
    else:
        missing = next((m for pc in read for m in pc.missing), None)
        if missing:
            return (
                wl,
                Reason(
                    stage="scheduling",
                    message=(
                        f"the pod's ResourceClaim is never created: ResourceClaimTemplate {missing[1]} does not exist"
                        f" in namespace {wl.namespace}, so the pod stays Pending"
                    ),
                    fix=f"reference a ResourceClaimTemplate of namespace {wl.namespace}{templates}",
                ),
                notes,
            )
        notes += [
            f"pod claim {name} names a ResourceClaim, which the model does not know: its devices are not judged"
            for pc in read
            for name in pc.shared
        ]
    for pc in read:
        for device_class in pc.devices:
            later, deployed = model.device_classes.get(device_class, (None, False))
            if deployed:
                continue
            if later is not None:
                return (
                    wl,
                    Reason(
                        stage="scheduling",
                        message=(
                            f"DeviceClass {device_class} is created by the {later} stage's DRA driver, which this"
                            f" environment's rollout (through {model.plan.through}) does not deploy"
                        ),
                        fix=f"deploy through {later} (environments.<env>.rollout.through)",
                    ),
                    notes,
                )
            classes = sorted(model.device_classes)
            return (
                wl,
                Reason(
                    stage="scheduling",
                    message=f"the pod's claims ask for DeviceClass {device_class}, which does not exist in this fleet",
                    fix=f"claim from the DeviceClasses the fleet's DRA drivers create: {', '.join(classes)}"
                    if classes
                    else "run it on a device-plugin group with nvidia.com/gpu limits (no DRA driver in this fleet)",
                ),
                notes,
            )
    return wl, None, notes


def explain(model: FleetModel, wl: Workload, principal: str | None = None) -> Verdict:
    """The verdict on one workload; with `principal` (an IAM ARN, already checked by authorization.identity), the
    API server's authorization of its creation comes first."""
    base = Verdict(
        kind=wl.kind,
        namespace=wl.namespace,
        name=wl.name,
        runs=False,
        pods_total=wl.pod_count,
        assumes=model.assumes,
        scaled_by=wl.scaled_by,
    )
    model = _without_own_residents(model, wl)
    refused = _api(model, wl)
    if refused:
        return replace(base, reasons=(refused,))
    notes: list[str] = []
    shaped = _as_judged(model, wl, base, notes)
    if isinstance(shaped, Verdict):
        return shaped
    wl, group, base = shaped
    created = _through_api_server(model, wl, base, principal, notes)
    if isinstance(created, Verdict):
        return created
    wl, base = created, replace(base, notes=tuple(notes))
    if wl.kind == "Deployment":
        return _one_by_one(model, wl, base)
    if group is not None:
        return _group_by_group(model, group, base)
    if wl.kind == "DaemonSet" and model.kueue is not None:
        daemon = _kueue_daemon_pods(model, model.kueue, wl, base)
        if daemon is not None:
            return daemon
    return _gang(model, wl, base)


def _without_own_residents(model: FleetModel, wl: Workload) -> FleetModel:
    """A workload whose pods are residents already (the placeholders' own Deployment) is judged without them."""
    owner = f"{wl.kind} {wl.namespace}/{wl.name}"
    if not any(r.owner == owner for rs in model.residents.values() for r in rs):
        return model
    residents = {g: tuple(r for r in rs if r.owner != owner) for g, rs in model.residents.items()}
    return replace(model, residents={g: rs for g, rs in residents.items() if rs})


def _as_judged(
    model: FleetModel, wl: Workload, base: Verdict, notes: list[str]
) -> Verdict | tuple[Workload, Workload | None, Verdict]:
    """The workload as the gates judge it (a TrainJob as its runtime makes it; a LeaderWorkerSet of several replica
    groups as all their pods, with the workload of one group), and `base` counting its pods; or the refusal."""
    if wl.kind == "TrainJob":
        resolved, refused, note = _from_runtime(model, wl)
        if refused or resolved is None:
            return replace(base, reasons=(refused,) if refused else ())
        wl = resolved
        base = replace(base, pods_total=wl.pod_count)
        if note:
            notes.append(note)
    group: Workload | None = None  # one replica group of a LeaderWorkerSet of several
    if wl.kind == "LeaderWorkerSet" and wl.groups != 1:
        # The gates below judge every group's pods; Kueue admits each group as its own workload (_group_by_group).
        group = wl
        wl = replace(wl, pod_sets=tuple(replace(ps, count=ps.count * wl.groups) for ps in wl.pod_sets))
        base = replace(base, pods_total=wl.pod_count)
    return wl, group, base


def _through_api_server(
    model: FleetModel, wl: Workload, base: Verdict, principal: str | None, notes: list[str]
) -> Verdict | Workload:
    """What the API server decides on creating the workload and its pods: `principal`'s authorization, the admission
    policies, pod validation and admission, the pods' volumes and claims, the tenancy rules.

    Why: docs/explain-model.md, "Design notes", verdict._through_api_server."""
    if principal is not None:
        decision = authorization.may_create(model.plan.fleet, model.plan.through, principal, wl.kind, wl.namespace)
        if decision.refusal:
            r = decision.refusal
            return replace(base, reasons=(Reason(stage="access", message=r.message, fix=r.fix, spec_path=r.spec_path),))
        if decision.note:
            notes.append(decision.note)
    if model.kueue is not None:
        denied = _admission_policy(model, wl)
        if denied:
            return replace(base, reasons=(denied,))
    denied, warned = _serving_readiness(model, wl)
    if denied:
        return replace(base, reasons=(denied,), notes=tuple(notes))
    if warned:
        notes.append(warned)
    refused_pods = _pod_validation(wl) or _pod_admission(model, wl)
    if refused_pods:
        return replace(base, reasons=(refused_pods,), notes=tuple(notes))
    for ps in wl.pod_sets:
        daemonset = wl.name if wl.kind == "DaemonSet" else None
        notes += [n for n in volumes.cache_notes(model.volumes, wl.namespace, ps.pod.raw, daemonset) if n not in notes]
    wl, refused_claims, claim_notes = _with_claims(model, wl)
    notes += [n for n in claim_notes if n not in notes]
    if refused_claims:
        return replace(base, reasons=(refused_claims,), notes=tuple(notes))
    if model.tenants is not None:
        member = principal is not None and authorization.team_member(model.plan.fleet, principal)
        tenant = tenancy.refusal(model.tenants, wl, team_member=member)
        if tenant:
            return replace(base, reasons=(Reason(stage="api", message=tenant[0], fix=tenant[1]),))
    return wl


def _provisioned(model: FleetModel, placed: list[tuple[str, PodSpec, int]]) -> tuple[Provision, ...]:
    """The nodes Karpenter launches for `placed` (group, pod shape, pods): on a Karpenter group, the nodes those pods
    take beyond the ones that exist on the idle fleet (none: a NodePool keeps no minimum), per group."""
    nodes: dict[tuple[str, str], int] = {}
    for group, pod, pods in placed:
        node = model.nodes.get(group)
        if node is None or node.node_pool is None:
            continue
        # a pool of several instance types: the types Karpenter launches for these pods, each its own row
        for option, count in karpenter_launch(node, pod, pods):
            key = (group, option.instance_type)
            nodes[key] = nodes.get(key, 0) + count
    out = []
    for (group, instance_type), needed in nodes.items():
        node = model.nodes[group]
        assert node.node_pool is not None
        if needed > node.min_size:
            out.append(
                Provision(
                    node_group=group,
                    node_pool=node.node_pool,
                    nodes=needed - node.min_size,
                    instance_type=instance_type,
                    capacity_types=node.capacity_types,
                )
            )
    return tuple(out)


def _gang(model: FleetModel, wl: Workload, base: Verdict) -> Verdict:
    """Every pod set admitted at once (Kueue's all-or-nothing admission of one Workload), then placed."""
    injected: Mapping[str, kueue_admission.Flavor] = {}
    cluster_queue = None
    flavor = None
    notes = list(base.notes)
    if model.kueue is not None:
        admission = kueue_admission.admit(model.kueue, wl, model.nodes)
        cluster_queue = admission.cluster_queue
        flavor = ", ".join(dict.fromkeys(admission.flavors.values())) or None
        if admission.managed and admission.reason:
            reason = Reason(
                stage="admission",
                message=admission.reason,
                fix=admission.fix or _admission_fix(admission.reason),
                spec_path=_tas_path(model, wl, cluster_queue, admission.reason),
            )
            return replace(base, cluster_queue=cluster_queue, flavor=flavor, reasons=(reason,))
        if not admission.managed:
            notes.append(f"not managed by Kueue: {admission.reason}")
        injected = admission.injected
    groups: list[str] = []
    placements: list[tuple[int, str, int]] = []
    effects: list[tuple[str, preemption.Outcome]] = []
    daemon = wl.kind == "DaemonSet"
    gang = model  # on a group with residents, each pod set meets the nodes the earlier ones took
    pods: list[tuple[str, PodSpec, int]] = []
    for i, ps in enumerate(wl.pod_sets):
        pod, tolerations = _effective_pod(ps.pod, injected.get(ps.name))
        found: dict[str, preemption.Outcome] = {}
        placed, stop = _place_with_volumes(gang, wl.namespace, ps, pod, tolerations, daemon=daemon, effects=found)
        if stop:
            return replace(base, cluster_queue=cluster_queue, flavor=flavor, reasons=(stop,), notes=tuple(notes))
        groups += [g for g in placed if g not in groups]
        if not daemon and placed:
            placements.append((i, placed[0], ps.count))
            pods += [(g, pod, ps.count) for g in placed]
            gang = _hold(gang, wl, i, placed[0], pod, ps.count, found.get(placed[0]))
        effects += found.items()
    return replace(
        base,
        runs=True,
        cluster_queue=cluster_queue,
        flavor=flavor,
        node_group=", ".join(groups) or None,
        notes=tuple(notes + _preemption_notes(effects)),
        pods_admitted=base.pods_total,
        placements=tuple(placements),
        preempts=_preempts(effects),
        provisioned=_provisioned(model, pods),
    )


def _hold(
    model: FleetModel,
    wl: Workload,
    index: int,
    group: str,
    pod: PodSpec,
    count: int,
    outcome: preemption.Outcome | None,
) -> FleetModel:
    """The model once `count` pods of pod set `index` of `wl` took their nodes on `group`: they hold them for the
    workload's next pod set (one Workload: its pod sets share the group's nodes) and, for a LeaderWorkerSet, its next
    replica group.

    Why: docs/explain-model.md, "Design notes", verdict._hold."""
    if outcome is not None:
        held = preemption.after(model.residents[group], outcome, wl, model.priorities, pod, count)
    else:
        mine = preemption.running(wl, model.priorities, [(index, group, count)])[group]
        held = (*model.residents.get(group, ()), *mine)
    return replace(model, residents={**model.residents, group: held})


def _preemption_notes(effects: Iterable[tuple[str, preemption.Outcome]]) -> list[str]:
    return [note for group, outcome in effects for note in preemption.describe(group, outcome)]


def _preempts(effects: Iterable[tuple[str, preemption.Outcome]]) -> tuple[Mapping[str, Any], ...]:
    return tuple(
        {"nodeGroup": group, **entry}
        for group, outcome in effects
        for entry in preemption.residents_json(outcome.preempted)
    )


def _kueue_daemon_pods(model: FleetModel, kueue: kueue_admission.Kueue, wl: Workload, base: Verdict) -> Verdict | None:
    """A DaemonSet in a namespace Kueue manages: Kueue's pod webhook walks the pod's owners and stops at the
    DaemonSet, a kind it does not manage (jobframework.FindAncestorJobManagedByKueue: "stop walking up as the owner
    is not known"), so each pod is a plain pod: it gets the namespace's `default` LocalQueue (pod_webhook.go "Local
    queue defaulting"), is gated, admitted to the first flavor that fits and given that flavor's nodeSelector
    (kueue v0.19.2 pkg/controller/jobs/pod). None when Kueue leaves the pods alone.

    Why: docs/explain-model.md, "Design notes", verdict._kueue_daemon_pods."""
    (ps,) = wl.pod_sets
    # the pod's own labels decide its queue (the DaemonSet's are not copied to its pods)
    single = replace(wl, kind="Pod", labels=ps.pod.labels, pod_sets=(replace(ps, count=1),))
    is_managed, _ = kueue_admission.managed(kueue, single)
    if not is_managed:
        return None
    pod, tolerations = _effective_pod(ps.pod, None)
    targets, stop = _place_with_volumes(model, wl.namespace, ps, pod, tolerations, daemon=True)
    if stop:
        return replace(base, reasons=(stop,))
    admission = kueue_admission.admit(kueue, single, model.nodes)
    if admission.reason:
        reason = Reason(
            stage="admission", message=admission.reason, fix=admission.fix or _admission_fix(admission.reason)
        )
        return replace(base, cluster_queue=admission.cluster_queue, pods_total=len(targets), reasons=(reason,))
    flavor = admission.injected.get(ps.name)
    labels = dict(flavor.node_labels) if flavor else {}

    def node_labels(group: str) -> Mapping[str, str]:
        return SYSTEM_LABELS if group == SYSTEM_GROUP else model.nodes[group].labels

    running = [g for g in targets if all(node_labels(g).get(k) == v for k, v in labels.items())]
    pending = [g for g in targets if g not in running]
    verdict = replace(
        base,
        cluster_queue=admission.cluster_queue,
        flavor=flavor.name if flavor else None,
        node_group=", ".join(running) or None,
        pods_total=len(targets),
        pods_admitted=len(running),
        runs=not pending,
        notes=(*base.notes, "a DaemonSet's pods are counted one per node group it reaches (one pod per node)"),
    )
    if not pending:
        return verdict
    selector = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    reason = Reason(
        stage="scheduling",
        message=(
            f"Kueue manages the DaemonSet's pods in namespace {wl.namespace} as plain pods (the owner walk stops at"
            f" DaemonSet, a kind Kueue does not manage): each is admitted through ClusterQueue"
            f" {admission.cluster_queue} to flavor {flavor.name if flavor else None} and gets its nodeSelector"
            f" {selector}, which conflicts with the DaemonSet's node affinity for its node on node group"
            f" {', '.join(pending)}: those pods stay Pending"
        ),
        fix=(
            "run node agents outside the team namespaces (Kueue's managedJobsNamespaceSelector covers every pod"
            " there), or select only the node group of that flavor"
        ),
    )
    return replace(verdict, reasons=(reason,))


def _one_by_one(model: FleetModel, wl: Workload, base: Verdict) -> Verdict:
    """A Deployment: "every Pod from a Deployment is represented as a single independent Plain Pod" (kueue v0.19.2
    site/content/en/docs/tasks/run/deployment.md), so each replica is admitted on its own, against the quota the
    earlier ones hold, and placed beside them; outside Kueue the ReplicaSet's pods are scheduled one by one as well.

    Why: docs/explain-model.md, "Design notes", verdict._one_by_one."""
    (ps,) = wl.pod_sets
    whole = _gang(model, wl, base)
    if whole.runs or ps.count <= 1:
        return whole
    one = replace(ps, count=1)
    single = replace(wl, pod_sets=(one,))
    used: dict[tuple[str, str], int] = {}
    placed: dict[str, int] = {}
    shapes: list[PodSpec] = []  # the replicas' effective pod (all alike)
    queues: list[str] = []
    flavors: list[str] = []
    notes = list(base.notes)
    stop: Reason | None = None
    effects: dict[str, preemption.Outcome] = {}
    for _ in range(ps.count):
        injected = None
        if model.kueue is not None:
            admission = kueue_admission.admit(model.kueue, single, model.nodes, used)
            if admission.cluster_queue and admission.cluster_queue not in queues:
                queues.append(admission.cluster_queue)
            if admission.managed and admission.reason:
                stop = Reason(
                    stage="admission",
                    message=admission.reason,
                    fix=admission.fix or _admission_fix(admission.reason),
                    spec_path=_tas_path(model, single, admission.cluster_queue, admission.reason),
                )
                break
            if not admission.managed and not any(n.startswith("not managed by Kueue") for n in notes):
                notes.append(f"not managed by Kueue: {admission.reason}")
            injected = admission.injected.get(one.name)
            flavors += [f for f in admission.flavors.values() if f not in flavors]
        pod, tolerations = _effective_pod(one.pod, injected)
        shapes[:] = [pod]
        groups, stop = _place_with_volumes(
            model, wl.namespace, one, pod, tolerations, daemon=False, already=placed, effects=effects
        )
        if stop:
            break
        for g in groups:
            placed[g] = placed.get(g, 0) + 1
    admitted = sum(placed.values())
    if admitted == 0:
        return whole
    return replace(
        base,
        runs=False,
        cluster_queue=", ".join(queues) or None,
        flavor=", ".join(flavors) or None,
        node_group=", ".join(placed),
        reasons=(stop,) if stop else (),
        notes=tuple(notes + _preemption_notes(effects.items())),
        pods_admitted=admitted,
        placements=tuple((0, g, n) for g, n in placed.items()),
        preempts=_preempts(effects.items()),
        provisioned=_provisioned(model, [(g, shape, n) for g, n in placed.items() for shape in shapes[:1]]),
    )


def _group_by_group(model: FleetModel, group: Workload, base: Verdict) -> Verdict:
    """A LeaderWorkerSet of several replica groups: one Kueue Workload per group, each admitted and placed on its
    own, so N of M groups may run; `group` is one group's workload, `group.groups` their number.

    Why: docs/explain-model.md, "Design notes", verdict._group_by_group."""
    whole = replace(group, pod_sets=tuple(replace(ps, count=ps.count * group.groups) for ps in group.pod_sets))
    verdict = _gang(model, whole, base)
    if verdict.runs:
        return replace(verdict, groups=(group.groups, group.groups))
    used: dict[tuple[str, str], int] = {}
    current = model  # the earlier groups' pods hold their nodes (as --running work does), not quota
    queues: list[str] = []
    flavors: list[str] = []
    notes = list(base.notes)
    placed: dict[tuple[int, str], int] = {}  # (pod set index, node group) -> pods
    shapes: dict[int, PodSpec] = {}
    effects: list[tuple[str, preemption.Outcome]] = []
    stop: Reason | None = None
    admitted = 0
    for _ in range(group.groups):
        injected: Mapping[str, kueue_admission.Flavor] = {}
        if model.kueue is not None:
            admission = kueue_admission.admit(model.kueue, group, model.nodes, used)
            if admission.cluster_queue and admission.cluster_queue not in queues:
                queues.append(admission.cluster_queue)
            if admission.managed and admission.reason:
                stop = Reason(
                    stage="admission",
                    message=admission.reason,
                    fix=admission.fix or _admission_fix(admission.reason),
                    spec_path=_tas_path(model, group, admission.cluster_queue, admission.reason),
                )
                break
            if not admission.managed and not any(n.startswith("not managed by Kueue") for n in notes):
                notes.append(f"not managed by Kueue: {admission.reason}")
            injected = admission.injected
            flavors += [f for f in dict.fromkeys(admission.flavors.values()) if f not in flavors]
        these: list[tuple[int, str, int]] = []
        found: list[tuple[str, preemption.Outcome]] = []
        gang = current
        for i, ps in enumerate(group.pod_sets):
            pod, tolerations = _effective_pod(ps.pod, injected.get(ps.name))
            outcomes: dict[str, preemption.Outcome] = {}
            groups, stop = _place_with_volumes(
                gang, group.namespace, ps, pod, tolerations, daemon=False, effects=outcomes
            )
            if stop:
                break
            shapes[i] = pod
            found += outcomes.items()
            for g in groups[:1]:
                these.append((i, g, ps.count))
                gang = _hold(gang, group, i, g, pod, ps.count, outcomes.get(g))
        if stop:
            break
        admitted += 1
        effects += found
        for i, g, n in these:
            placed[(i, g)] = placed.get((i, g), 0) + n
        current = gang
    if admitted == 0:
        return replace(verdict, groups=(0, group.groups))
    return replace(
        base,
        runs=False,
        cluster_queue=", ".join(queues) or None,
        flavor=", ".join(flavors) or None,
        node_group=", ".join(dict.fromkeys(g for _, g in placed)),
        reasons=(stop,) if stop else (),
        # one note per distinct preemption (each group's pods may bounce the same placeholders); `preempts` counts
        notes=tuple(dict.fromkeys(notes + _preemption_notes(effects))),
        pods_admitted=admitted * group.pod_count,
        groups=(admitted, group.groups),
        placements=tuple((i, g, n) for (i, g), n in placed.items()),
        preempts=_preempts(effects),
        provisioned=_provisioned(model, [(g, shapes[i], n) for (i, g), n in placed.items()]),
    )


def _tas_path(model: FleetModel, wl: Workload, cluster_queue: str | None, reason: str) -> Path | None:
    """topology.placement of the group whose TAS flavor refused the workload (the pod set's group first)."""
    if (
        model.kueue is None
        or cluster_queue is None
        or not ("TopologyAwareScheduling" in reason or "allows to fit only" in reason)
    ):
        return None
    tas = [
        model.kueue.flavors[f]
        for f in model.kueue.cluster_queues[cluster_queue].flavors()
        if f in model.kueue.flavors and model.kueue.flavors[f].topology_name
    ]
    wanted = {ps.pod.node_selector.get(LABEL_NODE_GROUP) for ps in wl.pod_sets}
    groups = [g for g in (f.node_labels.get(LABEL_NODE_GROUP) for f in tas) if g]
    group = next((g for g in groups if g in wanted), groups[0] if groups else None)
    return model.group_path(group, "topology", "placement") if group else None


def _admission_fix(reason: str) -> str:
    if "supports only TopologyAwareScheduling" in reason:
        return (
            "add the pod template annotation kueue.x-k8s.io/podset-preferred-topology: kubernetes.io/hostname, or set"
            " topology.placement: None on the node group"
        )
    if "allows to fit only" in reason:
        return "set topology.placement: None on the node group (TAS counts only Ready nodes), or raise its minSize"
    if "unavailable in ClusterQueue" in reason:
        return "remove the request, or give the team quota on a node group that offers it"
    # Before node affinity: a pod set whose own flavor is short of quota reads "flavor A doesn't match node
    # affinity, insufficient unused quota for R in flavor B" when the other flavors are not its node group.
    if "insufficient quota" in reason or "insufficient unused quota" in reason:
        return (
            "raise the team's quota on that node group (teams[].quotas[].gpus), lower the replicas or what each pod"
            " asks for, or borrow from the cohort (teams[].quotas[].borrowingLimit)"
        )
    if "doesn't match node affinity" in reason or "untolerated taint" in reason:
        return "select a node group the team has quota on (nodeSelector gpufleet.io/node-group)"
    return "see the Kueue Workload's status for details"
