"""Rules on the node groups' fabric: EFA placement, RDMA networks and the bandwidth gate's image."""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue
from gpufleet.facts import catalog
from gpufleet.facts.versions import image_has_digest
from gpufleet.rules.registry import each_group, rule
from gpufleet.spec.deployed import stage_used
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet


@rule("efa")
def _efa(fleet: Fleet) -> Iterator[Issue]:
    for path, group in each_group(fleet):
        if group.fabric is not Fabric.EFA:
            if group.efa_taint == "Disabled":
                yield Issue(
                    path=path + ("efaTaint",),
                    at_key=True,
                    message=(
                        f"efaTaint Disabled has no effect on fabric {group.fabric}: only fabric EFA groups carry the"
                        " EFA taint"
                    ),
                    hint="remove efaTaint",
                )
            if group.placement_group is not None:
                yield Issue(
                    path=path + ("placementGroup",),
                    at_key=True,
                    message=f"placementGroup has no effect on fabric {group.fabric}: only fabric EFA groups launch"
                    " into a placement group",
                    hint="remove placementGroup",
                )
            continue
        if group.placement_group is not None and group.capacity_type is CapacityType.CAPACITY_BLOCK:
            yield Issue(
                path=path + ("placementGroup",),
                at_key=True,
                message="a Capacity Block's instances are placed by EC2 (co-located in the block's UltraCluster), so"
                " it launches into no placement group",
                hint="remove placementGroup",
            )
        info = catalog.lookup(group.instance_type)
        if info is not None and not info.efa_supported:
            yield Issue(
                path=path + ("fabric",),
                message=f"{group.instance_type} has no EFA",
                hint="use fabric None, or an EFA instance type (p4d, p5, p5e, p5en, p6, g6e.8xlarge and larger...)",
            )
        if group.zone is None:
            yield Issue(
                path=path + ("zone",),
                message="an EFA group must be pinned to one zone (EFA traffic does not cross availability zones)",
                hint="set zone to the zone ID of the group's subnet, e.g. zone: use1-az4",
            )
        subnets = group.subnet_ids if group.subnet_ids is not None else fleet.cluster.subnet_ids
        if len(subnets) != 1:
            inherited = "" if group.subnet_ids is not None else " (cluster.network.subnetIds)"
            yield Issue(
                path=path + ("subnetIds",),
                message=f"an EFA group must use exactly one subnet, in its zone; it uses {len(subnets)}{inherited}",
                hint="set subnetIds to the one subnet in the group's zone",
            )


@rule("network")
def _network(fleet: Fleet) -> Iterator[Issue]:
    rdma = fleet.network.rdma
    rdma_groups = [(path, group) for path, group in each_group(fleet) if group.fabric is Fabric.RDMA]
    for path, group in rdma_groups:
        info = catalog.lookup(group.instance_type)
        if info is not None and info.rdma_nics == 0:
            yield Issue(
                path=path + ("fabric",),
                message=(
                    f"{group.instance_type} has no RDMA NICs: EC2 GPU instances reach each other over EFA, not ConnectX"
                    " InfiniBand or RoCE, so fabric RDMA would launch the nodes without their EFA interfaces and wait"
                    " for rdma/* devices that never appear"
                ),
                hint=(
                    f"use fabric EFA ({group.instance_type} has {info.max_efa_interfaces} EFA interface(s))"
                    if info.efa_supported
                    else "use fabric None"
                ),
            )
    if rdma is None and rdma_groups and stage_used(fleet, "network"):
        path, group = rdma_groups[0]
        yield Issue(
            path=path + ("fabric",),
            message=(
                f'fabric RDMA needs network.rdma: the RDMA devices and ports of group "{group.name}"\'s NICs (for the'
                " device plugin, the secondary networks and NCCL_IB_HCA)"
            ),
            hint=(
                "add network.rdma.networks: [{name: rail0, interface: <netdev, e.g. ibp24s0>, hca: <RDMA device, e.g."
                " mlx5_0>}]"
            ),
        )
    if rdma is not None and not rdma_groups:
        yield Issue(
            path=("network", "rdma"),
            at_key=True,
            severity="warning",
            message="network.rdma is set but no node group has fabric RDMA: it is not used",
        )
    if rdma is not None:
        for field in ("name", "interface", "hca"):
            seen: set[str] = set()
            for i, net in enumerate(rdma.networks):
                value = getattr(net, field)
                if value in seen:
                    yield Issue(
                        path=("network", "rdma", "networks", i, field),
                        message=f'{field} "{value}" appears in more than one RDMA network',
                        hint="one entry per RDMA port",
                    )
                seen.add(value)
    image = fleet.network.bandwidth_gate.image
    if not image_has_digest(image):
        # A tag proves nothing about the bits: aws-samples' buildspec.yaml rebuilds and re-pushes its tag (and
        # :latest) on every build (awsome-distributed-training micro-benchmarks/nccl-tests/buildspec.yaml).
        yield Issue(
            path=("network", "bandwidthGate", "image"),
            message=f'image "{image}" is not pinned by digest: a tag can be rebuilt and pushed again',
            hint=(
                "the gate must measure the same bits every time: append the digest the tag resolves to, as"
                " <image>@sha256:<64 hex digits> (`docker buildx imagetools inspect <image:tag>` prints it)"
            ),
        )
