"""FSx for Lustre (stage 6) as plain data: the FSx CSI driver's Helm values, its controller's IAM policy, and the
static PersistentVolume and PersistentVolumeClaim that give each team namespace the file system.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/manifests/fsx.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.plan.parts import Concat, Ref, json_document
from gpufleet.spec.fleet import Fleet, Team
from gpufleet.spec.names import LABEL_MANAGED_BY

DRIVER = "fsx.csi.aws.com"  # templates/csidriver.yaml metadata.name
RELEASE = "aws-fsx-csi-driver"
# The namespace the driver's docs install it in (docs/install.md `helm upgrade --install ...
NAMESPACE = "kube-system"
CONTROLLER_SERVICE_ACCOUNT = "fsx-csi-controller-sa"  # values.yaml controller.serviceAccount.name
NODE_DAEMONSET = "fsx-csi-node"  # templates/node-daemonset.yaml metadata.name
CLAIM = "fsx-lustre"
# The PV's mount options: upstream's static example mounts with flock (cluster-wide POSIX locks, which checkpoint
# writers and data loaders that lock files rely on; Lustre refuses lock calls without it).
MOUNT_OPTIONS = ("flock",)
# What the controller may do.
# Why: docs/network-and-storage.md, "Design notes", fsx.DESCRIBE_ACTIONS.
DESCRIBE_ACTIONS = ("fsx:DescribeFileSystems",)
UPDATE_ACTIONS = ("fsx:UpdateFileSystem",)


def persistent_volume_name(team: Team) -> str:
    return f"{CLAIM}-{team.name}"


def values(fleet: Fleet) -> dict[str, Any]:
    """The chart's values (every key is one of values.yaml at chart 1.17.0).

    Why: docs/network-and-storage.md, "Design notes", fsx.values."""
    return {
        "controller": {
            "region": fleet.cluster.region,
            "serviceAccount": {"create": True, "name": CONTROLLER_SERVICE_ACCOUNT},
        },
        "node": {"tolerateAllTaints": True},
    }


def controller_policy(file_system_arn: Ref) -> str | Concat:
    return json_document(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "DescribeFileSystems", "Effect": "Allow", "Action": list(DESCRIBE_ACTIONS), "Resource": "*"},
                {
                    "Sid": "ExpandTheFleetsFileSystem",
                    "Effect": "Allow",
                    "Action": list(UPDATE_ACTIONS),
                    "Resource": file_system_arn,
                },
            ],
        }
    )


def persistent_volume(team: Team, capacity_gib: int, file_system: str) -> dict[str, Any]:
    """A static PV for one team's claim: the whole file system, reserved for the team's PVC by claimRef."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": persistent_volume_name(team), "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "capacity": {"storage": f"{capacity_gib}Gi"},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "mountOptions": list(MOUNT_OPTIONS),
            "persistentVolumeReclaimPolicy": "Retain",
            # No class: neither the default StorageClass nor a provisioner may take the claim.
            "storageClassName": "",
            "claimRef": {"namespace": team.namespace, "name": CLAIM},
            "csi": {
                "driver": DRIVER,
                "volumeHandle": Ref(file_system, "id"),
                "volumeAttributes": {
                    "dnsname": Ref(file_system, "dnsName"),
                    "mountname": Ref(file_system, "mountName"),
                },
            },
        },
    }


def persistent_volume_claim(team: Team, capacity_gib: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": CLAIM, "namespace": team.namespace, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": persistent_volume_name(team),
            "resources": {"requests": {"storage": f"{capacity_gib}Gi"}},
        },
    }
