"""Stage 3, admission: Kueue with all-or-nothing admission, one flavor per node group, one ClusterQueue per
team, cohorts, LocalQueues in Pod-Security-baseline team namespaces, priority classes, topology-aware
placement, and the admission policies (queue name required, no NVIDIA_VISIBLE_DEVICES without a GPU); then the
workload layer teams submit through it (gpufleet.plan.manifests.workloads): JobSet, Kubeflow Trainer with its
ClusterTrainingRuntimes, LeaderWorkerSet.

Why, with sources: docs/admission-and-sharing.md, "Design notes", gpufleet/plan/stages/admission.py.
"""

from __future__ import annotations

from dataclasses import replace

from gpufleet.plan.builders import cluster_roles, device_managers
from gpufleet.plan.builders.common import helm, k8s
from gpufleet.plan.manifests import (
    admission_policy,
    kueue,
    multikueue,
    readiness_policy,
    sharing,
    tenancy,
    tenant_policies,
    workloads,
)
from gpufleet.plan.manifests.telemetry import monitoring_namespace
from gpufleet.plan.parts import BuildContext, Resource, StageContent
from gpufleet.spec import cold_start, defaults
from gpufleet.spec.fleet import Fleet, SharingStrategy, Team, WorkloadClass
from gpufleet.spec.names import (
    LABEL_QUEUE_NAME,
    NS_GPU_OPERATOR,
    NS_HEALTH,
    NS_KUEUE,
    NS_MONITORING,
    NS_NETWORK,
    NS_SYSTEM,
    group_taints,
)

KUEUE_RELEASE = "kueue"
# Immutable per the pinned Kueue CRDs' CEL rules (kueue.x-k8s.io_resourceflavors.yaml: "nodeLabels / tolerations /
# topologyName are immutable when topologyName is set"; kueue.x-k8s.io_topologies.yaml: spec.levels): the API server
# rejects an update, so a change replaces the object.
TAS_FLAVOR_IMMUTABLE = ("spec.nodeLabels", "spec.tolerations", "spec.topologyName")
TOPOLOGY_IMMUTABLE = ("spec.levels",)
HELM_ID = f"helm-{KUEUE_RELEASE}"


def system_namespaces(fleet: Fleet) -> list[str]:
    """Namespaces whose daemons legitimately see every GPU (exempt from the NVIDIA_VISIBLE_DEVICES policy)."""
    monitoring = (
        fleet.telemetry.existing_namespace
        if fleet.telemetry.prometheus == "Existing" and fleet.telemetry.existing_namespace
        else NS_MONITORING
    )
    return sorted({"kube-system", NS_GPU_OPERATOR, NS_KUEUE, monitoring, NS_NETWORK, NS_HEALTH, NS_SYSTEM})


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    if not fleet.teams:
        return StageContent(
            notes=("No teams: nothing to admit, so Kueue is not installed, nor the job APIs it admits (workloads).",)
        )

    # The cluster's role among several (gpufleet.plan.builders.cluster_roles), and the fleet its queues describe: a
    # MultiKueue manager's are its workers' flavors and quotas, rendered as the workers render them.
    role = cluster_roles.of(fleet)
    view = fleet.queued
    release = helm(
        "kueue",
        fleet.versions.kueue,
        fleet=fleet,
        release=KUEUE_RELEASE,
        namespace=NS_KUEUE,
        values=kueue.helm_values(
            view,
            prometheus=ctx.includes("telemetry") and role.builds("telemetry"),
            configuration=role.kueue_configuration(fleet),
            feature_gates=role.feature_gates(fleet),
        ),
    )
    after_kueue = (release.id,)
    resources: list[Resource] = [release]
    objects = role.kueue_objects(fleet)
    role_objects = [k8s(obj, depends_on=after_kueue) for obj in objects if obj["kind"] != "Job"]
    # A Job of the role runs once what the role brings is in place (its ServiceAccount, RBAC and script, the
    # objects it reads): Pulumi creates it last and awaits it.
    role_objects += [
        k8s(obj, depends_on=after_kueue + tuple(r.id for r in role_objects)) for obj in objects if obj["kind"] == "Job"
    ]
    resources += role_objects

    namespaces = {t.name: k8s(kueue.team_namespace(t, fleet.cluster.kubernetes_version)) for t in fleet.teams}
    resources += namespaces.values()
    resources += _team_access(fleet, namespaces)
    for team in fleet.teams:
        # What the team's pods ask for the devices of its groups with (ResourceClaimTemplates on DRA groups).
        for manager, groups in device_managers.managed(fleet, team=team):
            resources += [
                k8s(obj, depends_on=(namespaces[team.name].id,)) for obj in manager.team_objects(fleet, team, groups)
            ]
    for priority in fleet.admission.priorities:
        resources.append(k8s(kueue.priority_class(priority)))
        resources.append(k8s(kueue.workload_priority_class(priority), depends_on=after_kueue))

    topology_ids: tuple[str, ...] = ()
    if any(defaults.placement(view, g) != "None" for g in view.node_groups):
        topology = replace(
            k8s(kueue.topology(), depends_on=after_kueue),
            replace_on_changes=TOPOLOGY_IMMUTABLE,
            delete_before_replace=True,
        )
        resources.append(topology)
        topology_ids = (topology.id,)
    flavor_ids = {}
    for group in view.node_groups:
        flavor = k8s(
            kueue.resource_flavor(view, group, with_sharing=ctx.includes("sharing")),
            depends_on=after_kueue + (topology_ids if defaults.placement(view, group) != "None" else ()),
        )
        if "topologyName" in flavor.args["object"]["spec"]:
            flavor = replace(flavor, replace_on_changes=TAS_FLAVOR_IMMUTABLE, delete_before_replace=True)
        flavor_ids[group.name] = flavor.id
        resources.append(flavor)
    cohort_ids = {}
    for name in dict.fromkeys(t.cohort for t in fleet.teams if t.cohort):
        cohort = k8s(kueue.cohort(name), depends_on=after_kueue)
        cohort_ids[name] = cohort.id
        resources.append(cohort)
    checks = role.admission_checks(fleet)
    for team in view.teams:
        needs = (
            after_kueue
            + tuple(flavor_ids[q.node_group] for q in team.quotas)
            + ((cohort_ids[team.cohort],) if team.cohort else ())
            # The AdmissionCheck and what it names (MultiKueueConfig, MultiKueueClusters), not the role's RBAC.
            + tuple(r.id for r in role_objects if r.args["object"]["apiVersion"] == multikueue.API)
        )
        queue = k8s(
            kueue.cluster_queue(view, team, with_sharing=ctx.includes("sharing"), admission_checks=checks),
            depends_on=needs,
        )
        resources.append(queue)
        resources.append(k8s(kueue.local_queue(team), depends_on=(queue.id, namespaces[team.name].id)))
        default = kueue.default_local_queue(team)
        if default is not None:
            resources.append(k8s(default, depends_on=(queue.id, namespaces[team.name].id)))

    team_ns = [t.namespace for t in fleet.teams]
    for policy, selector in (
        (
            admission_policy.queue_name_policy(kueue.installed_frameworks(fleet)),
            admission_policy.namespaces_in(team_ns),
        ),
        (admission_policy.visible_devices_policy(), admission_policy.namespaces_not_in(system_namespaces(fleet))),
    ):
        created = k8s(policy)
        resources += [
            created,
            k8s(admission_policy.binding(policy["metadata"]["name"], selector), depends_on=(created.id,)),
        ]

    resources += _tenant_policies(fleet)

    # The job controllers come after Kueue: its webhooks are serving when the first JobSet or TrainJob can be created.
    layer, layer_notes = _workload_layer(fleet, after=after_kueue)
    return StageContent(
        resources=tuple(resources + layer),
        warnings=tuple(_warnings(view)),
        notes=(*_notes(view, with_sharing=ctx.includes("sharing")), *role.admission_notes(fleet), *layer_notes),
    )


def _workload_layer(fleet: Fleet, after: tuple[str, ...]) -> tuple[list[Resource], list[str]]:
    """JobSet, then the Trainer (which reconciles JobSets) and its runtimes (checked by the Trainer's webhook), and
    LeaderWorkerSet, each as the spec resolves it (gpufleet.spec.defaults), with a plan.md line each."""
    out: list[Resource] = []
    lines: list[str] = []
    jobset_ids: tuple[str, ...] = ()
    if defaults.job_set(fleet):
        version = fleet.versions.job_set
        release = helm(
            "jobSet",
            version,
            fleet=fleet,
            release=workloads.JOBSET_RELEASE,
            namespace=workloads.NS_JOBSET,
            values=workloads.jobset_values(version),
            depends_on=after,
        )
        out.append(release)
        jobset_ids = (release.id,)
        lines.append(f"JobSet {version} (jobset.x-k8s.io/v1alpha2) in {workloads.NS_JOBSET}.")
    if defaults.trainer(fleet):
        version = fleet.versions.trainer
        trainer = helm(
            "trainer",
            version,
            fleet=fleet,
            release=workloads.TRAINER_RELEASE,
            namespace=workloads.NS_TRAINER,
            values=workloads.trainer_values(),
            depends_on=after + jobset_ids,
        )
        out.append(trainer)
        runtimes = workloads.runtimes(fleet)
        out += [k8s(runtime, depends_on=(trainer.id,)) for runtime in runtimes]
        names = ", ".join(f"`{r['metadata']['name']}`" for r in runtimes)
        lines.append(
            f"Kubeflow Trainer {version} (trainer.kubeflow.org/v1alpha1 TrainJob) in {workloads.NS_TRAINER}, on"
            f" gpufleet's JobSet; ClusterTrainingRuntimes {names}."
        )
    if defaults.leader_worker_set(fleet):
        version = fleet.versions.leader_worker_set
        out.append(
            helm(
                "leaderWorkerSet",
                version,
                fleet=fleet,
                release=workloads.LWS_RELEASE,
                namespace=workloads.NS_LWS,
                values=workloads.lws_values(version),
                depends_on=after,
            )
        )
        lines.append(f"LeaderWorkerSet {version} (leaderworkerset.x-k8s.io/v1) in {workloads.NS_LWS}.")
    if lines:
        lines = [
            "",
            "Workload APIs (workloads.*; Kueue admits each as one workload):",
            *(f"- {line}" for line in lines),
        ]
    return out, lines


def _team_access(fleet: Fleet, namespaces: dict[str, Resource]) -> list[Resource]:
    """Per team (gpufleet.plan.manifests.tenancy): RBAC for its access-entry group (a Role and RoleBinding in its
    namespace, read access to the cluster-scoped Kueue kinds) and the namespace's default-deny ingress NetworkPolicy."""
    viewer = k8s(tenancy.queue_viewer_role())
    out = [viewer]
    for team in fleet.teams:
        ns = (namespaces[team.name].id,)
        role = k8s(tenancy.team_role(fleet, team), depends_on=ns)
        out += [
            role,
            k8s(tenancy.team_role_binding(team), depends_on=(role.id,)),
            k8s(tenancy.queue_viewer_binding(team), depends_on=(viewer.id,)),
        ]
        out.append(k8s(tenancy.default_deny_ingress(team, monitoring_namespace(fleet)), depends_on=ns))
        out.append(k8s(tenancy.default_deny_egress(team), depends_on=ns))
        # The namespace's `default` ServiceAccount exists with the namespace: patched, not created.
        account = k8s(tenancy.default_service_account(team), depends_on=ns)
        out.append(replace(account, id=f"{account.id}-patch", type=f"{account.type}Patch"))
    return out


def _tenant_policies(fleet: Fleet) -> list[Resource]:
    """The policies that keep teams apart (gpufleet.plan.manifests.tenant_policies), bound to the team namespaces."""
    teams = admission_policy.namespaces_in(t.namespace for t in fleet.teams)
    out: list[Resource] = []
    for policy in (
        tenant_policies.priority_policy({t.namespace: defaults.team_priorities(fleet, t) for t in fleet.teams}),
        tenant_policies.owned_objects_policy(),
        tenant_policies.team_network_policy_policy(),
        tenant_policies.owner_spoofing_policy(),
        tenant_policies.daemonset_policy(),
        tenant_policies.service_policy({t.namespace: t.service_types for t in fleet.teams}),
    ):
        created = k8s(policy)
        out += [created, k8s(admission_policy.binding(policy["metadata"]["name"], teams), depends_on=(created.id,))]
    return out + _serving_readiness(fleet)


def inference_targets(fleet: Fleet) -> readiness_policy.InferenceTargets:
    """What places a pod template on an Inference group (gpufleet.plan.manifests.readiness_policy)."""
    inference = [g for g in fleet.node_groups if g.workload_class is WorkloadClass.INFERENCE]
    names = {g.name for g in inference}
    return readiness_policy.InferenceTargets(
        groups=tuple(g.name for g in inference),
        taints=readiness_policy.exclusive_taints(
            (group_taints(g) for g in inference), (group_taints(g) for g in fleet.node_groups if g.name not in names)
        ),
        namespaces=tuple(t.namespace for t in fleet.teams if t.quotas and all(q.node_group in names for q in t.quotas)),
    )


def _serving_readiness(fleet: Fleet) -> list[Resource]:
    """The serving readiness policy, bound per mode to the team namespaces that check (none without an Inference
    group, nor when every team is Off)."""
    targets = inference_targets(fleet)
    binds = readiness_policy.bindings({t.namespace: defaults.serving_readiness_probe(fleet, t) for t in fleet.teams})
    if not targets.groups or not binds:
        return []
    created = k8s(readiness_policy.policy(targets))
    return [created, *(k8s(b, depends_on=(created.id,)) for b in binds)]


def _sum_nominal(fleet: Fleet) -> dict[str, int]:
    totals = {g.name: 0 for g in fleet.node_groups}
    for team in fleet.teams:
        for quota in team.quotas:
            totals[quota.node_group] += quota.gpus
    return totals


def _warnings(fleet: Fleet) -> list[str]:
    out = []
    for name, total in _sum_nominal(fleet).items():
        group = fleet.node_group(name)
        capacity = kueue.capacity_gpus(group)
        if total > capacity:
            out.append(
                f"flavor {name}: teams' nominal quotas add up to {total} GPUs, more than node group {name} holds at"
                f" maxSize ({group.max_size} nodes, {capacity} GPUs): admitted workloads may wait for nodes that never"
                " come"
            )
    for group in fleet.node_groups:
        taints = group_taints(group)
        if len(taints) > kueue.FLAVOR_MAX_TAINTS:
            rest = [t["key"] for t in taints[kueue.FLAVOR_MAX_TAINTS :]]
            dropped = ", ".join(rest[:3]) + (f" and {len(rest) - 3} more" if len(rest) > 3 else "")
            out.append(
                f"flavor {group.name}: a Kueue ResourceFlavor holds at most {kueue.FLAVOR_MAX_TAINTS} taints and"
                f" tolerations, the group has {len(taints)}: pods admitted there must tolerate the rest themselves"
                f" ({dropped})"
            )
    if fleet.admission.within_cluster_queue == "LowerOrNewerEqualPriority" and any(
        not p.preemptible for p in fleet.admission.priorities
    ):
        out.append(
            "preemption.withinClusterQueue LowerOrNewerEqualPriority lets a newer workload of a non-preemptible class"
            " preempt an older one of the same class"
        )
    return out


def _may_borrow(team: Team, limit: int | None) -> str:
    if team.cohort is None:
        return "no (no cohort)"
    if limit == 0:
        return "no (borrowingLimit 0)"
    return "unlimited (cohort's unused quota)" if limit is None else f"up to {limit}"


def _may_lend(team: Team, gpus: int, limit: int | None) -> str:
    if team.cohort is None:
        return "no (no cohort)"
    if limit == 0:
        return "no (lendingLimit 0)"
    return f"all {gpus} when unused" if limit is None else f"up to {limit}"


def _notes(fleet: Fleet, *, with_sharing: bool) -> list[str]:
    adm = fleet.admission
    lines = [
        (
            f"Kueue {fleet.versions.kueue}: a workload is admitted only when its whole quota fits; if its pods are not"
            f" all ready within {cold_start.pods_ready_timeout_seconds(fleet)}s it is evicted and requeued (backoff"
            f" {adm.backoff_base_seconds}s doubling up to {adm.backoff_max_seconds}s, deactivated after"
            f" {adm.backoff_limit_count} requeues). Jobs name their queue with the label `{LABEL_QUEUE_NAME}:"
            " <team>` and pick a node group with `nodeSelector: {gpufleet.io/node-group: <group>}`."
        ),
        "",
        "| team | namespace | cohort | node group | nominal GPUs | may borrow | may lend | CPU | memory |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for team in fleet.teams:
        for quota in team.quotas:
            amounts = kueue.resource_amounts(fleet.node_group(quota.node_group), quota.gpus)
            lines.append(
                f"| {team.name} | {team.namespace} | {team.cohort or '-'} | {quota.node_group} | {quota.gpus} |"
                f" {_may_borrow(team, quota.borrowing_limit)} | {_may_lend(team, quota.gpus, quota.lending_limit)} |"
                f" {amounts['cpu']} | {amounts['memory']} |"
            )
    lines += [
        "",
        (
            "| flavor (node group) | GPUs at maxSize | nominal sum | devices per GPU | CPU per GPU | memory per GPU |"
            " topology |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    totals = _sum_nominal(fleet)
    for group in fleet.node_groups:
        shape = kueue.per_gpu(group)
        devices = ", ".join(
            f"{n} `{name}`" for name, n in sharing.devices_per_gpu(group, with_sharing=with_sharing).items()
        )
        lines.append(
            f"| {group.name} | {kueue.capacity_gpus(group)} | {totals[group.name]} | {devices} | {shape.cpu_milli}m |"
            f" {shape.memory_mib}Mi | {defaults.placement(fleet, group)} |"
        )
    shared = [g.name for g in fleet.node_groups if g.sharing.strategy is not SharingStrategy.EXCLUSIVE]
    if shared and not with_sharing:
        lines += [
            "",
            (
                f"Sharing of node group{'s' if len(shared) > 1 else ''} {', '.join(shared)} takes effect only when the"
                " environment reaches the sharing stage: until then no device plugin or MIG manager config is"
                " deployed, their nodes advertise whole `nvidia.com/gpu`, and the queues count whole GPUs."
            ),
        ]
    lines += ["", "| priority | value | preemptible | PriorityClass preemptionPolicy |", "|---|---|---|---|"]
    for p in adm.priorities:
        lines.append(
            f"| {p.name} | {p.value} | {'yes' if p.preemptible else 'no'} |"
            f" {'Never' if p.preemptible else 'PreemptLowerPriority'} |"
        )
    for manager, groups in device_managers.managed(fleet):
        lines += manager.admission_notes(fleet, groups)
    return lines + _readiness_note(fleet)


def _readiness_note(fleet: Fleet) -> list[str]:
    """What gpufleet-serving-readiness does in each team namespace (nothing without an Inference group)."""
    targets = inference_targets(fleet)
    if not targets.groups:
        return []
    modes = {t.namespace: defaults.serving_readiness_probe(fleet, t) for t in fleet.teams}
    said = {
        "Deny": "refused in",
        "Warn": "admitted with a warning in",
        "Off": "not checked in",
    }
    parts = [
        f"{said[mode]} {', '.join(f'`{ns}`' for ns in sorted(n for n, m in modes.items() if m == mode))}"
        for mode in ("Deny", "Warn", "Off")
        if mode in modes.values()
    ]
    return [
        "",
        (
            f"Serving readiness (ValidatingAdmissionPolicy `{readiness_policy.POLICY}`, docs/inference.md): a"
            f" Deployment, StatefulSet, ReplicaSet, LeaderWorkerSet or bare Pod bound for Inference group"
            f"{'s' if len(targets.groups) > 1 else ''} {', '.join(targets.groups)} whose GPU containers lack a"
            f" readinessProbe is {'; '.join(parts)} (admission.servingReadinessProbe, teams[].servingReadinessProbe)."
        ),
    ]
