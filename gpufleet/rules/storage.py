"""Rules on storage: FSx for Lustre, the checkpoint jobs and the prefetch of serving weights into Mountpoint's
cache.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue, Path, did_you_mean
from gpufleet.facts import fsx
from gpufleet.rules.registry import rule
from gpufleet.spec import fsx as fsx_names
from gpufleet.spec.fleet import Fleet, WorkloadClass


@rule("checkpoint-jobs")
def _checkpoint_jobs(fleet: Fleet) -> Iterator[Issue]:
    """checkpoints.jobs[] name a team and a group that exist, on no more nodes than the group has."""
    if fleet.checkpoints is None:
        return
    teams = [t.name for t in fleet.teams]
    groups = {g.name: g for g in fleet.node_groups}
    for i, job in enumerate(fleet.checkpoints.jobs):
        where: Path = ("checkpoints", "jobs", i)
        if job.team not in teams:
            yield Issue(
                path=where + ("team",), message=f'unknown team "{job.team}"', hint=did_you_mean(job.team, teams)
            )
        group = groups.get(job.node_group)
        if group is None:
            yield Issue(
                path=where + ("nodeGroup",),
                message=f'unknown node group "{job.node_group}"',
                hint=did_you_mean(job.node_group, groups),
            )
        elif job.nodes > group.max_size:
            yield Issue(
                path=where + ("nodes",),
                message=(
                    f'job "{job.name}" runs on {job.nodes} nodes, but node group "{group.name}" has at most'
                    f" {group.max_size} (scaling.maxSize)"
                ),
                hint=f"lower nodes to {group.max_size}, or raise the group's scaling.maxSize",
            )


def _prefetch_groups(fleet: Fleet, quota_groups: list[str]) -> str:
    ready = [
        g.name
        for g in fleet.node_groups
        if g.name in quota_groups and g.workload_class is WorkloadClass.INFERENCE and g.local_storage == "RAID0"
    ]
    if not ready:
        return "remove this entry: the team has no Inference group with localStorage RAID0 to prefetch on"
    return (
        f"prefetch on {', '.join(ready)} (an Inference group of the team's quotas with localStorage RAID0), or remove"
        " this entry"
    )


@rule("prefetch")
def _prefetch(fleet: Fleet) -> Iterator[Issue]:
    """teams[].prefetch[] reads the team's claim s3-<group> (checkpoints.mountpoint) into the Mountpoint cache of an
    Inference group's nodes, which is on the instance-store array only with localStorage RAID0
    (gpufleet.plan.manifests.mountpoint.cache_gb); paths are keys under the team's prefix, as Mountpoint shows them
    (S3 keys with `.`, `..` or empty segments are not shown as files: mountpoint-s3 doc/SEMANTICS.md)."""
    groups = {g.name: g for g in fleet.node_groups}
    for i, team in enumerate(fleet.teams):
        if team.prefetch and (fleet.checkpoints is None or fleet.checkpoints.mountpoint is None):
            yield Issue(
                path=("teams", i, "prefetch"),
                at_key=True,
                message="prefetch reads the team's claims s3-<group>, which only checkpoints.mountpoint creates",
                hint="add checkpoints.mountpoint: {} (docs/network-and-storage.md), or remove prefetch",
            )
        quota_groups = [q.node_group for q in team.quotas]
        seen: set[str] = set()
        for j, entry in enumerate(team.prefetch):
            where: Path = ("teams", i, "prefetch", j)
            group = groups.get(entry.node_group)
            if entry.node_group in seen:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=f'node group "{entry.node_group}" is listed twice in the team\'s prefetch',
                    hint="merge the paths into one entry",
                )
            seen.add(entry.node_group)
            if group is None:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=f'unknown node group "{entry.node_group}"',
                    hint=did_you_mean(entry.node_group, groups),
                )
            elif entry.node_group not in quota_groups:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=(
                        f'team "{team.name}" has no quota on node group "{group.name}", so it has no claim'
                        f" s3-{group.name} there to prefetch from"
                    ),
                    hint=f"add a quota on {group.name}, or prefetch on a group of the team's quotas: "
                    + ", ".join(quota_groups),
                )
            elif group.workload_class is not WorkloadClass.INFERENCE:
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=(
                        f'node group "{group.name}" is a {group.workload_class.value} group: prefetch keeps serving'
                        " weights in the caches of Inference groups, whose claims are read-only"
                    ),
                    hint=_prefetch_groups(fleet, quota_groups),
                )
            elif group.local_storage != "RAID0":
                yield Issue(
                    path=where + ("nodeGroup",),
                    message=(
                        f'node group "{group.name}" has no Mountpoint cache to prefetch into: the cache is on the'
                        " instance-store array, which only localStorage RAID0 builds"
                    ),
                    hint=f"set localStorage: RAID0 on {group.name} (an instance type with instance store)",
                )
            measured = fleet.workloads.weight_load_gbps.get(entry.node_group)
            if measured and measured.s3 is not None and measured.nvme is not None and measured.nvme < measured.s3:
                yield Issue(
                    path=where + ("nodeGroup",),
                    severity="warning",
                    message=(
                        f"on node group {entry.node_group} a warm cache reads at {measured.nvme:g} GB/s and S3 at"
                        f" {measured.s3:g} GB/s (workloads.weightLoadGBps, measured): Mountpoint serves cached data"
                        " from the array, so prefetched weights load slower than from S3"
                    ),
                    hint="remove this entry",
                )
            for k, prefix in enumerate(entry.paths):
                segments = prefix.rstrip("/").split("/")
                if prefix.startswith("/"):
                    yield Issue(
                        path=where + ("paths", k),
                        message=f'prefetch path "{prefix}" is absolute: paths are relative to the team\'s prefix',
                        hint=f"write {prefix.lstrip('/')!r} (the claim's root is s3://<bucket>/<team>/)",
                    )
                elif any(s in ("", ".", "..") for s in segments):
                    yield Issue(
                        path=where + ("paths", k),
                        message=(
                            f'prefetch path "{prefix}" has an empty, "." or ".." segment: Mountpoint shows no such'
                            " key as a file, and a path may not leave the team's prefix"
                        ),
                        hint="name the objects' keys below the team's prefix, e.g. models/llama-3.1-405b-awq/",
                    )


@rule("fsx-lustre")
def _fsx_lustre(fleet: Fleet) -> Iterator[Issue]:
    """fsxLustre: a throughput tier and a storage capacity the FSx API accepts for the deployment type, a node group
    and one subnet in its zone, and data repository associations FSx can create (gpufleet.facts.fsx)."""
    fsx_spec = fleet.fsx_lustre
    if fsx_spec is None:
        return
    at: Path = ("fsxLustre",)
    kind = fsx_spec.deployment_type
    tiers = fsx.THROUGHPUT_TIERS.get(kind)
    per_unit = fsx_spec.per_unit_storage_throughput
    if tiers is not None and per_unit is None:
        yield Issue(
            path=at,
            message=f"deploymentType {kind} needs perUnitStorageThroughput (MB/s per TiB of storage)",
            hint=f"set perUnitStorageThroughput to one of {', '.join(map(str, tiers))}",
        )
    elif tiers is not None and per_unit not in tiers:
        yield Issue(
            path=at + ("perUnitStorageThroughput",),
            message=f"{kind} offers {', '.join(map(str, tiers))} MB/s/TiB, not {per_unit}",
            hint=f"use one of {', '.join(map(str, tiers))}",
        )
    elif tiers is None and per_unit is not None:
        read, write = fsx.SCRATCH_DISK[kind]
        yield Issue(
            path=at + ("perUnitStorageThroughput",),
            message=(
                f"{kind} has a fixed throughput ({read} MB/s/TiB read, {write} write): perUnitStorageThroughput is for"
                " PERSISTENT_1 and PERSISTENT_2"
            ),
            hint="remove perUnitStorageThroughput, or use deploymentType PERSISTENT_2",
        )
    gib = fsx_spec.storage_capacity_gib
    if not fsx.valid_capacity(kind, gib):
        below, above = fsx.nearest_capacities(kind, gib)
        step = fsx.CAPACITY_STEP[kind]
        yield Issue(
            path=at + ("storageCapacityGiB",),
            message=f"{kind} takes 1200, 2400 or a multiple of {step} GiB, not {gib}",
            hint=f"use {below} or {above}",
        )
    groups = {g.name: g for g in fleet.node_groups}
    group = fsx_names.node_group(fleet, fsx_spec)
    if fsx_spec.node_group is not None and group is None:
        yield Issue(
            path=at + ("nodeGroup",),
            message=f'unknown node group "{fsx_spec.node_group}"',
            hint=did_you_mean(fsx_spec.node_group, groups),
        )
    elif group is None:
        yield Issue(
            path=at,
            message="fsxLustre needs nodeGroup: the fleet has no Training group to put the file system beside",
            hint="set fsxLustre.nodeGroup to the group whose jobs read and write it",
        )
    else:
        subnets = fsx_names.group_subnets(fleet, group)
        if fsx_spec.subnet_id is None and len(subnets) > 1:
            yield Issue(
                path=at,
                message=(
                    f'node group "{group.name}" spans {len(subnets)} subnets ({", ".join(subnets)}): an FSx for Lustre'
                    " file system takes one"
                ),
                hint="set fsxLustre.subnetId to the subnet of the zone the group's jobs run in",
            )
        elif fsx_spec.subnet_id is not None and fsx_spec.subnet_id not in subnets:
            yield Issue(
                path=at + ("subnetId",),
                message=(
                    f'{fsx_spec.subnet_id} is not a subnet of node group "{group.name}" ({", ".join(subnets)}): its'
                    " nodes would reach the file system across zones"
                ),
                hint=f"use one of {', '.join(subnets)}, or name the group in fsxLustre.nodeGroup",
            )
    repos = fsx_spec.data_repositories
    if repos and kind not in fsx.DRA_TYPES:
        yield Issue(
            path=at + ("dataRepositories",),
            message=f"{kind} file systems take no data repository associations (FSx supports them on SCRATCH_2,"
            " PERSISTENT_1 and PERSISTENT_2)",
            hint="use deploymentType SCRATCH_2 or PERSISTENT_2",
        )
    cp = fleet.checkpoints
    seen_paths: list[str] = []
    seen_repos: list[str] = []
    for i, repo in enumerate(repos):
        where = at + ("dataRepositories", i)
        bucket = fsx_names.repository_bucket(fleet, repo)
        if bucket is None:
            yield Issue(
                path=where,
                message="the association needs a bucket: the fleet has no checkpoints.bucket to link by default",
                hint="set bucket to the S3 bucket to link",
            )
        elif cp is not None and bucket == cp.bucket and cp.encryption == "CustomerManagedKey":
            yield Issue(
                path=where,
                message=(
                    f"the checkpoint bucket \"{bucket}\" is encrypted with the fleet's key, which only the teams'"
                    " checkpoint roles may use: FSx's service-linked role could neither import nor export its objects"
                ),
                hint="link another bucket, or use checkpoints.encryption S3Managed",
            )
        path = repo.file_system_path.rstrip("/") or "/"
        for other in seen_paths:
            if (
                path == "/"
                or other == "/"
                or path == other
                or path.startswith(other + "/")
                or other.startswith(path + "/")
            ):
                yield Issue(
                    path=where + ("fileSystemPath",),
                    message=f"{repo.file_system_path} overlaps the directory {other} another association links",
                    hint="link each association to its own directory, none inside another (`/` only alone)",
                )
                break
        seen_paths.append(path)
        if bucket is not None:
            source = f"s3://{bucket}/{repo.prefix}"
            if source in seen_repos:
                yield Issue(
                    path=where,
                    message=f"{source} is linked by another association already",
                    hint="link each bucket or prefix once",
                )
            seen_repos.append(source)
