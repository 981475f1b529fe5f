"""Stage 5, network: the fast path between GPU nodes, and a measured gate that it is really used.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/stages/network.py.
"""

from __future__ import annotations

from gpufleet.facts import catalog
from gpufleet.plan.builders import device_managers
from gpufleet.plan.builders.common import helm, k8s, namespace
from gpufleet.plan.manifests import dra
from gpufleet.plan.manifests import network as net
from gpufleet.plan.parts import BuildContext, Gate, Resource, StageContent
from gpufleet.spec.deployed import stage_used
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup
from gpufleet.spec.names import NS_NETWORK
from gpufleet.spec.provisioning import scaled_by


def _team_namespaces(fleet: Fleet, fabric: Fabric) -> list[str]:
    """Namespaces of teams with quota on a group of this fabric (created by the admission stage)."""
    groups = {g.name for g in net.fabric_groups(fleet, fabric)}
    return sorted({t.namespace for t in fleet.teams if any(q.node_group in groups for q in t.quotas)})


def _nccl_env(fleet: Fleet, fabric: Fabric, after: tuple[str, ...]) -> tuple[list[Resource], list[str]]:
    env = net.nccl_env(fabric, fleet.network.rdma)
    teams = _team_namespaces(fleet, fabric)
    resources = [
        k8s(net.nccl_env_configmap(fabric, ns, env), depends_on=after if ns == NS_NETWORK else ())
        for ns in [NS_NETWORK, *teams]
    ]
    settings = ", ".join(f"`{k}={v}`" for k, v in sorted(env.items()))
    where = f"`{NS_NETWORK}`" + (" and team namespaces " + ", ".join(f"`{t}`" for t in teams) if teams else "")
    return resources, [
        f"NCCL settings for {fabric.value} (ConfigMap `{net.nccl_env_name(fabric)}` in {where}): {settings}."
    ]


def _gate(fleet: Fleet, group: NodeGroup, after: tuple[str, ...]) -> tuple[list[Resource], Gate | None, list[str]]:
    """The gate of one group, or a warning why it cannot run."""
    if group.max_size < 2:
        return (
            [],
            None,
            [
                f'node group "{group.name}" has maxSize {group.max_size}: the {group.fabric.value} bandwidth gate needs'
                " two nodes, so it is skipped"
            ],
        )
    warnings = []
    # With the Cluster Autoscaler (stage 1) the gate's pending pods scale the group up themselves; so they do on a
    # Karpenter pool, for which Karpenter launches nodes (its controller comes with the pool, stage 1).
    scaled = scaled_by(fleet, group) is not None
    if not scaled and max(group.min_size, group.desired_size or 0) < 2:
        warnings.append(
            f'node group "{group.name}" may run fewer than two nodes (minSize {group.min_size}): the bandwidth gate'
            f" waits up to {fleet.network.bandwidth_gate.timeout_minutes} min for two (cluster.autoscaler is None: your"
            " autoscaler must add them, or raise minSize)"
        )
    service, job = net.gate_objects(fleet, group)
    svc = k8s(service, depends_on=after)
    claim_templates: list[Resource] = []
    if device_managers.of(group).managing.claims:
        # devices DRA: the gate's pods claim their GPUs with the EFA interfaces of their PCIe roots
        template, job = dra.claiming_gate(group, job)
        claim_templates = [k8s(template, depends_on=after)]
        if group.min_size < 1 and scaled:
            warnings.append(
                f'node group "{group.name}" has minSize 0: the Cluster Autoscaler never scales a DRA group up from'
                " zero nodes for pods that claim devices (docs/dra.md), so the bandwidth gate's pods wait until the"
                f" group has a node; raise nodeGroups[{group.name}].scaling.minSize to 1"
            )
    job_res = k8s(job, depends_on=after + (svc.id, *(t.id for t in claim_templates)))
    if group.capacity_type is CapacityType.CAPACITY_BLOCK:
        # A Capacity Block has nodes only inside its reservation window; a gate would time out outside it and hold back
        # every later stage.
        return (
            [svc, *claim_templates, job_res],
            None,
            warnings
            + [
                f'node group "{group.name}" is a Capacity Block: its bandwidth check (Job'
                f" {NS_NETWORK}/{net.gate_name(group)}) runs once the reservation window opens and does not gate later"
                " stages; read its result with kubectl before scheduling jobs on the group"
            ],
        )
    info = catalog.lookup(group.instance_type)
    assert info is not None
    gate = fleet.network.bandwidth_gate
    min_bw = net.min_bus_bandwidth(info, gate.efficiency)
    if net.floor_is_estimate(info):
        warnings.append(
            f'node group "{group.name}": no published two-node all_reduce measurement exists for'
            f" {group.instance_type} or a same-fabric sibling, so its gate floor ({min_bw:g} GB/s) is"
            f" network.bandwidthGate.efficiency x the rated line rate: an estimate that may pass a degraded fabric"
            " or fail a healthy one; measure a healthy pair once and set efficiency from it"
        )
    network = net.EFA_NET if group.fabric is Fabric.EFA else net.RDMA_NET
    expectation = (
        f"`all_reduce_perf` across 2 x {group.instance_type} ({2 * info.gpu_count} GPUs"
        + (
            f" in {2 * net.gate_pods_per_node(group)} pods, one per NUMA node (topology.podShape OneNumaNode)"
            if net.gate_pods_per_node(group) > 1
            else ""
        )
        + ","
        f" {net.GATE_SIZES[0]}-{net.GATE_SIZES[1]} messages) averages at least"
        f" {round(min_bw * net.NCCL_TESTS_SLACK, 1):g} GB/s bus bandwidth (nccl-tests fails below 0.9 x"
        f" `NCCL_TESTS_MIN_BW={min_bw:g}`, the {net.floor_source(info, gate.efficiency)}), over NCCL network"
        f" `{network}` with no `NET/Socket` fallback (Job `{NS_NETWORK}/{net.gate_name(group)}`)."
    )
    return (
        [svc, *claim_templates, job_res],
        Gate(name=f"nccl-bandwidth-{group.name}", resource=job_res.id, expectation=expectation),
        warnings,
    )


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    efa_groups = net.fabric_groups(fleet, Fabric.EFA)
    rdma_groups = net.fabric_groups(fleet, Fabric.RDMA)
    if not (efa_groups or rdma_groups):
        return StageContent(
            notes=("No EFA or RDMA node groups: GPUs talk over the VPC network only; nothing to install.",)
        )
    if not stage_used(fleet, "network"):
        return StageContent()  # no environment deploys it, so its versions need not be pinned
    ns = k8s(namespace(NS_NETWORK, {"pod-security.kubernetes.io/enforce": "privileged"}))
    resources: list[Resource] = [ns]
    gates: list[Gate] = []
    warnings: list[str] = []
    notes = [
        "| node group | fabric | instance | rated line rate | `NCCL_TESTS_MIN_BW` (GB/s) | run fails below (GB/s) |",
        "|---|---|---|---|---|---|",
    ]
    notes += [net.gate_threshold_row(fleet, g) for g in efa_groups + rdma_groups if g.max_size >= 2]
    notes.append("")

    if efa_groups:
        # What hands out each EFA group's interfaces: the EFA device plugin, or the EFA DRA driver on DRA groups.
        handed_out: dict[str, str] = {}
        for manager, groups in device_managers.managed(fleet, Fabric.EFA):
            own = manager.network_resources(ctx, groups, ns.id)
            resources += own
            handed_out |= {g.name: own[0].id for g in groups}
        configmaps, lines = _nccl_env(fleet, Fabric.EFA, (ns.id,))
        resources += configmaps
        notes += lines
        for group in efa_groups:
            res, gate, warn = _gate(fleet, group, (handed_out[group.name], configmaps[0].id))
            resources += res
            warnings += warn
            gates += [gate] if gate else []

    if rdma_groups:
        rdma = fleet.network.rdma
        version = fleet.versions.network_operator
        assert rdma is not None  # rules
        operator = helm(
            "networkOperator",
            version,
            fleet=fleet,
            release="network-operator",
            namespace=net.NS_NETWORK_OPERATOR,
            values=net.network_operator_values(),
        )
        policy = k8s(net.nic_cluster_policy(fleet, version), depends_on=(operator.id,))
        multus = [k8s(obj, depends_on=(ns.id,)) for obj in net.multus_objects(fleet)]
        daemonset = next(r.id for r in multus if r.type.endswith(":DaemonSet"))
        # The NetworkAttachmentDefinition CRD comes with the Network Operator chart.
        nads = [k8s(net.network_attachment(rdma, n), depends_on=(operator.id, daemonset)) for n in rdma.networks]
        resources += [operator, policy, *multus, *nads]
        configmaps, lines = _nccl_env(fleet, Fabric.RDMA, (ns.id,))
        resources += configmaps
        notes += lines + [""]
        pools = ", ".join(f"`{n.ip_pool}`" for n in rdma.networks)
        notes.append(
            f"RDMA pods request `{net.rdma_resource(rdma)}: 1` and attach `k8s.v1.cni.cncf.io/networks:"
            f" {net.networks_annotation(rdma)}`. The networks allocate addresses from nv-ipam IPPools {pools} in"
            f" namespace `{net.NS_NETWORK_OPERATOR}` (docs/network-and-storage.md)."
        )
        # The IPPool CRD is not in the chart's crds/ (the operator applies it once it reconciles nvIpam), so no IPPool
        # is in this stage's plan.
        wait = fleet.network.bandwidth_gate.timeout_minutes
        warnings.append(
            f"the RDMA networks need nv-ipam IPPools {pools} (nv-ipam.nvidia.com/v1alpha1, namespace"
            f" {net.NS_NETWORK_OPERATOR}) that gpufleet cannot create: the Network Operator installs the IPPool CRD"
            " only when it reconciles the NicClusterPolicy's nvIpam, after stage 5 starts. Create them with your"
            f" fabric's subnets while the RDMA bandwidth gate waits (up to {wait} min), or the gate's pods get no"
            " addresses and the rollout fails at stage 5"
        )
        for group in rdma_groups:
            res, gate, warn = _gate(fleet, group, (policy.id, daemonset, configmaps[0].id, *(n.id for n in nads)))
            resources += res
            warnings += warn
            gates += [gate] if gate else []

    return StageContent(resources=tuple(resources), gates=tuple(gates), warnings=tuple(warnings), notes=tuple(notes))
