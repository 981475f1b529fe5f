"""The node half of stage 1: per spec node group a launch template (user data, EFA interfaces, placement,
Capacity Block or On-Demand Capacity Reservation), an EKS managed node group, and a prepuller DaemonSet for its images.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/plan/builders/node_groups.py.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gpufleet.facts import catalog
from gpufleet.plan.builders import device_managers
from gpufleet.plan.builders.cluster import NODE_ROLE, node_role_attachments, security_group, security_group_rule, tags
from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER, k8s
from gpufleet.plan.manifests import autoscaler, checkov, node_bootstrap, restricted

# The pinned pause image (registry.k8s.io/pause, multi-arch) of the prepuller's main container and the placeholders.
from gpufleet.plan.manifests.headroom import PAUSE_IMAGE
from gpufleet.plan.parts import AtFoundation, BuildContext, Concat, Ref, Resource, RolloutPlan, bottlerocket_settings
from gpufleet.spec import defaults, warm_pool
from gpufleet.spec.efa import efa_interfaces
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup, Reservation
from gpufleet.spec.names import (
    LABEL_FABRIC,
    LABEL_GPU_MODEL,
    LABEL_NODE_GROUP,
    LABEL_SHARING,
    LABEL_WORKLOAD_CLASS,
    NS_SYSTEM,
    SKIP_AWAIT,
    TAG_RESERVED_INSTANCES,
    eks_effect,
    group_taints,
    launch_template_id,
    node_group_id,
    node_group_name_prefix,
    placement_group_id,
    tolerations_for,
)
from gpufleet.spec.provisioning import MANAGED_NODE_GROUP, scaled_by

CAPACITY_TYPES = {
    CapacityType.ON_DEMAND: "ON_DEMAND",
    CapacityType.SPOT: "SPOT",
    CapacityType.CAPACITY_BLOCK: "CAPACITY_BLOCK",
}


def node_labels(group: NodeGroup, extra: dict[str, str]) -> dict[str, str]:
    info = catalog.lookup(group.instance_type)
    labels = {
        LABEL_NODE_GROUP: group.name,
        LABEL_WORKLOAD_CLASS: group.workload_class.value,
        LABEL_FABRIC: group.fabric.value,
        LABEL_GPU_MODEL: info.gpu_model if info else "unknown",
        # The intended sharing, so `gpufleet diagnose` can compare it with what the device plugin reports.
        LABEL_SHARING: group.sharing.strategy.value,
        # Which device manager runs on the node; its DaemonSets and the others' select on it.
        **device_managers.of(group).node_labels(group),
        **dict(group.labels),
        **extra,
    }
    if group.ami_type.startswith("BOTTLEROCKET"):
        # Bottlerocket runs its own NVIDIA driver, toolkit and device plugin (configured by its settings):
        # the GPU Operator must not deploy those operands there (its nvidia.com/gpu.deploy.<operand> labels).
        labels.update(
            {
                f"nvidia.com/gpu.deploy.{operand}": "false"
                for operand in ("driver", "container-toolkit", "device-plugin")
            }
        )
    return dict(sorted(labels.items()))


def prepulled_images(fleet: Fleet, group: NodeGroup) -> list[str]:
    sets = {s.name: s.images for s in fleet.image_sets}
    return sorted({image for name in group.images for image in sets.get(name, ())})


def image_list_id(group: NodeGroup) -> str:
    return f"{group.name}-image-list"


def image_list(fleet: Fleet, group: NodeGroup) -> Resource | None:
    """The group's pre-pull image list as an SSM parameter that the AL2023 user data reads at boot
    (node_bootstrap.prepull_script): an image-set change updates this parameter in place and the prepuller
    DaemonSet, never the launch template, so no node is replaced for it.

    Why: docs/cold-start.md, "Design notes", node_groups.image_list."""
    images = prepulled_images(fleet, group)
    if not images or not node_bootstrap.boot_prepull(group):
        return None
    return Resource(
        id=image_list_id(group),
        type="aws:ssm/parameter:Parameter",
        provider=AWS_PROVIDER,
        args={
            "name": node_bootstrap.image_list_parameter(fleet.name, group),
            "type": "StringList",
            "tier": "Intelligent-Tiering",
            "insecureValue": ",".join(images),
            "description": f"gpufleet: images node group {group.name} pre-pulls at boot",
            "tags": tags(fleet),
        },
    )


def odcr_specification(r: Reservation) -> dict[str, Any]:
    """The launch template's capacityReservationSpecification for an ODCR, as EC2 defines each choice
    (LaunchTemplateCapacityReservationSpecificationRequest): a target (one reservation, or a Capacity
    Reservation group) without a preference, which EC2 and the pinned pulumi-aws allow only as
    `capacity-reservations-only`; or the preference `open`.

    Why: docs/cold-start.md, "Design notes", node_groups.odcr_specification."""
    if r.id is not None:
        return {"capacityReservationTarget": {"capacityReservationId": r.id}}
    if r.resource_group_arn is not None:
        return {"capacityReservationTarget": {"capacityReservationResourceGroupArn": r.resource_group_arn}}
    return {"capacityReservationPreference": "open"}


EFA_SECURITY_GROUP = "efa-security-group"
EFA_SELF_RULES = ("efa-self-ingress", "efa-self-egress")


def efa_security_group(fleet: Fleet) -> list[Resource]:
    """The security group every EFA interface carries beside the cluster security group, in mode Create and
    Existing alike: all traffic to and from the group itself.
    Sources: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html.

    Why: docs/cold-start.md, "Design notes", node_groups.efa_security_group."""
    sg = security_group(fleet, EFA_SECURITY_GROUP, "efa", "EFA: all traffic to and from itself (SRD)")
    rules = [
        security_group_rule(
            fleet,
            rule_id,
            kind,
            Ref(EFA_SECURITY_GROUP, "id"),
            referencedSecurityGroupId=Ref(EFA_SECURITY_GROUP, "id"),
            ipProtocol="-1",
            description=f"EFA: all traffic {direction} this security group",
        )
        for rule_id, kind, direction in zip(EFA_SELF_RULES, ("Ingress", "Egress"), ("from", "to"), strict=True)
    ]
    return [sg, *rules]


def efa_placement(fleet: Fleet, group: NodeGroup) -> tuple[list[Resource], Any | None]:
    """The cluster placement group an EFA group's nodes launch into, for a launch template and an EC2NodeClass
    alike: the resources to create for it, and its name (None: no placement group)."""
    if group.placement_group == "None" or group.capacity_type is CapacityType.CAPACITY_BLOCK:
        return [], None  # Capacity Blocks are co-located in UltraClusters already; None: the spec asks for no group.
    if group.placement_group is not None:
        # The existing cluster placement group the group's reservation was created in (EC2 cr-cpg.html).
        return [], group.placement_group
    # Other EFA capacity needs a cluster placement group for full bisection bandwidth.
    pg = placement_group_id(group)
    created = Resource(
        id=pg,
        type="aws:ec2/placementGroup:PlacementGroup",
        provider=AWS_PROVIDER,
        args={"name": f"{fleet.name}-{group.name}", "strategy": "cluster", "tags": tags(fleet)},
    )
    return [created], Ref(pg, "name")


def launch_template(ctx: BuildContext, group: NodeGroup, sharing_toml: dict[str, Any] | None) -> list[Resource]:
    fleet = ctx.fleet
    out: list[Resource] = []
    bottlerocket = group.ami_type.startswith("BOTTLEROCKET")
    image_list = (
        (node_bootstrap.image_list_parameter(fleet.name, group), fleet.cluster.region)
        if prepulled_images(fleet, group) and node_bootstrap.boot_prepull(group)
        else None
    )
    text = node_bootstrap.user_data(group, image_list, sharing_toml)
    args: dict[str, Any] = {
        "namePrefix": f"{fleet.name}-{group.name}-",
        "updateDefaultVersion": True,
        "userData": base64.b64encode(text.encode()).decode(),
        "blockDeviceMappings": [
            {
                # Bottlerocket keeps images and pods on its data volume (/dev/xvdb); AL2023 on the root volume.
                "deviceName": "/dev/xvdb" if bottlerocket else "/dev/xvda",
                "ebs": {
                    "volumeSize": group.disk_size_gib,
                    "volumeType": "gp3",
                    "encrypted": "true",
                    "deleteOnTermination": "true",
                    # gp3 throughput and IOPS above the baseline (diskThroughputMiBps, diskIops)
                    **node_bootstrap.ebs_performance(group),
                    # Bottlerocket's data volume from a snapshot that holds the images (dataVolumeSnapshotId)
                    **(
                        {"snapshotId": group.data_volume_snapshot_id}
                        if group.data_volume_snapshot_id is not None
                        else {}
                    ),
                    # the rate EBS initializes it at (snapshotInitialization mode ProvisionedRate)
                    **node_bootstrap.volume_initialization(group),
                },
            }
        ],
        # IMDSv2 only, one hop: pods cannot reach the node's credentials (they use EKS Pod Identity instead).
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
        "tagSpecifications": [
            {
                "resourceType": "instance",
                "tags": {**tags(fleet), "Name": f"{fleet.name}-{group.name}", LABEL_NODE_GROUP: group.name},
            }
        ],
    }
    if group.fabric is Fabric.EFA:
        # One EFA interface per network card: card 0 device 0 is EFA with ENA (the primary); the others are EFA-only at
        # device index 1 (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html).
        security_groups = [Ref(CLUSTER, "vpcConfig.clusterSecurityGroupId"), Ref(EFA_SECURITY_GROUP, "id")]
        interfaces = [
            {
                "networkCardIndex": 0,
                "deviceIndex": 0,
                "interfaceType": "efa",
                "securityGroups": security_groups,
                "deleteOnTermination": "true",
            }
        ]
        for card in range(1, efa_interfaces(group)):
            interfaces.append(
                {
                    "networkCardIndex": card,
                    "deviceIndex": 1,
                    "interfaceType": "efa-only",
                    "securityGroups": security_groups,
                    "deleteOnTermination": "true",
                }
            )
        args["networkInterfaces"] = interfaces
        created, placement = efa_placement(fleet, group)
        out += created
        if placement is not None:
            args["placement"] = {"groupName": placement}
    if group.capacity_type is CapacityType.CAPACITY_BLOCK:
        # https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html
        args["instanceType"] = group.instance_type
        args["instanceMarketOptions"] = {"marketType": "capacity-block"}
        args["capacityReservationSpecification"] = {
            "capacityReservationTarget": {"capacityReservationId": group.reservation_id}
        }
    elif group.reservation is not None:
        args["capacityReservationSpecification"] = odcr_specification(group.reservation)
    out.append(
        Resource(
            id=launch_template_id(group),
            type="aws:ec2/launchTemplate:LaunchTemplate",
            provider=AWS_PROVIDER,
            args=args,
            # Nodes start only once SRD can pass between them, and once fast snapshot restore is enabled in their
            # zones (the resource is created when the snapshot reaches `enabled`), so their volumes come initialized.
            depends_on=(EFA_SELF_RULES if group.fabric is Fabric.EFA else ()) + fast_snapshot_restore_ids(group),
        )
    )
    return out


def _fsr_id(snapshot: str, zone: str) -> str:
    return f"{snapshot}-{zone}-fast-snapshot-restore"


def fast_snapshot_restore_ids(group: NodeGroup) -> tuple[str, ...]:
    """The fast snapshot restores the group's volumes are created with."""
    init, snapshot = group.snapshot_initialization, group.data_volume_snapshot_id
    if snapshot is None or init is None or init.mode != "FastSnapshotRestore":
        return ()
    return tuple(_fsr_id(snapshot, zone) for zone in init.availability_zones or ())


def fast_snapshot_restores(fleet: Fleet) -> list[Resource]:
    """One aws.ebs.FastSnapshotRestore per snapshot and zone of mode FastSnapshotRestore, shared by the groups that
    restore it there. Why: docs/cold-start.md, "Design notes", node_groups.fast_snapshot_restores."""
    out: dict[str, Resource] = {}
    for group in fleet.node_groups:
        init, snapshot = group.snapshot_initialization, group.data_volume_snapshot_id
        if snapshot is None or init is None or init.mode != "FastSnapshotRestore":
            continue
        for zone in init.availability_zones or ():
            rid = _fsr_id(snapshot, zone)
            out.setdefault(
                rid,
                Resource(
                    id=rid,
                    type="aws:ebs/fastSnapshotRestore:FastSnapshotRestore",
                    provider=AWS_PROVIDER,
                    args={"availabilityZone": zone, "snapshotId": snapshot},
                ),
            )
    return [out[k] for k in sorted(out)]


def managed_node_group(
    ctx: BuildContext, group: NodeGroup, extra_labels: dict[str, str], repair: dict[str, Any] | None
) -> Resource:
    fleet = ctx.fleet
    subnets = list(group.subnet_ids or fleet.cluster.subnet_ids)
    update: dict[str, Any] = {"updateStrategy": "MINIMAL" if group.update.strategy == "Minimal" else "DEFAULT"}
    if group.update.max_unavailable_percentage is not None:
        update["maxUnavailablePercentage"] = group.update.max_unavailable_percentage
    else:
        update["maxUnavailable"] = defaults.max_unavailable(group)
    args: dict[str, Any] = {
        "clusterName": Ref(CLUSTER, "name"),
        # A prefix, not a fixed name: a replacement node group is created before the old one is deleted.
        "nodeGroupNamePrefix": node_group_name_prefix(fleet.name, group.name),
        "nodeRoleArn": Ref(NODE_ROLE, "arn"),
        "subnetIds": subnets,
        "amiType": group.ami_type,
        "releaseVersion": group.ami_release_version,
        "capacityType": CAPACITY_TYPES[group.capacity_type],
        "scalingConfig": {
            "minSize": group.min_size,
            "maxSize": group.max_size,
            "desiredSize": defaults.desired_size(group),
        },
        "updateConfig": update,
        "labels": node_labels(group, extra_labels),
        "taints": [
            {"key": t["key"], "value": t["value"], "effect": eks_effect(t["effect"])} for t in group_taints(group)
        ],
        # A numeric version: nodes change only when the template does, never by a floating $Latest.
        "launchTemplate": {
            "id": Ref(launch_template_id(group), "id"),
            "version": Concat(Ref(launch_template_id(group), "latestVersion")),
        },
        "tags": tags(fleet),
    }
    if group.capacity_type is not CapacityType.CAPACITY_BLOCK:
        args["instanceTypes"] = [group.instance_type]
    if group.reservation is not None:
        args["tags"] = {**args["tags"], TAG_RESERVED_INSTANCES: str(group.reservation.instance_count)}
    if group.warm_pool is not None:
        pool = group.warm_pool
        args["warmPoolConfig"] = {
            "minSize": pool.min_size,
            # minSize unless the spec asks for "max minus desired": the pool holds what warmPool.minSize says.
            "maxGroupPreparedCapacity": warm_pool.prepared_capacity(group),
            "poolState": pool.state.upper(),
            "reuseOnScaleIn": pool.reuse_on_scale_in,
        }
    if repair is not None:
        args["nodeRepairConfig"] = repair
    after = node_role_attachments(fleet) + (("addon-vpc-cni",) if fleet.cluster.mode == "Create" else ())
    if image_list(fleet, group) is not None:
        after += (image_list_id(group),)  # a booting node reads it
    # The autoscaler owns the desired size after creation; Pulumi must never scale a group back.
    return Resource(
        id=node_group_id(group),
        type="aws:eks/nodeGroup:NodeGroup",
        provider=AWS_PROVIDER,
        args=args,
        ignore_changes=("scalingConfig.desiredSize",),
        depends_on=after,
    )


# Checkov checks that are wrong for this object, with the reason (docs/policies-and-diff.md, "Checkov").
_CHECKOV_SKIPS = checkov.skip_annotations(
    {
        "CKV_K8S_8": (
            "a pause container has no endpoint or command to probe; the kubelet already restarts it if it exits"
        ),
        "CKV_K8S_9": "no Service selects the prepuller, so readiness has no consumer",
    }
)


def prepuller(fleet: Fleet, group: NodeGroup, namespace_id: str) -> Resource | None:
    """Keeps the group's images on nodes that join later (or lost them to garbage collection)."""
    images = prepulled_images(fleet, group)
    if not images:
        return None
    name = f"prepull-{group.name}"
    labels = {"app.kubernetes.io/name": "gpufleet-prepuller", LABEL_NODE_GROUP: group.name}
    init = [
        {
            "name": f"pull-{i}",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            # Only the pull matters; the container exits at once.
            "command": ["sh", "-c", "true"],
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
            "securityContext": restricted.CONTAINER,
        }
        for i, image in enumerate(images)
    ]
    obj = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        # Not awaited: an image-set change rolls one node at a time, and a wait would fail stage 1 on any group of
        # more than a few nodes.
        "metadata": {
            "name": name,
            "namespace": NS_SYSTEM,
            "labels": labels,
            "annotations": {**_CHECKOV_SKIPS, SKIP_AWAIT: "true"},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": restricted.POD,
                    "nodeSelector": {LABEL_NODE_GROUP: group.name},
                    "tolerations": tolerations_for(group_taints(group)),
                    "initContainers": init,
                    "containers": [
                        {
                            "name": "pause",
                            "image": PAUSE_IMAGE,
                            "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}},
                            "securityContext": restricted.CONTAINER,
                        }
                    ],
                    "automountServiceAccountToken": False,
                },
            },
        },
    }
    return k8s(obj, depends_on=(namespace_id,))


def with_tags(resource: Resource, extra: dict[str, str]) -> Resource:
    return replace(resource, args={**resource.args, "tags": {**resource.args["tags"], **extra}})


class ManagedNodeGroups:
    """provisioner ManagedNodeGroup (gpufleet.plan.builders.provisioners): an EKS managed node group from the
    group's launch template, scaled by the Cluster Autoscaler when cluster.autoscaler installs it."""

    provisioning = MANAGED_NODE_GROUP
    note: str | None = None

    def group_resources(
        self, ctx: BuildContext, group: NodeGroup, labels: dict[str, str], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        fleet = ctx.fleet
        scaled = scaled_by(fleet, group) == "ClusterAutoscaler"
        if scaled:
            labels = {**labels, **autoscaler.accelerator_label(group)}
        toml = bottlerocket_settings(group, later)
        listed = image_list(fleet, group)
        out = ([listed] if listed is not None else []) + launch_template(ctx, group, toml)
        repair = next((r for part in later if (r := part.node_repair(group)) is not None), None)
        node_group = managed_node_group(ctx, group, labels, repair)
        if scaled:
            node_group = with_tags(
                node_group,
                autoscaler.node_group_tags(
                    fleet, group, with_sharing=ctx.includes("sharing"), with_network=ctx.includes("network")
                ),
            )
        return [*out, node_group]

    def controller_resources(
        self, ctx: BuildContext, groups: Sequence[NodeGroup], later: Sequence[AtFoundation]
    ) -> list[Resource]:
        return []  # EKS runs the node groups; the Cluster Autoscaler is cluster.autoscaler's (stages/foundation.py)

    def provisioned_by(self, fleet: Fleet, group: NodeGroup) -> str:
        scaler = (
            "scaled by the Cluster Autoscaler"
            if scaled_by(fleet, group) == "ClusterAutoscaler"
            else "no autoscaler (cluster.autoscaler None)"
        )
        return f"EKS managed node group, {scaler}"

    def sizes(self, plan: RolloutPlan, group: NodeGroup) -> str:
        return f"{group.min_size}..{group.max_size}"

    def capacity(self, group: NodeGroup) -> str:
        return ""

    def warm(self, group: NodeGroup, warm: list[str]) -> str:
        pool = group.warm_pool
        if pool is not None:
            warm = [*warm, f"warm pool of {warm_pool.held(group, group.min_size)} ({pool.state})"]
        return "; ".join(warm) or "-"

    def spot_capacity(self, group: NodeGroup) -> str | None:
        return "Spot" if group.capacity_type is CapacityType.SPOT else None

    def access(self, fleet: Fleet) -> dict[str, str] | None:
        return None

    def before_deploy(self, fleet: Fleet) -> list[str]:
        return []


MANAGED_NODE_GROUPS = ManagedNodeGroups()
