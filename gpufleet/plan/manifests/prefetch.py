"""Weight prefetch (storage stage, teams[].prefetch): per team and Inference group, a DaemonSet `prefetch-<group>` in
the team's namespace that mounts the team's claim s3-<group> on every node of the group and reads the listed paths
into the node's Mountpoint cache (gpufleet/data/prefetch/prefetch.py), so that a new replica on a running node reads
its weights from the node's NVMe instead of S3.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/plan/manifests/prefetch.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.base import package_data
from gpufleet.plan.manifests import checkov, restricted
from gpufleet.plan.manifests import mountpoint as mp
from gpufleet.plan.manifests import storage as st
from gpufleet.spec import defaults, images
from gpufleet.spec.fleet import Fleet, NodeGroup, Prefetch, Team
from gpufleet.spec.names import (
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    LABEL_QUEUE_NAME,
    LABEL_TEAM,
    SKIP_AWAIT,
    group_taints,
    tolerations_for,
)

APP = "gpufleet-prefetch"
SCRIPT = "prefetch.py"
CONFIGMAP = "gpufleet-prefetch"
MOUNT = "/weights"
SCRIPTS = "/opt/gpufleet"
# How often a pod looks for new or changed files (a new model version) once it has read everything.
INTERVAL_SECONDS = 600
# The Mountpoint CSI driver version the pods' Mountpoint Pods were made by (versions.mountpointS3Csi): a bump changes
# the pod template, so the DaemonSet rolls (gpufleet.simulate.volumes reads it back as the keeper's driver version).
DRIVER_ANNOTATION = "gpufleet.io/mountpoint-csi-driver-version"
_CHECKOV_SKIPS = checkov.skip_annotations(
    {
        "CKV_K8S_10": "requests nothing so that Kueue charges nothing to the team's quota; the reads are kernel work",
        "CKV_K8S_11": "BestEffort on purpose: a CPU limit would make the pod Burstable and need requests",
        "CKV_K8S_12": "requests nothing so that Kueue charges nothing to the team's quota; pages are dropped as read",
        "CKV_K8S_13": "BestEffort on purpose: a memory limit would make the pod Burstable and need requests",
        "CKV_K8S_8": "the loop has no endpoint; the kubelet restarts it if it exits, and its mount is what matters",
    }
)


def script() -> str:
    return package_data.text(f"data/prefetch/{SCRIPT}")


def daemonset_name(group: NodeGroup) -> str:
    return f"prefetch-{group.name}"


def entries(fleet: Fleet) -> list[tuple[Team, NodeGroup, Prefetch]]:
    """(team, group, entry) for every teams[].prefetch[] whose claim exists (checkpoints.mountpoint)."""
    if mp.enabled(fleet) is None:
        return []
    return [(team, fleet.node_group(p.node_group), p) for team in fleet.teams for p in team.prefetch]


def configmap(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIGMAP,
            "namespace": team.namespace,
            "labels": {**LABEL_MANAGED_BY, "app.kubernetes.io/name": APP},
        },
        "data": {SCRIPT: script()},
    }


def priority(fleet: Fleet, team: Team) -> str | None:
    """The team's highest-valued priority class, or None where it may name none (the cluster default, 0)."""
    allowed = set(defaults.team_priorities(fleet, team))
    classes = [p for p in fleet.admission.priorities if p.name in allowed]
    return max(classes, key=lambda p: p.value).name if classes else None


def daemonset(fleet: Fleet, team: Team, group: NodeGroup, entry: Prefetch) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": APP, LABEL_NODE_GROUP: group.name}
    ranked = priority(fleet, team)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": daemonset_name(group),
            "namespace": team.namespace,
            "labels": {**LABEL_MANAGED_BY, **labels, LABEL_TEAM: team.name},
            # Not awaited: a group at zero nodes has no pod to be ready, and pulumi-kubernetes would wait for one.
            "annotations": {**_CHECKOV_SKIPS, SKIP_AWAIT: "true"},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                # The team's queue by name (Kueue would default to the namespace's `default` LocalQueue anyway).
                "metadata": {
                    "labels": {**labels, LABEL_QUEUE_NAME: team.name},
                    "annotations": {DRIVER_ANNOTATION: str(fleet.versions.mountpoint_s3_csi)},
                },
                "spec": {
                    "serviceAccountName": st.CHECKPOINT_SERVICE_ACCOUNT,
                    # The Mountpoint Pod gets the team's credentials from the kubelet's token request for the
                    # CSI driver (templates/csidriver.yaml), not from this pod's token.
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    **({"priorityClassName": ranked} if ranked else {}),
                    "terminationGracePeriodSeconds": 5,
                    "securityContext": restricted.POD,
                    "nodeSelector": {LABEL_NODE_GROUP: group.name},
                    "tolerations": tolerations_for(group_taints(group)),
                    "containers": [
                        {
                            "name": "prefetch",
                            "image": images.reference(fleet, "python"),
                            "command": ["python", "-u", f"{SCRIPTS}/{SCRIPT}", MOUNT, *entry.paths],
                            "env": [{"name": "PREFETCH_INTERVAL_SECONDS", "value": str(INTERVAL_SECONDS)}],
                            "readinessProbe": {
                                "exec": {"command": ["python", "-c", f"import os; os.listdir({MOUNT!r})"]},
                                "periodSeconds": 30,
                                "timeoutSeconds": 10,
                            },
                            "securityContext": restricted.CONTAINER,
                            "volumeMounts": [
                                {"name": "weights", "mountPath": MOUNT, "readOnly": True},
                                {"name": "scripts", "mountPath": SCRIPTS, "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "weights",
                            "persistentVolumeClaim": {"claimName": mp.claim_name(group), "readOnly": True},
                        },
                        {"name": "scripts", "configMap": {"name": CONFIGMAP}},
                    ],
                },
            },
        },
    }
