"""`gpufleet-serving-readiness`: a serving workload that lands on an Inference node group has a readiness probe on
every container that requests GPUs (docs/inference.md "Readiness that means ready"), as a ValidatingAdmissionPolicy
bound to the team namespaces in the mode the spec says (admission.servingReadinessProbe, teams[].servingReadinessProbe):
Deny refuses the request, Warn admits it with a warning to the client and an audit annotation, Off leaves the
namespace out of both bindings.

Why, with sources: docs/inference.md, "Design notes", gpufleet/plan/manifests/readiness_policy.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.plan.manifests import admission_data
from gpufleet.plan.manifests.admission_policy import API
from gpufleet.spec.names import LABEL_MANAGED_BY

POLICY = "gpufleet-serving-readiness"
MODES = ("Deny", "Warn", "Off")
# validationActions per mode (admissionregistration/v1 ValidationAction): Warn also writes an audit annotation.
ACTIONS = {"Deny": ("Deny",), "Warn": ("Warn", "Audit")}


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceTargets:
    """What places a pod template on an Inference group (gpufleet.plan.stages.admission computes it)."""

    groups: tuple[str, ...]  # the Inference node groups
    taints: tuple[Mapping[str, str], ...]  # taints (key, value, effect) only Inference groups carry
    namespaces: tuple[str, ...]  # team namespaces whose every quota is on an Inference group


def policy(targets: InferenceTargets) -> dict[str, Any]:
    return admission_data.policy(
        POLICY,
        {
            "inferenceGroups": sorted(targets.groups),
            "inferenceTaints": [dict(t) for t in targets.taints],
            "inferenceOnlyNamespaces": sorted(targets.namespaces),
        },
    )


def bindings(modes: Mapping[str, str]) -> list[dict[str, Any]]:
    """One binding per mode that some team namespace has (`modes`: namespace -> Deny | Warn | Off)."""
    out = []
    for mode, actions in ACTIONS.items():
        names = sorted(ns for ns, m in modes.items() if m == mode)
        if not names:
            continue
        out.append(
            {
                "apiVersion": API,
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": f"{POLICY}-{mode.lower()}", "labels": dict(LABEL_MANAGED_BY)},
                "spec": {
                    "policyName": POLICY,
                    "validationActions": list(actions),
                    "matchResources": {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": names}
                            ]
                        }
                    },
                },
            }
        )
    return out


def exclusive_taints(
    inference: Iterable[Sequence[Mapping[str, str]]], others: Iterable[Sequence[Mapping[str, str]]]
) -> tuple[dict[str, str], ...]:
    """The taints some Inference group carries and no other group does, in first-seen order."""
    other = {(t["key"], t.get("value", ""), t["effect"]) for taints in others for t in taints}
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for taints in inference:
        for t in taints:
            key = (t["key"], t.get("value", ""), t["effect"])
            if key not in other:
                seen.setdefault(key, {"key": key[0], "value": key[1], "effect": key[2]})
    return tuple(seen.values())
