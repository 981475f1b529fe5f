"""EKS access entries (stage 1): the platform admins and every team member, on the cluster gpufleet creates or on
the existing one.

Why, with sources: docs/tenancy-and-access.md, "Design notes", gpufleet/plan/builders/access_entries.py.
"""

from __future__ import annotations

from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER
from gpufleet.plan.parts import Ref, Resource
from gpufleet.spec import access
from gpufleet.spec.fleet import Fleet, Principal, Team
from gpufleet.spec.names import LABEL_TEAM, partition


def entry_id(principal: Principal, owner: str) -> str:
    return access.entry_id(principal.principal_arn, owner)


def _policy_arn(fleet: Fleet, policy: str) -> str:
    return f"arn:{partition(fleet.cluster.region)}:eks::aws:cluster-access-policy/{policy}"


def _entry(fleet: Fleet, principal: Principal, rid: str, groups: list[str], tags: dict[str, str]) -> Resource:
    args: dict[str, object] = {
        "clusterName": Ref(CLUSTER, "name"),
        "principalArn": principal.principal_arn,
        "type": "STANDARD",
        "tags": tags,
    }
    if groups:
        args["kubernetesGroups"] = groups
    return Resource(id=rid, type="aws:eks/accessEntry:AccessEntry", provider=AWS_PROVIDER, args=args)


def _association(fleet: Fleet, principal: Principal, entry: str, policy: str, scope: dict[str, object]) -> Resource:
    return Resource(
        id=access.association_id(entry, policy),
        type="aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        provider=AWS_PROVIDER,
        depends_on=(entry,),
        args={
            "clusterName": Ref(CLUSTER, "name"),
            "principalArn": principal.principal_arn,
            "policyArn": _policy_arn(fleet, policy),
            "accessScope": scope,
        },
    )


def admin_resources(fleet: Fleet, tags: dict[str, str]) -> list[Resource]:
    out: list[Resource] = []
    for principal in fleet.cluster.admins:
        rid = entry_id(principal, "admin")
        out += [
            _entry(fleet, principal, rid, [], tags),
            _association(fleet, principal, rid, access.CLUSTER_ADMIN_POLICY, {"type": "cluster"}),
        ]
    return out


def team_resources(fleet: Fleet, team: Team, tags: dict[str, str]) -> list[Resource]:
    out: list[Resource] = []
    for principal in team.members:
        rid = entry_id(principal, f"team-{team.name}")
        out += [
            _entry(fleet, principal, rid, [access.team_group(team.name)], {**tags, LABEL_TEAM: team.name}),
            _association(
                fleet, principal, rid, access.EDIT_POLICY, {"type": "namespace", "namespaces": [team.namespace]}
            ),
        ]
    return out


def access_entry_resources(fleet: Fleet, tags: dict[str, str]) -> list[Resource]:
    """Every access entry and policy association of the fleet: admins first, then teams in spec order."""
    out = admin_resources(fleet, tags)
    for team in fleet.teams:
        out += team_resources(fleet, team, tags)
    return out


def admin_associations(fleet: Fleet) -> tuple[str, ...]:
    """What the Kubernetes provider waits for: the admins' cluster-admin associations (a created cluster has no
    implicit creator admin, so the deploying admin can reach the API only after them)."""
    return tuple(access.association_id(entry_id(p, "admin"), access.CLUSTER_ADMIN_POLICY) for p in fleet.cluster.admins)
