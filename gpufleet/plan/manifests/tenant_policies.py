"""The ValidatingAdmissionPolicies that keep one team from stepping on another (docs/tenancy-and-access.md), each
bound to the team namespaces.

Why, with sources: docs/tenancy-and-access.md, "Design notes", gpufleet/plan/manifests/tenant_policies.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpufleet.plan.manifests import admission_data

PRIORITY_POLICY = "gpufleet-team-priorities"
OWNED_POLICY = "gpufleet-protect-owned-objects"
NETWORK_POLICY_POLICY = "gpufleet-team-network-policies"
OWNER_POLICY = "gpufleet-no-owner-spoofing"
DAEMONSET_POLICY = "gpufleet-team-no-daemonsets"
SERVICE_POLICY = "gpufleet-team-service-exposure"
POLICIES = (PRIORITY_POLICY, OWNED_POLICY, NETWORK_POLICY_POLICY, OWNER_POLICY, DAEMONSET_POLICY, SERVICE_POLICY)

# Service types every team may create: no port on the nodes, nothing reachable from outside the cluster.
INTERNAL_SERVICE_TYPES = ("ClusterIP", "ExternalName")

# Controller owners a team member may not claim (policy 4), as (apiVersion group, kind): every Kueue v0.19.2
# integration's kind (pkg/controller/jobs/*: the GVKs their RegisterIntegration calls register; isKnownOwner in
# pkg/controller/jobframework integrationmanager.go walks through all registered ones, enabled or not), the ReplicaSet
# Kueue walks through, and the DaemonSet whose pods gpufleet-serving-readiness judges at the parent.
CLAIMED_OWNERS = (
    ("", "Pod"),
    ("batch", "Job"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("jobset.x-k8s.io", "JobSet"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    ("trainer.kubeflow.org", "TrainJob"),
    ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "MPIJob"),
    ("kubeflow.org", "TFJob"),
    ("kubeflow.org", "PaddleJob"),
    ("kubeflow.org", "XGBoostJob"),
    ("kubeflow.org", "JAXJob"),
    ("ray.io", "RayCluster"),
    ("ray.io", "RayJob"),
    ("ray.io", "RayService"),
    ("workload.codeflare.dev", "AppWrapper"),
    ("sparkoperator.k8s.io", "SparkApplication"),
)
# The end of policy 4's refusal, after "<kind> <name> names <owner kind> <owner name>" (explain says the same).
CLAIM_REFUSED = (
    " as its controller: only the controller of that kind creates such children, and Kueue would count this one as"
    " part of an admitted workload, outside the quota of the team. Remove the controller ownerReference and submit"
    " the workload through the queue of the team"
)


def priority_policy(allowed: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """`allowed`: team namespace -> the priority classes its workloads may name
    (gpufleet.spec.defaults.team_priorities)."""
    table = {ns: list(names) for ns, names in allowed.items()}
    return admission_data.policy(PRIORITY_POLICY, {"classesByNamespace": table})


def owned_objects_policy() -> dict[str, Any]:
    return admission_data.policy(OWNED_POLICY)


def team_network_policy_policy() -> dict[str, Any]:
    return admission_data.policy(NETWORK_POLICY_POLICY)


def owner_spoofing_policy() -> dict[str, Any]:
    return admission_data.policy(
        OWNER_POLICY,
        {
            "claimedOwners": [{"group": group, "kind": kind} for group, kind in CLAIMED_OWNERS],
            "claimRefused": CLAIM_REFUSED,
        },
    )


def daemonset_policy() -> dict[str, Any]:
    return admission_data.policy(DAEMONSET_POLICY)


def service_policy(allowed: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """`allowed`: team namespace -> the exposing Service types (teams[].serviceTypes) its members may create."""
    table = {ns: [*INTERNAL_SERVICE_TYPES, *types] for ns, types in allowed.items()}
    return admission_data.policy(SERVICE_POLICY, {"typesByNamespace": table})
