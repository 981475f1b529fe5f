"""Rules on the workload layer: JobSet beside the Trainer, and the serving facts given per Inference group."""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue, did_you_mean
from gpufleet.facts import catalog
from gpufleet.rules.registry import rule
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet, WorkloadClass


@rule("workloads")
def _workloads(fleet: Fleet) -> Iterator[Issue]:
    w = fleet.workloads
    if w.trainer == "Install" and w.job_set == "None":
        yield Issue(
            path=("workloads", "jobSet"),
            message="the Trainer runs every TrainJob as a JobSet: trainer Install needs the JobSet controller",
            hint="remove jobSet: None (or set jobSet: Install), or set trainer: None",
        )
    names_ = [g.name for g in fleet.node_groups]
    serving = [g.name for g in fleet.node_groups if g.workload_class is WorkloadClass.INFERENCE]
    for name, gpus in w.inference_replica_gpus.items():
        path = ("workloads", "inferenceReplicaGpus", name)
        if name not in names_:
            yield Issue(
                path=path,
                at_key=True,
                message=f"no node group named {name}",
                hint=did_you_mean(name, serving) if serving else "remove the entry: the fleet has no Inference group",
            )
            continue
        group = fleet.node_group(name)
        if group.workload_class is not WorkloadClass.INFERENCE:
            yield Issue(
                path=path,
                at_key=True,
                message=f"node group {name} has workloadClass {group.workload_class.value}, not Inference",
                hint="name an Inference node group, or remove the entry",
            )
            continue
        info = catalog.lookup(group.instance_type)
        if info is not None and gpus > info.gpu_count and gpus % info.gpu_count:
            yield Issue(
                path=path,
                severity="warning",
                message=(
                    f"{gpus} GPUs is not a whole number of {group.instance_type} nodes ({info.gpu_count} GPUs each):"
                    " a LeaderWorkerSet replica spans whole nodes, so the last one is partly idle"
                ),
                hint=f"use a multiple of {info.gpu_count}",
            )
    for field_name, name in [("servingModelGB", n) for n in w.serving_model_gb] + [
        ("weightLoadGBps", n) for n in w.weight_load_gbps
    ]:
        if name not in serving:
            yield Issue(
                path=("workloads", field_name, name),
                at_key=True,
                message=(
                    f"no node group named {name}"
                    if name not in names_
                    else f"node group {name} has workloadClass {fleet.node_group(name).workload_class.value}, not"
                    " Inference"
                ),
                hint=did_you_mean(name, serving) if serving else "remove the entry: the fleet has no Inference group",
            )
        elif field_name == "weightLoadGBps" and w.weight_load_gbps[name].nvme is not None:
            group = fleet.node_group(name)
            if group.local_storage != "RAID0" or fleet.checkpoints is None or fleet.checkpoints.mountpoint is None:
                yield Issue(
                    path=("workloads", "weightLoadGBps", name, "nvme"),
                    message=(
                        f"node group {name} has no Mountpoint cache to read from (it needs localStorage RAID0 and"
                        " checkpoints.mountpoint), so a warm-cache rate has nothing to describe"
                    ),
                    hint="remove nvme",
                )
    for name in w.image_pull_gbps:
        if name not in names_:
            yield Issue(
                path=("workloads", "imagePullGBps", name),
                at_key=True,
                message=f"no node group named {name}",
                hint=did_you_mean(name, names_),
            )
    if w.leader_worker_set == "None" and (spanning := defaults.multi_node_replicas(fleet)):
        yield Issue(
            path=("workloads", "leaderWorkerSet"),
            severity="warning",
            message=(
                f"a serving replica of {', '.join(spanning)} needs more GPUs than one node has, and no LeaderWorkerSet"
                " is installed: each replica must be wired across nodes by hand"
            ),
            hint="remove leaderWorkerSet: None",
        )
