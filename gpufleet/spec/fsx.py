"""Where the fleet's FSx for Lustre file system goes: the node group it serves and the one subnet it takes, as the
rules check them (rules: fsx-lustre) and the storage stage places it (gpufleet.plan.builders.fsx)."""

from __future__ import annotations

from gpufleet.spec.fleet import DataRepository, Fleet, FsxLustre, NodeGroup, WorkloadClass


def node_group(fleet: Fleet, fsx: FsxLustre) -> NodeGroup | None:
    """fsxLustre.nodeGroup, else the Training group with the largest maxSize (the first of equals): the largest
    job's nodes are the file system's heaviest clients. None when neither exists."""
    if fsx.node_group is not None:
        return next((g for g in fleet.node_groups if g.name == fsx.node_group), None)
    training = [g for g in fleet.node_groups if g.workload_class == WorkloadClass.TRAINING]
    return max(training, key=lambda g: g.max_size, default=None)


def group_subnets(fleet: Fleet, group: NodeGroup) -> tuple[str, ...]:
    """The subnets the group's nodes launch in: its own, else the cluster's (gpufleet.plan.builders.node_groups)."""
    return group.subnet_ids or fleet.cluster.subnet_ids


def subnet(fleet: Fleet, fsx: FsxLustre) -> str | None:
    """fsxLustre.subnetId, else the group's subnet when it has exactly one; None when the rules ask for one."""
    if fsx.subnet_id is not None:
        return fsx.subnet_id
    group = node_group(fleet, fsx)
    if group is None:
        return None
    subnets = group_subnets(fleet, group)
    return subnets[0] if len(subnets) == 1 else None


def repository_bucket(fleet: Fleet, repo: DataRepository) -> str | None:
    """The association's bucket: its own, else the checkpoint bucket."""
    if repo.bucket is not None:
        return repo.bucket
    return fleet.checkpoints.bucket if fleet.checkpoints is not None else None
