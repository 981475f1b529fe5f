"""What a fleet deploys: the stages some environment rolls out, the components they install, and the version of
each.

Why, with sources: docs/spec.md, "Design notes", gpufleet/spec/deployed.py.
"""

from __future__ import annotations

from gpufleet.facts import stages
from gpufleet.spec import defaults
from gpufleet.spec.devices import device_managing
from gpufleet.spec.fleet import Fabric, Fleet, WorkloadClass
from gpufleet.spec.provisioning import provisionings


def stage_used(fleet: Fleet, stage: stages.StageName) -> bool:
    """Whether any environment's rollout includes `stage`."""
    return any(stages.included(stage, env.through) for env in fleet.environments)


STAGE_OF_COMPONENT: dict[str, stages.StageName] = {
    "gpuOperator": "foundation",
    "kueue": "admission",
    "efaDevicePlugin": "network",
    "nvidiaDraDriver": "foundation",
    "efaDraDriver": "network",
    "networkOperator": "network",
    "multus": "network",
    "kubePrometheusStack": "telemetry",
    "nodeProblemDetector": "health",
    "clusterAutoscaler": "foundation",
    "karpenter": "foundation",
    "jobSet": "admission",
    "trainer": "admission",
    "leaderWorkerSet": "admission",
    "keda": "telemetry",
    "mountpointS3Csi": "storage",
    "fsxCsiDriver": "storage",
}


def deployed_components(fleet: Fleet) -> set[str]:
    """The component keys (versions.COMPONENTS) some environment of the fleet deploys."""
    fabrics = {g.fabric for g in fleet.node_groups}
    need = {"gpuOperator", "kueue"} if fleet.teams else {"gpuOperator"}
    for group in fleet.node_groups:
        # What hands the group's devices to pods (gpufleet.spec.devices).
        managing = device_managing(group)
        need |= {managing.gpu_component} if managing.gpu_component else set()
        if group.fabric is Fabric.EFA:
            need.add(managing.efa_component)
    if Fabric.RDMA in fabrics:
        need |= {"networkOperator", "multus"}
    if fleet.telemetry.prometheus == "Install":
        need.add("kubePrometheusStack")
    need.add("nodeProblemDetector")
    if fleet.cluster.autoscaler == "Install":
        need.add("clusterAutoscaler")
    need |= {p.controller for p in provisionings(fleet) if p.controller is not None}
    if fleet.teams:  # the workload layer is installed with Kueue (gpufleet.plan.stages.admission)
        for key, install in (
            ("jobSet", defaults.job_set),
            ("trainer", defaults.trainer),
            ("leaderWorkerSet", defaults.leader_worker_set),
        ):
            if install(fleet):
                need.add(key)
    if any(g.workload_class == WorkloadClass.INFERENCE for g in fleet.node_groups):
        need.add("keda")
    if fleet.checkpoints is not None and fleet.checkpoints.mountpoint is not None:
        need.add("mountpointS3Csi")
    if fleet.fsx_lustre is not None:
        need.add("fsxCsiDriver")
    return {c for c in need if stage_used(fleet, STAGE_OF_COMPONENT[c])}


def component_versions(fleet: Fleet) -> dict[str, str]:
    """Each component key of versions.COMPONENTS with the version the fleet uses (pinned or tested)."""
    v = fleet.versions
    return {
        "gpuOperator": v.gpu_operator,
        "kueue": v.kueue,
        "efaDevicePlugin": v.efa_device_plugin,
        "nvidiaDraDriver": v.nvidia_dra_driver,
        "efaDraDriver": v.efa_dra_driver,
        "networkOperator": v.network_operator,
        "multus": v.multus,
        "kubePrometheusStack": v.kube_prometheus_stack,
        "nodeProblemDetector": v.node_problem_detector,
        "clusterAutoscaler": v.cluster_autoscaler,
        "karpenter": v.karpenter,
        "jobSet": v.job_set,
        "trainer": v.trainer,
        "leaderWorkerSet": v.leader_worker_set,
        "keda": v.keda,
        "mountpointS3Csi": v.mountpoint_s3_csi,
        "fsxCsiDriver": v.fsx_csi_driver,
    }
