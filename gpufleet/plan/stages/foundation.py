"""Stage 1, foundation: the cluster (or the existing one), GPU node groups, namespaces and the GPU Operator.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/stages/foundation.py.
"""

from __future__ import annotations

from collections.abc import Callable

from gpufleet.facts import catalog, pricing
from gpufleet.facts.ami_releases import is_bottlerocket
from gpufleet.facts.stages import StageName
from gpufleet.plan.builders import cluster_roles, device_managers, provisioners, scale_up
from gpufleet.plan.builders.cluster import cluster_resources, pod_identity_resources, pod_identity_warning
from gpufleet.plan.builders.common import helm, k8s, namespace
from gpufleet.plan.builders.node_groups import efa_security_group, fast_snapshot_restores, prepuller, with_tags
from gpufleet.plan.manifests import autoscaler, gpu_operator, headroom, node_bootstrap
from gpufleet.plan.parts import AtFoundation, BuildContext, Resource, StageContent
from gpufleet.plan.stages import health as health_stage
from gpufleet.plan.stages import sharing as sharing_stage
from gpufleet.plan.stages import telemetry as telemetry_stage
from gpufleet.plan.stages.cost import group_gpu_hour_usd, usd
from gpufleet.spec import warm_pool
from gpufleet.spec.fleet import Fabric, Fleet
from gpufleet.spec.names import (
    HEADROOM_PRIORITY,
    HEADROOM_PRIORITY_CLASS,
    NS_GPU_OPERATOR,
    NS_SYSTEM,
    SYSTEM_NODE_GROUP,
)

AUTOSCALER_ROLE = "cluster-autoscaler-role"
AUTOSCALER_POLICY = "cluster-autoscaler-policy"
AUTOSCALER_POD_IDENTITY = "cluster-autoscaler-pod-identity"

# The later stages that put something into this one, in stage order (the GPU Operator's values merge in it).
AT_FOUNDATION: tuple[tuple[StageName, Callable[[BuildContext], AtFoundation]], ...] = (
    ("telemetry", telemetry_stage.at_foundation),
    ("sharing", sharing_stage.at_foundation),
    ("health", health_stage.at_foundation),
)


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    resources, warnings = cluster_resources(fleet)
    # Each group's device manager sets its Bottlerocket keys in every rollout.
    later = [device_managers.at_foundation()] + [
        at_foundation(ctx) for name, at_foundation in AT_FOUNDATION if ctx.includes(name)
    ]
    scaled = fleet.cluster.autoscaler == "Install"
    if any(g.fabric is Fabric.EFA for g in fleet.node_groups):
        resources += efa_security_group(fleet)
    for group in fleet.node_groups:
        labels = {k: v for part in later for k, v in part.node_labels(group).items()}
        resources += provisioners.of(group).group_resources(ctx, group, labels, later)
    resources += fast_snapshot_restores(fleet)
    if scaled:
        resources = [
            with_tags(r, autoscaler.discovery_tags(fleet)) if r.id == SYSTEM_NODE_GROUP else r for r in resources
        ]

    system_ns = k8s(namespace(NS_SYSTEM, {"pod-security.kubernetes.io/enforce": "baseline"}))
    # The operator's operands (driver, toolkit, device plugin, DCGM) are privileged by nature.
    operator_ns = k8s(namespace(NS_GPU_OPERATOR, {"pod-security.kubernetes.io/enforce": "privileged"}))
    # A cluster without GPU node groups (a MultiKueue manager) has no GPU Operator.
    gpus = bool(fleet.node_groups)
    resources += [system_ns, operator_ns] if gpus else [system_ns]
    for group in fleet.node_groups:
        daemonset = prepuller(fleet, group, system_ns.id)
        if daemonset is not None:
            resources.append(daemonset)
    resources += headroom_resources(ctx, system_ns.id)

    # The operator mounts the ConfigMaps its values name as non-optional volumes, so they are created here, before
    # the release.
    if gpus:
        extra = [values for part in later for values in part.operator_values]
        configs = [k8s(obj, depends_on=(operator_ns.id,)) for part in later for obj in part.operator_configmaps]
        resources += configs
        after = (operator_ns.id, *(c.id for c in configs)) + (
            (SYSTEM_NODE_GROUP,) if fleet.cluster.mode == "Create" else ()
        )
        operator = helm(
            "gpuOperator",
            fleet.versions.gpu_operator,
            fleet=fleet,
            release="gpu-operator",
            namespace=NS_GPU_OPERATOR,
            values=gpu_operator.values(fleet, *extra),
            depends_on=after,
        )
        resources.append(operator)
        for manager, groups in device_managers.managed(fleet):
            resources += manager.foundation_resources(ctx, groups, operator)
    # What the cluster's role among several adds (a MultiKueue manager's credentials role and access entries).
    resources += cluster_roles.of(fleet).foundation_resources(ctx)
    if scaled:
        resources += autoscaler_resources(fleet)
        warnings += _autoscaler_warnings(fleet)
    for provisioner in provisioners.used(fleet):
        groups = [g for g in fleet.node_groups if provisioners.of(g) is provisioner]
        resources += provisioner.controller_resources(ctx, groups, later)
    notes = _notes(ctx) + _autoscaler_notes(ctx)
    return StageContent(resources=tuple(resources), warnings=tuple(warnings), notes=tuple(notes))


def autoscaler_resources(fleet: Fleet) -> list[Resource]:
    """The Cluster Autoscaler: its Pod Identity role, policy and association, and the Helm release after the
    association and the system nodes.

    Why: docs/stage-1.md, "Design notes", foundation.autoscaler_resources."""
    version = fleet.versions.cluster_autoscaler
    create = fleet.cluster.mode == "Create"
    return [
        *pod_identity_resources(
            fleet,
            role=AUTOSCALER_ROLE,
            policy=AUTOSCALER_POLICY,
            association=AUTOSCALER_POD_IDENTITY,
            name_prefix=f"{fleet.name}-cluster-autoscaler-",
            description=(
                f"Cluster Autoscaler of EKS cluster {fleet.cluster.name} (EKS Pod Identity,"
                f" {autoscaler.NAMESPACE}/{autoscaler.SERVICE_ACCOUNT})"
            ),
            policy_name="cluster-autoscaler",
            policy_document=autoscaler.iam_policy(fleet),
            namespace=autoscaler.NAMESPACE,
            service_account=autoscaler.SERVICE_ACCOUNT,
        ),
        helm(
            "clusterAutoscaler",
            version,
            fleet=fleet,
            release=autoscaler.RELEASE,
            namespace=autoscaler.NAMESPACE,
            values=autoscaler.values(fleet),
            depends_on=(AUTOSCALER_POD_IDENTITY,) + ((SYSTEM_NODE_GROUP,) if create else ()),
        ),
    ]


def _autoscaler_warnings(fleet: Fleet) -> list[str]:
    warning = pod_identity_warning(
        fleet,
        "the Cluster Autoscaler gets no AWS credentials and scales nothing (or set cluster.autoscaler: None if the"
        " cluster has its own autoscaler)",
    )
    return [warning] if warning else []


def _autoscaler_notes(ctx: BuildContext) -> list[str]:
    fleet = ctx.fleet
    if fleet.cluster.autoscaler != "Install":
        return [
            "",
            (
                "Node autoscaling: none (cluster.autoscaler None); node groups stay at their initial size unless your"
                " own autoscaler changes them."
            ),
        ]
    args = autoscaler.EXTRA_ARGS
    where = "on the system nodes" if fleet.cluster.mode == "Create" else "where the chart places it"
    lines = [
        "",
        (
            f"Cluster Autoscaler chart {fleet.versions.cluster_autoscaler}, image {autoscaler.image_tag(fleet)}"
            f" (Kubernetes {fleet.cluster.kubernetes_version}), in `{autoscaler.NAMESPACE}` {where}: adds nodes to a"
            " group (up to maxSize) when pods are pending; removes a GPU node once no pod has used its GPUs for"
            f" {args['scale-down-unneeded-time']} (never below minSize)."
        ),
        "",
        "| node group | min..max | an empty group's nodes offer (scale-from-zero template) |",
        "|---|---|---|",
    ]
    for g in fleet.node_groups:
        offered = autoscaler.template_resources(
            fleet, g, with_sharing=ctx.includes("sharing"), with_network=ctx.includes("network")
        )
        lines.append(
            f"| {g.name} | {g.min_size}..{g.max_size} | " + ", ".join(f"`{k}: {v}`" for k, v in offered.items()) + " |"
        )
    return lines


def _notes(ctx: BuildContext) -> list[str]:
    fleet = ctx.fleet
    lines = [
        "| node group | instance | GPUs/node | class | capacity | min..max | warm pool | fabric | topology | sharing |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in fleet.node_groups:
        info = catalog.lookup(g.instance_type)
        gpus = f"{info.gpu_count} x {info.gpu_model}" if info else "?"
        pool = f"{g.warm_pool.min_size} {g.warm_pool.state}" if g.warm_pool else "-"
        policy, scope, _ = node_bootstrap.topology(g)
        share = (
            g.sharing.strategy.value
            + (f" x{g.sharing.replicas}" if g.sharing.replicas else "")
            + (f" {g.sharing.profile}" if g.sharing.profile else "")
        )
        if g.sharing.layout:
            share += " mixed " + ", ".join(f"{s.gpus} x {s.profile}" for s in g.sharing.layout)
        lines.append(
            f"| {g.name} | {g.instance_type} | {gpus} | {g.workload_class.value} | {g.capacity_type.value} |"
            f" {g.min_size}..{g.max_size} | {pool} | {g.fabric.value} | {policy}/{scope} | {share} |"
        )
    return lines + _warm_pool_notes(fleet) + headroom_notes(ctx) + _gating_notes(fleet) + scale_up.notes(fleet)


def _gating_notes(fleet: Fleet) -> list[str]:
    """What stage 1 waits for before the next stage starts, and what it does not."""
    cluster = (
        "the cluster, its add-ons and the system node group ACTIVE"
        if fleet.cluster.mode == "Create"
        else "the existing cluster looked up"
    )
    releases = (
        "GPU Operator and Cluster Autoscaler releases"
        if fleet.cluster.autoscaler == "Install"
        else "GPU Operator release"
    )
    lines = [
        "",
        (
            f"Stage 1 is done, and the next stage starts, once Pulumi has seen {cluster}; every GPU node group ACTIVE"
            " (EKS counts a group ACTIVE once its desired nodes, minSize at creation, have joined; nodes that fail to"
            f" join fail the group with NodeCreationFailure); the {releases} ready (the charts' own Deployments and"
            " DaemonSets, not the operands the operator creates afterwards); and the namespaces and ConfigMaps"
            " created."
        ),
    ]
    pulled = [g.name for g in fleet.node_groups if g.images]
    if pulled:
        lines += [
            "",
            "Image pre-pulling gates nothing: the prepuller DaemonSets of "
            + ", ".join(pulled)
            + " are created, not awaited (`pulumi.com/skipAwait`; pulumi-kubernetes would otherwise wait up to"
            " 10 minutes for every node to pull, provider/pkg/await/daemonset.go), so an image that cannot be"
            " pulled shows as a prepuller pod in Init:ErrImagePull, not as a failed rollout. AL2023 nodes read"
            " their image list at boot from the SSM parameter `/gpufleet/"
            + fleet.name
            + "/<group>/images`: changing an image set updates it and the DaemonSet, never a launch template, so"
            " no node is replaced for it.",
        ]
        # Bottlerocket runs no user-data scripts: a node holds the images at boot only from a data-volume snapshot.
        late = [g.name for g in fleet.node_groups if g.images and is_bottlerocket(g.ami_type)]
        if late:
            cached = [g for g in late if fleet.node_group(g).data_volume_snapshot_id is not None]
            pulled_late = [g for g in late if g not in cached]
            after = "get them from the prepuller DaemonSet once they have joined, while the first pods pull them too"
            snapshot = "join with the images of their data-volume snapshot (dataVolumeSnapshotId)"
            if cached and pulled_late:
                how = f"those of {', '.join(cached)} {snapshot}; those of {', '.join(pulled_late)} {after}"
            elif cached:
                how = f"they {snapshot}, and the prepuller DaemonSet pulls what it lacks once they have joined"
            else:
                how = f"they {after}"
            lines[-1] += f" Bottlerocket nodes ({', '.join(late)}) run no user-data script: {how}."
    return lines


def headroom_resources(ctx: BuildContext, namespace_id: str) -> list[Resource]:
    """The placeholders' PriorityClass and one placeholder Deployment per group with headroom
    (gpufleet.plan.manifests.headroom).

    Why: docs/stage-1.md, "Design notes", foundation.headroom_resources."""
    held = [g for g in ctx.fleet.node_groups if g.headroom is not None]
    if not held:
        return []
    priority = k8s(headroom.priority_class())
    with_sharing = ctx.includes("sharing")
    return [priority] + [
        k8s(headroom.placeholder_deployment(g, with_sharing=with_sharing), depends_on=(namespace_id, priority.id))
        for g in held
    ]


def headroom_notes(ctx: BuildContext) -> list[str]:
    """Per group with headroom: the placeholders, what they hold, the nodes that run when the group is idle, and what
    the warm nodes cost (each is a whole node billed around the clock while the group is below maxSize)."""
    fleet = ctx.fleet
    held = [g for g in fleet.node_groups if g.headroom is not None]
    if not held:
        return []
    lines = [
        "",
        (
            f"Headroom (`headroom.nodes`): placeholder pods `{headroom.APP}` in `{NS_SYSTEM}` (PriorityClass"
            f" `{HEADROOM_PRIORITY_CLASS}`, value {HEADROOM_PRIORITY}, preemptionPolicy Never), one"
            " per warm node, each holding the node's GPUs. A serving pod (or any pod of priority above"
            f" {HEADROOM_PRIORITY} that may preempt) takes a warm node at once by preempting one; the"
            " evicted placeholder then brings up the next node. Kueue does not manage them; they hold no team quota."
            " Batch and training pods (preemptionPolicy Never) do not take warm nodes."
        ),
        "",
        "| node group | provisioner | warm nodes | each holds | nodes running when idle | standing cost/month |",
        "|---|---|---|---|---|---|",
    ]
    for g in held:
        assert g.headroom is not None
        info = catalog.lookup(g.instance_type)
        price = group_gpu_hour_usd(fleet, g)[0]
        n = g.headroom.nodes
        devices = headroom.held_devices(g, with_sharing=ctx.includes("sharing"))
        cost = "unknown" if price is None or info is None else usd(n * price * info.gpu_count * pricing.HOURS_PER_MONTH)
        each = ", ".join(f"`{k}: {v}`" for k, v in devices.items())
        lines.append(
            f"| {g.name} | {g.provisioner} | {n} | {each} | {max(n, g.min_size)} (minSize {g.min_size}) | {cost}"
            f" ({n} x {g.instance_type} around the clock) |"
        )
    return lines


def _warm_pool_notes(fleet: Fleet) -> list[str]:
    """How many instances each warm pool holds and what they cost while they wait (gpufleet.spec.warm_pool)."""
    pooled = [g for g in fleet.node_groups if g.warm_pool is not None]
    if not pooled:
        return []
    lines = [
        "",
        (
            "Warm pools hold max(minSize, maxGroupPreparedCapacity - desired) instances (EC2 PutWarmPool); gpufleet"
            " sets maxGroupPreparedCapacity to the pool's minSize unless `warmPool.maxPreparedCapacity` is set. A"
            " Stopped or Hibernated instance costs its gp3 volume, a Running one the full instance rate."
        ),
        "",
        (
            "| node group | state | maxGroupPreparedCapacity | held at desired 0 | held at desired minSize | standing"
            " cost/month at minSize |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for g in pooled:
        assert g.warm_pool is not None
        info = catalog.lookup(g.instance_type)
        price = group_gpu_hour_usd(fleet, g)[0]
        at_min = warm_pool.held(g, g.min_size)
        cost = (
            "unknown"
            if price is None or info is None
            else usd(warm_pool.standing_usd_per_month(g, at_min, price * info.gpu_count))
        )
        lines.append(
            f"| {g.name} | {g.warm_pool.state} | {warm_pool.prepared_capacity(g)} | {warm_pool.held(g, 0)} | {at_min}"
            f" (minSize {g.min_size}) | {cost} |"
        )
    return lines
