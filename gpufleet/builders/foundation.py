"""Stage 1, foundation: the cluster (or the existing one), GPU node groups, namespaces and the GPU Operator.

What later stages bring to these resources is wired here only when that stage is in the environment's
rollout: sharing labels and device-plugin/MIG configs (stage 4), DCGM metrics config (stage 2), EKS node
auto repair (stage 7). Each of those comes from the owning stage's manifests module.
"""

from __future__ import annotations

from gpufleet.builders.cluster import SYSTEM_NODE_GROUP, cluster_resources
from gpufleet.builders.common import NS_GPU_OPERATOR, NS_SYSTEM, helm, k8s, namespace
from gpufleet.builders.node_groups import _launch_template, _node_group, node_group_id, prepuller
from gpufleet.manifests import gpu_operator, health, node_bootstrap, sharing, telemetry
from gpufleet.plan import BuildContext, Resource, StageContent, builder


@builder("foundation")
def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    resources, warnings = cluster_resources(fleet)
    warnings += [w for w in (node_bootstrap.topology_warning(g) for g in fleet.node_groups) if w]
    with_sharing = ctx.includes("sharing")
    with_health = ctx.includes("health") and fleet.health.auto_repair == "Enabled"
    for group in fleet.node_groups:
        labels = sharing.sharing_node_labels(group) if with_sharing else {}
        toml = sharing.bottlerocket_sharing_settings(group) if with_sharing and hasattr(sharing, "bottlerocket_sharing_settings") else None
        resources += _launch_template(ctx, group, toml)
        repair = health.node_repair_config(fleet, group) if with_health else None
        resources.append(_node_group(ctx, group, labels, repair))

    system_ns = k8s(namespace(NS_SYSTEM, {"pod-security.kubernetes.io/enforce": "baseline"}))
    # The operator's operands (driver, toolkit, device plugin, DCGM) are privileged by nature.
    operator_ns = k8s(namespace(NS_GPU_OPERATOR, {"pod-security.kubernetes.io/enforce": "privileged"}))
    resources += [system_ns, operator_ns]
    for group in fleet.node_groups:
        daemonset = prepuller(fleet, group, system_ns.id)
        if daemonset is not None:
            resources.append(daemonset)

    extra = []
    if ctx.includes("telemetry"):
        extra.append(telemetry.operator_telemetry_values(fleet))
    if with_sharing:
        extra.append(sharing.operator_sharing_values(fleet))
    after = (operator_ns.id,) + ((SYSTEM_NODE_GROUP,) if fleet.cluster.mode == "Create" else ())
    resources.append(helm("gpuOperator", fleet.versions.gpu_operator, release="gpu-operator", namespace=NS_GPU_OPERATOR, values=gpu_operator.values(fleet, *extra), depends_on=after))
    notes = _notes(ctx, resources)
    return StageContent(resources=tuple(resources), warnings=tuple(warnings), notes=tuple(notes))


def _notes(ctx: BuildContext, resources: list[Resource]) -> list[str]:
    from gpufleet import catalog
    from gpufleet.manifests.node_bootstrap import topology

    fleet = ctx.fleet
    lines = ["| node group | instance | GPUs/node | class | capacity | min..max | warm pool | fabric | topology | sharing |", "|---|---|---|---|---|---|---|---|---|---|"]
    for g in fleet.node_groups:
        info = catalog.lookup(g.instance_type)
        gpus = f"{info.gpu_count} x {info.gpu_model}" if info else "?"
        pool = f"{g.warm_pool.min_size} {g.warm_pool.state}" if g.warm_pool else "-"
        policy, scope, _ = topology(g)
        share = g.sharing.strategy.value + (f" x{g.sharing.replicas}" if g.sharing.replicas else "") + (f" {g.sharing.profile}" if g.sharing.profile else "")
        lines.append(f"| {g.name} | {g.instance_type} | {gpus} | {g.workload_class.value} | {g.capacity_type.value} | {g.min_size}..{g.max_size} | {pool} | {g.fabric.value} | {policy}/{scope} | {share} |")
    ids = {r.id for r in resources}
    missing = [g.name for g in fleet.node_groups if node_group_id(g) not in ids]
    assert not missing, missing
    return lines
