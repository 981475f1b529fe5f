"""Headroom: whole GPU nodes kept free for serving by placeholder pods, the replacement for a warm pool where the
group has none (Karpenter groups, or a managed group whose serving should land on a running node).

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/manifests/headroom.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.plan.manifests import checkov, restricted, sharing
from gpufleet.spec.fleet import NodeGroup, SharingStrategy
from gpufleet.spec.names import (
    HEADROOM_PRIORITY,
    HEADROOM_PRIORITY_CLASS,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    NS_SYSTEM,
    SKIP_AWAIT,
    group_taints,
    tolerations_for,
)

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
APP = "gpufleet-headroom"
_CHECKOV_SKIPS = checkov.skip_annotations(
    {
        "CKV_K8S_8": "a pause container has no endpoint or command to probe; the kubelet restarts it if it exits",
        "CKV_K8S_9": "no Service selects the placeholders, so readiness has no consumer",
    }
)


def idle_nodes(group: NodeGroup) -> int:
    """The nodes a group runs with no work on it: its minSize, or more where the placeholders hold more (the
    autoscaler starts a node for each placeholder that finds none)."""
    return max(group.min_size, group.headroom.nodes if group.headroom else 0)


def deployment_name(group: NodeGroup) -> str:
    return f"headroom-{group.name}"


def priority_class() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HEADROOM_PRIORITY_CLASS, "labels": dict(LABEL_MANAGED_BY)},
        "value": HEADROOM_PRIORITY,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": (
            "gpufleet headroom placeholders: preempted by any pod of priority above -10 that may preempt; they never"
            " preempt"
        ),
    }


def held_devices(group: NodeGroup, *, with_sharing: bool) -> dict[str, int]:
    """The devices one placeholder holds: everything one node of the group advertises."""
    return sharing.advertised(group, with_sharing=with_sharing)


def _containers(group: NodeGroup, *, with_sharing: bool) -> list[dict[str, Any]]:
    devices = held_devices(group, with_sharing=with_sharing)
    one_each = with_sharing and group.sharing.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS)
    per_container = (
        [{resource: 1} for resource, count in devices.items() for _ in range(count)] if one_each else [devices]
    )
    return [
        {
            "name": "pause" if len(per_container) == 1 else f"pause-{i}",
            "image": PAUSE_IMAGE,
            "resources": {
                "requests": {"cpu": "1m", "memory": "8Mi", **held},
                "limits": {"memory": "16Mi", **held},
            },
            "securityContext": restricted.CONTAINER,
        }
        for i, held in enumerate(per_container)
    ]


def placeholder_deployment(group: NodeGroup, *, with_sharing: bool) -> dict[str, Any]:
    """`headroom.nodes` placeholder pods of one group, each holding a whole node (see the module docstring)."""
    assert group.headroom is not None
    labels = {"app.kubernetes.io/name": APP, LABEL_NODE_GROUP: group.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # Not awaited: the placeholders are Running only once the autoscaler has started their nodes (minutes for a
        # GPU node), and pulumi-kubernetes would otherwise wait for the rollout (provider/pkg/await/deployment.go).
        "metadata": {
            "name": deployment_name(group),
            "namespace": NS_SYSTEM,
            "labels": {**LABEL_MANAGED_BY, **labels},
            "annotations": {**_CHECKOV_SKIPS, SKIP_AWAIT: "true"},
        },
        "spec": {
            "replicas": group.headroom.nodes,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": HEADROOM_PRIORITY_CLASS,
                    "terminationGracePeriodSeconds": 0,
                    "securityContext": restricted.POD,
                    "nodeSelector": {LABEL_NODE_GROUP: group.name},
                    "tolerations": tolerations_for(group_taints(group)),
                    "containers": _containers(group, with_sharing=with_sharing),
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                },
            },
        },
    }
