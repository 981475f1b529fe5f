"""Who launches a node group's nodes and who scales them: what each `provisioner` is, as the rules and the plan both
read it.

Why, with sources: docs/karpenter.md, "Design notes", gpufleet/spec/provisioning.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from gpufleet.spec.fleet import Fleet, NodeGroup, Provisioner

Scaler = Literal["ClusterAutoscaler", "Karpenter"]
Repairer = Literal["EKS", "Karpenter"]


@dataclass(frozen=True, slots=True)
class Provisioning:
    name: Provisioner
    # The group's nodes are an Auto Scaling group's, from one launch template: one instance type and capacity type,
    # a warm pool, desiredSize, an update config, and minSize nodes that always run.
    auto_scaling_group: bool
    # Who adds nodes for pending pods when the provisioner does so itself; None: the Cluster Autoscaler does, when
    # cluster.autoscaler installs it.
    scales_itself: Scaler | None
    # Who replaces a node whose GPU fails (health.autoRepair).
    repairs: Repairer
    # The component key (gpufleet.facts.versions.COMPONENTS) of the controller that launches the nodes, if one is
    # installed with the fleet.
    controller: str | None


MANAGED_NODE_GROUP = Provisioning(
    name="ManagedNodeGroup", auto_scaling_group=True, scales_itself=None, repairs="EKS", controller=None
)
KARPENTER = Provisioning(
    name="Karpenter", auto_scaling_group=False, scales_itself="Karpenter", repairs="Karpenter", controller="karpenter"
)
PROVISIONING: Mapping[Provisioner, Provisioning] = {p.name: p for p in (MANAGED_NODE_GROUP, KARPENTER)}


def provisioning(group: NodeGroup) -> Provisioning:
    return PROVISIONING[group.provisioner]


def scaled_by(fleet: Fleet, group: NodeGroup) -> Scaler | None:
    """Who adds the group's nodes for pending pods: its provisioner (Karpenter), else the Cluster Autoscaler when
    cluster.autoscaler installs it, else nothing (the group runs what its sizes say)."""
    own = provisioning(group).scales_itself
    if own is not None:
        return own
    return "ClusterAutoscaler" if fleet.cluster.autoscaler == "Install" else None


def provisionings(fleet: Fleet) -> tuple[Provisioning, ...]:
    """The provisioners the fleet's groups use, in the order of their first group."""
    return tuple(PROVISIONING[p] for p in dict.fromkeys(g.provisioner for g in fleet.node_groups))
