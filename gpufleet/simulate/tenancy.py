"""The tenant admission policies (gpufleet.plan.manifests.tenant_policies) as explain sees them: which of a workload's
fields the API server's ValidatingAdmissionPolicies in a team namespace refuse, after authorization, before Kueue.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/tenancy.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpufleet.plan.manifests import tenant_policies as tp
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.workload import Workload
from gpufleet.spec import defaults
from gpufleet.spec.names import LABEL_PRIORITY_CLASS


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantPolicies:
    rendered: frozenset[str]  # the tenant policies the plan renders
    priorities: Mapping[str, tuple[str, ...]]  # team namespace -> classes its workloads may name


def from_plan(plan: RolloutPlan) -> TenantPolicies:
    names = {
        obj["metadata"]["name"]
        for stage in plan.included()
        for res in stage.content.resources
        if (obj := res.args.get("object")) and obj.get("kind") == "ValidatingAdmissionPolicy"
    }
    fleet = plan.fleet
    return TenantPolicies(
        rendered=frozenset(names & set(tp.POLICIES)),
        priorities={t.namespace: defaults.team_priorities(fleet, t) for t in fleet.teams},
    )


def _denied(policy: str, message: str) -> str:
    return f"denied by ValidatingAdmissionPolicy {policy}: {message}"


def refusal(policies: TenantPolicies, wl: Workload, *, team_member: bool) -> tuple[str, str] | None:
    """(message, fix) of the first tenant policy that refuses the workload's creation; `team_member`: the submitter
    is in a team's group (explain --as a member's ARN)."""
    if wl.namespace not in policies.priorities:
        return None
    if team_member and tp.DAEMONSET_POLICY in policies.rendered and wl.kind == "DaemonSet":
        return (
            _denied(tp.DAEMONSET_POLICY, tp.daemonset_policy()["spec"]["validations"][0]["message"]),
            "run the per-node work as a Job or JobSet through the team's queue, or ask a cluster admin",
        )
    if team_member and tp.OWNER_POLICY in policies.rendered:
        claimed = [
            f"{kind} {name}"
            for api, kind, name in wl.controllers
            if (api.split("/")[0] if "/" in api else "", kind) in tp.CLAIMED_OWNERS
        ]
        if claimed:
            return (
                _denied(tp.OWNER_POLICY, f"{wl.kind} {wl.name} names {', '.join(claimed)}{tp.CLAIM_REFUSED}"),
                "remove the controller ownerReference and submit the workload (or its parent) through the team's queue",
            )
    if tp.PRIORITY_POLICY in policies.rendered:
        allowed = policies.priorities[wl.namespace]
        named = [wl.labels.get(LABEL_PRIORITY_CLASS, "")] + [
            ps.pod.raw.get("priorityClassName") or "" for ps in wl.pod_sets
        ]
        wrong = [str(c) for c in dict.fromkeys(named) if c and c not in allowed]
        if wrong:
            field = (
                f"the label {LABEL_PRIORITY_CLASS}: {wrong[0]}"
                if wrong[0] == wl.labels.get(LABEL_PRIORITY_CLASS)
                else f"priorityClassName {wrong[0]}"
            )
            return (
                _denied(
                    tp.PRIORITY_POLICY,
                    f"{field} names a priority class namespace {wl.namespace} may not use; it may use:"
                    f" {', '.join(allowed) or 'none'} (teams[].priorities)",
                ),
                f"use one of {', '.join(allowed)}" if allowed else "name no priority class",
            )
    return None
