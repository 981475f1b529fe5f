"""Rules on who may reach the cluster: its admins and the teams' members, one access entry per principal, and the
resource ids those entries get.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue, Path
from gpufleet.rules.registry import rule
from gpufleet.spec import access, names
from gpufleet.spec.fleet import Fleet, Principal


@rule("access")
def _access(fleet: Fleet) -> Iterator[Issue]:
    cluster = fleet.cluster
    if cluster.mode == "Create" and not cluster.admins:
        yield Issue(
            path=("cluster",),
            message=(
                "mode Create needs cluster.admins: the cluster is created without an implicit admin"
                " (bootstrapClusterCreatorAdminPermissions false), so nobody could deploy into it"
            ),
            hint='add cluster.admins: [{principalArn: "arn:aws:iam::<account>:role/<the role that runs pulumi up>"}]',
        )
    if fleet.checkpoints is not None and fleet.checkpoints.encryption == "CustomerManagedKey" and not cluster.admins:
        yield Issue(
            path=("checkpoints", "encryption"),
            message=(
                "encryption CustomerManagedKey needs cluster.admins: they administer the checkpoint key, and nobody"
                " else may"
            ),
            hint="add cluster.admins, or use encryption S3Managed",
        )
    partition = names.partition(cluster.region)
    owners: list[tuple[Path, list[str] | tuple[str, ...], str]] = [
        (("cluster", "admins"), [p.principal_arn for p in cluster.admins], "cluster.admins")
    ]
    owners += [
        (("teams", i, "members"), [p.principal_arn for p in team.members], f"team {team.name}")
        for i, team in enumerate(fleet.teams)
    ]
    seen: dict[str, str] = {}
    for path, arns, owner in owners:
        for j, arn in enumerate(arns):
            where = path + (j, "principalArn")
            if access.arn_partition(arn) != partition:
                yield Issue(
                    path=where,
                    message=(
                        f"{arn} is in partition {access.arn_partition(arn)}, the cluster (region {cluster.region}) in"
                        f" {partition}"
                    ),
                    hint=f"use the principal's arn:{partition}:iam::... ARN",
                )
            if arn in seen:
                yield Issue(
                    path=where,
                    message=f"{arn} is already listed in {seen[arn]}: EKS allows one access entry per principal",
                    hint=(
                        "give each principal one role in the spec (a person in two teams assumes a different role for"
                        " each)"
                    ),
                )
            seen.setdefault(arn, owner)


@rule("resource-ids")
def _resource_ids(fleet: Fleet) -> Iterator[Issue]:
    """Two things of the spec must not get one logical resource id (the plan asserts it: synth would exit 3).

    Why: docs/tenancy-and-access.md, "Design notes", access._resource_ids."""
    for i, group in enumerate(fleet.node_groups):
        if group.name == names.SYSTEM_GROUP:
            yield Issue(
                path=("nodeGroups", i, "name"),
                message=(
                    f'"{group.name}" is the system node group\'s: its nodes carry {names.LABEL_NODE_GROUP}:'
                    f" {names.SYSTEM_GROUP} and its resource id is {names.SYSTEM_NODE_GROUP}"
                ),
                hint="name the GPU node group otherwise, e.g. after its instance type",
            )
    seen: dict[str, tuple[str, str]] = {names.SYSTEM_NODE_GROUP: ("", "the system node group")}
    claims: list[tuple[Path, str, str, str]] = []  # (where, what owns the id, the id, what claims it)
    for i, group in enumerate(fleet.node_groups):
        if group.name == names.SYSTEM_GROUP:
            continue
        for rid, part in (
            (names.node_group_id(group), "node group"),
            (names.launch_template_id(group), "launch template"),
            (names.placement_group_id(group), "placement group"),
        ):
            claims.append((("nodeGroups", i, "name"), group.name, rid, f"the {part} of node group {group.name}"))
    members: list[tuple[Path, str, tuple[Principal, ...], str]] = [
        (("cluster", "admins"), "admin", fleet.cluster.admins, access.CLUSTER_ADMIN_POLICY)
    ]
    members += [
        (("teams", i, "members"), f"team-{team.name}", team.members, access.EDIT_POLICY)
        for i, team in enumerate(fleet.teams)
    ]
    for path, owner, principals, policy in members:
        for j, principal in enumerate(principals):
            arn = principal.principal_arn
            entry = access.entry_id(arn, owner)
            where: Path = (*path, j, "principalArn")
            claims.append((where, arn, entry, f"the access entry of {arn}"))
            claims.append((where, arn, access.association_id(entry, policy), f"the {policy} association of {arn}"))
    reported: set[Path] = set()
    for where, owner, rid, what in claims:
        # the same name twice is reported as a duplicate already; one collision is enough to tell of each name
        if rid in seen and seen[rid][0] != owner and where not in reported:
            reported.add(where)
            yield Issue(
                path=where,
                message=f'{what} gets the resource id "{rid}", as {seen[rid][1]} does',
                hint=(
                    "a resource id keeps only the lowercased letters, digits and dashes of a name: rename one of the"
                    " two, or list one principal in its place"
                ),
            )
        seen.setdefault(rid, (owner, what))
