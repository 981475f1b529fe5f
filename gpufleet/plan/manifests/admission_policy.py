"""The ValidatingAdmissionPolicies of the admission stage that every fleet renders, and the bindings of all of them.

Why, with sources: docs/admission-and-sharing.md, "Design notes", gpufleet/plan/manifests/admission_policy.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpufleet.plan.manifests import admission_data, kueue
from gpufleet.spec.names import LABEL_MANAGED_BY

API = "admissionregistration.k8s.io/v1"
QUEUE_NAME_POLICY = "gpufleet-require-queue-name"
VISIBLE_DEVICES_POLICY = "gpufleet-visible-devices-need-gpu"
PARENT_CONDITION = "not-created-by-a-kueue-managed-parent"

# Kueue integrations whose objects own Jobs or JobSets that Kueue does not admit separately (a JobSet's Jobs, a
# TrainJob's JobSet). A LeaderWorkerSet owns StatefulSets, which the policy does not match.
PARENT_FRAMEWORKS = (kueue.JOBSET_FRAMEWORK, kueue.TRAINJOB_FRAMEWORK)


def queue_name_policy(installed: Iterable[str]) -> dict[str, Any]:
    """`installed`: the Kueue integrations of the custom job kinds the fleet installs (kueue.installed_frameworks)."""
    installed = tuple(installed)
    kinds = [kueue.RESOURCES[f] for f in installed]
    parents = [kueue.RESOURCES[f][2] for f in installed if f in PARENT_FRAMEWORKS]
    doc = admission_data.policy(
        QUEUE_NAME_POLICY,
        {
            "jobKindRules": [
                {"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": [plural]}
                for group, plural, _ in kinds
            ],
            "jobKinds": _listed(["Jobs"] + [f"{kind}s" for _, _, kind in kinds]),
            "managedParents": parents,
        },
    )
    if not parents:  # the condition would exempt nothing
        doc["spec"]["matchConditions"] = [c for c in doc["spec"]["matchConditions"] if c["name"] != PARENT_CONDITION]
    return doc


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def visible_devices_policy() -> dict[str, Any]:
    return admission_data.policy(VISIBLE_DEVICES_POLICY)


def binding(policy: str, namespace_selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": namespace_selector},
        },
    }


def namespaces_in(names: Iterable[str]) -> dict[str, Any]:
    return {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(set(names))}]
    }


def namespaces_not_in(names: Iterable[str]) -> dict[str, Any]:
    return {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": sorted(set(names))}]
    }
