"""Kueue admission (v0.19.2): which LocalQueue and ClusterQueue a workload reaches, and which flavor each pod set gets.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/kueue_admission.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.nodes import NodeModel, group_of
from gpufleet.simulate.scheduling import matches_term, untolerated
from gpufleet.simulate.workload import FRAMEWORK, QUEUE_LABEL, PodSet, Workload, quantity
from gpufleet.spec.load import safe_load

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
DEFAULT_LOCAL_QUEUE = "default"
POD_BASED = ("pod", "deployment", "statefulset")


@dataclass(frozen=True, slots=True, kw_only=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Mapping[str, str], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    topology_name: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceQuota:
    """One resource of one flavor in a ClusterQueue (Kueue v1beta2 ResourceQuota)."""

    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterQueue:
    name: str
    cohort: str | None
    namespace_selector: Mapping[str, Any] | None
    # resource groups: (covered resources, ((flavor, {resource: ResourceQuota}), ...))
    resource_groups: tuple[tuple[tuple[str, ...], tuple[tuple[str, Mapping[str, ResourceQuota]], ...]], ...]
    admission_checks: tuple[str, ...]

    def flavors(self) -> list[str]:
        return [f for _, flavors in self.resource_groups for f, _ in flavors]


@dataclass(frozen=True, slots=True, kw_only=True)
class Kueue:
    manage_without_queue_name: bool
    managed_namespaces: Mapping[str, Any] | None
    frameworks: frozenset[str]
    exclude_prefixes: tuple[str, ...]
    flavors: Mapping[str, Flavor]
    cluster_queues: Mapping[str, ClusterQueue]
    local_queues: Mapping[tuple[str, str], str]  # (namespace, name) -> ClusterQueue
    provisioning_checks: frozenset[str]
    # resources.deviceClassMappings: DeviceClass -> the resource its claims' devices count as (pkg/dra/mapper.go)
    device_classes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionOutcome:
    """The outcome: managed or not, the queue reached, each pod set's flavor, or why it stops."""

    managed: bool
    cluster_queue: str | None = None
    flavors: Mapping[str, str] = field(default_factory=dict)  # pod set -> flavor
    reason: str | None = None
    fix: str | None = None
    # Pod sets Kueue admits get the flavor's nodeLabels as nodeSelector and its tolerations.
    injected: Mapping[str, Flavor] = field(default_factory=dict)


def _objects(plan: RolloutPlan, kind: str) -> list[Mapping[str, Any]]:
    return [
        r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if "object" in r.args
        and r.args["object"].get("kind") == kind
        and "kueue" in r.args["object"].get("apiVersion", "")
    ]


def _int(resource: str, value: Any) -> int:
    return quantity(resource, value, "ClusterQueue quota")


def from_plan(plan: RolloutPlan) -> Kueue | None:
    """The Kueue the plan deploys in this environment, or None."""
    release = next((r for s in plan.included() for r in s.content.resources if r.id == "helm-kueue"), None)
    if release is None:
        return None
    config = safe_load(release.args["values"]["managerConfig"]["controllerManagerConfigYaml"])
    flavors = {}
    for obj in _objects(plan, "ResourceFlavor"):
        spec = obj.get("spec") or {}
        flavors[obj["metadata"]["name"]] = Flavor(
            name=obj["metadata"]["name"],
            node_labels=dict(spec.get("nodeLabels") or {}),
            node_taints=tuple(spec.get("nodeTaints") or ()),
            tolerations=tuple(spec.get("tolerations") or ()),
            topology_name=spec.get("topologyName"),
        )
    queues = {}
    for obj in _objects(plan, "ClusterQueue"):
        spec = obj["spec"]
        groups = []
        for rg in spec.get("resourceGroups") or []:
            fqs = []
            for fq in rg["flavors"]:
                fqs.append((fq["name"], {
                    r["name"]: ResourceQuota(
                        nominal=_int(r["name"], r["nominalQuota"]),
                        borrowing_limit=(
                            None if r.get("borrowingLimit") is None else _int(r["name"], r["borrowingLimit"])
                        ),
                        lending_limit=None if r.get("lendingLimit") is None else _int(r["name"], r["lendingLimit"]),
                    )
                    for r in fq["resources"]
                }))  # fmt: skip
            groups.append((tuple(rg["coveredResources"]), tuple(fqs)))
        checks = tuple(spec.get("admissionChecks") or ()) + tuple(
            c["name"] for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
        )
        queues[obj["metadata"]["name"]] = ClusterQueue(
            name=obj["metadata"]["name"],
            cohort=spec.get("cohortName"),
            namespace_selector=spec.get("namespaceSelector"),
            resource_groups=tuple(groups),
            admission_checks=checks,
        )
    local = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]["clusterQueue"]
        for o in _objects(plan, "LocalQueue")
    }
    provisioning = frozenset(
        o["metadata"]["name"]
        for o in _objects(plan, "AdmissionCheck")
        if o["spec"].get("controllerName") == PROVISIONING_CONTROLLER
    )
    return Kueue(
        manage_without_queue_name=bool(config.get("manageJobsWithoutQueueName", False)),
        managed_namespaces=config.get("managedJobsNamespaceSelector"),
        frameworks=frozenset((config.get("integrations") or {}).get("frameworks") or ()),
        exclude_prefixes=tuple((config.get("resources") or {}).get("excludeResourcePrefixes") or ()),
        flavors=flavors,
        cluster_queues=queues,
        local_queues=local,
        provisioning_checks=provisioning,
        device_classes={
            str(dc): str(m["name"])
            for m in (config.get("resources") or {}).get("deviceClassMappings") or ()
            for dc in m.get("deviceClassNames") or ()
        },
    )


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector: a nil selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def namespace_labels(namespace: str) -> dict[str, str]:
    # The API server sets kubernetes.io/metadata.name on every namespace; gpufleet selects on nothing else.
    return {"kubernetes.io/metadata.name": namespace}


def fmt(resource: str, amount: int) -> str:
    """resource.Quantity's string form of the model's units (what Kueue prints)."""
    if amount == 0:
        return "0"
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource == "memory" or resource.startswith("hugepages-"):
        return f"{amount // 1024}Gi" if amount and amount % 1024 == 0 else f"{amount}Mi"
    return str(amount)


def max_capacity(kueue: Kueue, cq: ClusterQueue, flavor: str, resource: str) -> int:
    """Nominal quota plus what the cohort may lend, capped by the borrowing limit (idle cohort)."""
    own = _quota(cq, flavor, resource)
    if own is None:
        return 0
    if cq.cohort is None:
        return own.nominal
    lendable = 0
    for other in kueue.cluster_queues.values():
        if other.name == cq.name or other.cohort != cq.cohort:
            continue
        q = _quota(other, flavor, resource)
        if q is not None:
            lendable += q.nominal if q.lending_limit is None else min(q.lending_limit, q.nominal)
    borrow = lendable if own.borrowing_limit is None else min(own.borrowing_limit, lendable)
    return own.nominal + borrow


def _quota(cq: ClusterQueue, flavor: str, resource: str) -> ResourceQuota | None:
    for _, flavors in cq.resource_groups:
        for name, quotas in flavors:
            if name == flavor and resource in quotas:
                return quotas[resource]
    return None


def _taint_text(t: Mapping[str, str]) -> str:
    return f"{{{t['key']} {t.get('value', '')} {t['effect']} <nil>}}"


def _affinity_matches(flavor: Flavor, ps: PodSet) -> bool:
    """flavorassigner.go flavorSelector: only the keys the flavor's nodeLabels define are considered."""
    keys = set(flavor.node_labels)
    if any(flavor.node_labels.get(k) != v for k, v in ps.pod.node_selector.items() if k in keys):
        return False
    if not ps.pod.required_terms:
        return True
    for term in ps.pod.required_terms:
        exprs = [e for e in term.get("matchExpressions") or [] if e.get("key") in keys]
        if not exprs or matches_term({"matchExpressions": exprs}, flavor.node_labels):
            return True
    return False


def _tas_only(kueue: Kueue, cq: ClusterQueue) -> bool:
    return all(kueue.flavors.get(f) is not None and kueue.flavors[f].topology_name for f in cq.flavors())


def _ready_capacity(node: NodeModel, ps: PodSet) -> int:
    """Pods of the pod set that fit on the nodes that exist before any scale-up (minSize, idle)."""
    request = ps.pod.request()
    per_node = min((node.allocatable.get(r, 0) // v for r, v in request.items() if v > 0), default=ps.count)
    return per_node * node.min_size


def _check_flavor(kueue: Kueue, cq: ClusterQueue, flavor: Flavor, ps: PodSet) -> str | None:
    tas_requested = ps.pod.topology_request or _tas_only(kueue, cq)
    if tas_requested and not flavor.topology_name:
        return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
    if not tas_requested and flavor.topology_name:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    bad = untolerated(flavor.node_taints, list(ps.pod.tolerations) + list(flavor.tolerations))
    if bad:
        return f"untolerated taint {_taint_text(bad[0])} in flavor {flavor.name}"
    if not _affinity_matches(flavor, ps):
        return f"flavor {flavor.name} doesn't match node affinity"
    return None


def _requests(kueue: Kueue, cq: ClusterQueue, ps: PodSet) -> dict[str, int]:
    """The pod set's total requests as Kueue counts them: explicit zeros kept where the ClusterQueue covers the
    resource (they get a flavor), dropped where it does not (flavorassigner.go assignFlavors "Skip zero-quantity
    requests for resources not defined in the ClusterQueue (#8079)")."""
    covered = {r for covered_, _ in cq.resource_groups for r in covered_}
    return {
        r: v * ps.count
        for r, v in ps.pod.request().items()
        if (v > 0 or r in covered) and not r.startswith(kueue.exclude_prefixes)
    }


def assign(
    kueue: Kueue,
    cq: ClusterQueue,
    pod_sets: Sequence[PodSet],
    nodes: Mapping[str, NodeModel],
    held: dict[tuple[str, str], int] | None = None,
) -> tuple[dict[str, str], str | None]:
    """Flavors per pod set in order, or the reasons the first pod set that fits nowhere gives. `held`: the quota
    (flavor, resource) -> amount admitted workloads hold (a Deployment's earlier pods); what this one takes is added
    to it when it is admitted.

    Why: docs/explain-model.md, "Design notes", kueue_admission.assign."""
    held = {} if held is None else held
    used: dict[tuple[str, str], int] = {}
    chosen: dict[str, str] = {}
    for ps in pod_sets:
        requests = _requests(kueue, cq, ps)
        covered = {r for covered_, _ in cq.resource_groups for r in covered_}
        for r in sorted(requests):
            if r not in covered:
                return chosen, f"couldn't assign flavors to pod set {ps.name}: resource {r} unavailable in ClusterQueue"
        if not requests:
            continue
        reasons: list[str] = []
        flavor_for_ps: str | None = None
        for covered_, flavors in cq.resource_groups:
            if not set(requests) & set(covered_):
                continue
            for name, _ in flavors:
                flavor = kueue.flavors.get(name)
                if flavor is None:
                    reasons.append(f"flavor {name} not found")
                    continue
                problem = _check_flavor(kueue, cq, flavor, ps)
                if problem is None:
                    for r in sorted(set(requests) & set(covered_)):
                        cap = max_capacity(kueue, cq, name, r)
                        before = used.get((name, r), 0)
                        if before + requests[r] > cap:
                            problem = (
                                f"insufficient quota for {r} in flavor {name}, previously considered podsets requests"
                                f" ({fmt(r, before)}) + current podset request ({fmt(r, requests[r])}) > maximum"
                                f" capacity ({fmt(r, cap)})"
                            )
                            break
                        # what other admitted workloads hold: flavorassigner.go fitsResourceQuota "insufficient
                        # unused quota for %s in flavor %s, %s more needed" (no preemption among equals)
                        short = before + requests[r] + held.get((name, r), 0) - cap
                        if short > 0:
                            problem = f"insufficient unused quota for {r} in flavor {name}, {fmt(r, short)} more needed"
                            break
                if (
                    problem is None
                    and flavor.topology_name
                    and not (set(cq.admission_checks) & kueue.provisioning_checks)
                ):
                    group = group_of(flavor.node_labels)
                    node = nodes.get(group or "")
                    fit = _ready_capacity(node, ps) if node else 0
                    if fit < ps.count:
                        problem = f'topology "{flavor.topology_name}" allows to fit only {fit} out of {ps.count} pod(s)'
                if problem is not None:
                    reasons.append(problem)
                    continue
                flavor_for_ps = name
                break
        if flavor_for_ps is None:
            return chosen, f"couldn't assign flavors to pod set {ps.name}: " + ", ".join(
                reasons or ["no flavor covers its resources"]
            )
        chosen[ps.name] = flavor_for_ps
        for r, v in requests.items():
            used[(flavor_for_ps, r)] = used.get((flavor_for_ps, r), 0) + v
    for key, v in used.items():
        held[key] = held.get(key, 0) + v
    return chosen, None


def queue_name(kueue: Kueue, wl: Workload) -> str | None:
    """The label, else the namespace's LocalQueue `default` where the namespace is managed."""
    if wl.queue_name:
        return wl.queue_name
    if (wl.namespace, DEFAULT_LOCAL_QUEUE) in kueue.local_queues and selector_matches(
        kueue.managed_namespaces, namespace_labels(wl.namespace)
    ):
        return DEFAULT_LOCAL_QUEUE
    return None


def managed(kueue: Kueue, wl: Workload) -> tuple[bool, str]:
    """Whether Kueue manages the workload, and why not."""
    framework = FRAMEWORK.get(wl.kind)
    if framework is None:
        return False, f"Kueue does not manage {wl.kind}s"
    enabled = framework in kueue.frameworks or (
        framework == "pod" and bool({"deployment", "statefulset"} & kueue.frameworks)
    )
    if not enabled:
        return False, f"the {framework} integration is not enabled in Kueue's configuration"
    in_selector = (
        selector_matches(kueue.managed_namespaces, namespace_labels(wl.namespace))
        if kueue.managed_namespaces is not None
        else True
    )
    if framework in POD_BASED and not in_selector:
        return (
            False,
            (
                f"namespace {wl.namespace} is outside managedJobsNamespaceSelector (pod-based integrations are never"
                " managed there)"
            ),
        )
    if queue_name(kueue, wl):
        return True, ""
    if kueue.manage_without_queue_name and in_selector:
        return True, ""
    return (
        False,
        (
            f"no {QUEUE_LABEL} label and manageJobsWithoutQueueName is false: Kueue ignores it and its pods start at"
            " once, outside every quota"
        ),
    )


def admit(
    kueue: Kueue, wl: Workload, nodes: Mapping[str, NodeModel], held: dict[tuple[str, str], int] | None = None
) -> AdmissionOutcome:
    is_managed, why = managed(kueue, wl)
    if not is_managed:
        return AdmissionOutcome(managed=False, reason=why)
    name = queue_name(kueue, wl)
    if name is None:
        return AdmissionOutcome(
            managed=True,
            reason='the workload names no LocalQueue and its namespace has no LocalQueue "default"',
            fix=f"set the label {QUEUE_LABEL}: <team> (the team's LocalQueue)",
        )
    cq_name = kueue.local_queues.get((wl.namespace, name))
    if cq_name is None:
        known = sorted(n for ns, n in kueue.local_queues if ns == wl.namespace)
        return AdmissionOutcome(
            managed=True,
            reason=f"LocalQueue {name} doesn't exist",
            fix=(
                f"set {QUEUE_LABEL} to a LocalQueue of namespace {wl.namespace}: {', '.join(known)}"
                if known
                else f"run it in a team namespace ({', '.join(sorted({ns for ns, _ in kueue.local_queues}))})"
            ),
        )
    cq = kueue.cluster_queues[cq_name]
    if not selector_matches(cq.namespace_selector, namespace_labels(wl.namespace)):
        return AdmissionOutcome(
            managed=True,
            cluster_queue=cq_name,
            reason="workload namespace doesn't match ClusterQueue selector",
            fix=f"run it in the namespace ClusterQueue {cq_name} admits",
        )
    # the Workload's pod sets: a TrainJob's as Kueue's Trainer library computes them (workload.trainjob_pod_sets)
    chosen, problem = assign(kueue, cq, wl.kueue_pod_sets or wl.pod_sets, nodes, held)
    if problem is not None:
        return AdmissionOutcome(managed=True, cluster_queue=cq_name, flavors=chosen, reason=problem)
    return AdmissionOutcome(
        managed=True, cluster_queue=cq_name, flavors=chosen, injected={ps: kueue.flavors[f] for ps, f in chosen.items()}
    )
