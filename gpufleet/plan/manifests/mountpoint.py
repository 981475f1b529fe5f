"""The Mountpoint for Amazon S3 CSI driver (storage stage, checkpoints.mountpoint) as plain data: the chart's values
and, per team and node group of the team's quotas, a static PersistentVolume on the team's prefix of the checkpoint
bucket and the PersistentVolumeClaim `s3-<group>` bound to it in the team's namespace.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/manifests/mountpoint.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.facts import catalog
from gpufleet.plan.manifests import storage as st
from gpufleet.spec.fleet import Checkpoints, Fleet, Mountpoint, NodeGroup, Team, WorkloadClass
from gpufleet.spec.names import LABEL_MANAGED_BY, LABEL_NODE_GROUP

RELEASE = "aws-mountpoint-s3-csi-driver"
NAMESPACE = "kube-system"  # the namespace the driver's docs install it in (docs/INSTALL.md)
DRIVER = "s3.csi.aws.com"  # templates/csidriver.yaml
# The driver's node DaemonSet (templates/node.yaml): it tolerates every taint (node.tolerateAllTaints, true by
# default), so it runs on every GPU group.
NODE_DAEMONSET = "s3-csi-node"
# Required by Kubernetes, ignored by the driver (docs/CONFIGURATION.md: "Value is ignored but required").
CAPACITY = "1Ti"
# Where Mountpoint throughput is not in the catalog: Mountpoint's own fallback (cli.rs DEFAULT_TARGET_THROUGHPUT_GBPS).
DEFAULT_THROUGHPUT_GBPS = 10


def enabled(fleet: Fleet) -> Mountpoint | None:
    cp = fleet.checkpoints
    return cp.mountpoint if cp is not None else None


def values() -> dict[str, Any]:
    """Values for chart aws-mountpoint-s3-csi-driver 2.7.0 (charts/aws-mountpoint-s3-csi-driver/values.yaml; the keys
    are checked against it by the golden trees' test).

    Why: docs/network-and-storage.md, "Design notes", mountpoint.values."""
    return {
        "node": {"tolerateAllTaints": True},
        "supportLegacySystemDMounts": False,
    }


def throughput_gbps(group: NodeGroup) -> int:
    info = catalog.lookup(group.instance_type)
    return info.network_gbps if info is not None else DEFAULT_THROUGHPUT_GBPS


def read_only(group: NodeGroup) -> bool:
    """Inference groups read weights, they never write: their volumes are ReadOnlyMany."""
    return group.workload_class is WorkloadClass.INFERENCE


def cache_gb(fleet: Fleet, mp: Mountpoint, group: NodeGroup) -> int | None:
    """The local cache's size limit in GB on a RAID0 group, else None (no cache: the emptyDir would be on the root
    EBS volume).

    Why: docs/network-and-storage.md, "Design notes", mountpoint.cache_gb."""
    info = catalog.lookup(group.instance_type)
    if group.local_storage != "RAID0" or info is None or not info.local_nvme_gib:
        return None
    teams = sum(1 for t in fleet.teams if any(q.node_group == group.name for q in t.quotas))
    return int(info.local_nvme_gib * mp.cache_fraction / max(teams, 1))


def claim_name(group: NodeGroup) -> str:
    return f"s3-{group.name}"


def volume_name(team: Team, group: NodeGroup) -> str:
    return f"{team.name}-s3-{group.name}"


def team_groups(fleet: Fleet, team: Team) -> list[NodeGroup]:
    """The node groups the team has quota on, in spec order."""
    names = {q.node_group for q in team.quotas}
    return [g for g in fleet.node_groups if g.name in names]


def mount_options(fleet: Fleet, mp: Mountpoint, team: Team, group: NodeGroup) -> list[str]:
    options = [
        f"prefix {st.team_prefix(team)}",
        f"region {fleet.cluster.region}",
        f"maximum-throughput-gbps {throughput_gbps(group)}",
        f"uid {mp.uid}",
        f"gid {mp.gid}",
        # Other users than the Mountpoint Pod's own (the container's) may use the mount (FUSE allow_other).
        "allow-other",
    ]
    if read_only(group):
        options.append("read-only")
    else:
        # Checkpoint rotation deletes old shards (a delete marker: the bucket is versioned).
        options.append("allow-delete")
    return options


def persistent_volume(fleet: Fleet, cp: Checkpoints, mp: Mountpoint, team: Team, group: NodeGroup) -> dict[str, Any]:
    attributes: dict[str, str] = {"bucketName": cp.bucket, "authenticationSource": "pod"}
    cache = cache_gb(fleet, mp, group)
    if cache is not None:
        attributes |= {"cache": "emptyDir", "cacheEmptyDirSizeLimit": f"{cache}G"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume_name(team, group), "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "capacity": {"storage": CAPACITY},
            "accessModes": ["ReadOnlyMany" if read_only(group) else "ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": team.namespace, "name": claim_name(group)},
            "mountOptions": mount_options(fleet, mp, team, group),
            # The volume's throughput and cache are the group's: only its nodes may mount it (the scheduler's
            # VolumeBinding filter holds every pod of the claim to them).
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": LABEL_NODE_GROUP, "operator": "In", "values": [group.name]}]}
                    ]
                }
            },
            "csi": {
                "driver": DRIVER,
                "volumeHandle": volume_name(team, group),  # unique: the driver processes a handle once
                "volumeAttributes": attributes,
            },
        },
    }


def persistent_volume_claim(team: Team, group: NodeGroup) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": claim_name(group), "namespace": team.namespace, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "accessModes": ["ReadOnlyMany" if read_only(group) else "ReadWriteMany"],
            "storageClassName": "",
            "resources": {"requests": {"storage": CAPACITY}},
            "volumeName": f"{team.name}-s3-{group.name}",
        },
    }


def volumes(fleet: Fleet) -> list[tuple[Team, NodeGroup, dict[str, Any], dict[str, Any]]]:
    """(team, group, PV, PVC) for every team and node group of its quotas."""
    mp = enabled(fleet)
    cp = fleet.checkpoints
    if mp is None or cp is None:
        return []
    return [
        (team, group, persistent_volume(fleet, cp, mp, team, group), persistent_volume_claim(team, group))
        for team in fleet.teams
        for group in team_groups(fleet, team)
    ]
