"""PersistentVolumeClaims through the model (gpufleet.simulate.volumes): the claim must exist where the pod runs,
its volume's node affinity narrows the groups, and kubelet's mount needs the CSI node plugin on the group and, for a
pod-level-credential volume, a service account with a Pod Identity role."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.simulate import volumes
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload

MakeModel = Callable[..., FleetModel]

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "eval-asr", "namespace": "speech", "labels": {"kueue.x-k8s.io/queue-name": "speech"}},
    "spec": {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "serviceAccountName": "checkpoint-writer",
                "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": True},
                "nodeSelector": {"gpufleet.io/node-group": "a100-mig"},
                "containers": [
                    {
                        "name": "eval",
                        "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                        "resources": {"limits": {"nvidia.com/gpu": 1}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "s3-a100-mig"}}],
            }
        }
    },
}


def _mountpoint(data: dict[str, Any]) -> None:
    data["checkpoints"]["mountpoint"] = {}


def _job(**changes: Any) -> dict[str, Any]:
    job = copy.deepcopy(JOB)
    spec = job["spec"]["template"]["spec"]
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return job


@pytest.fixture(scope="module")
def model() -> FleetModel:
    from tests.model.conftest import model_of

    return model_of(_mountpoint)


def test_a_job_mounting_the_teams_claim_runs(model: FleetModel) -> None:
    verdict = explain(model, workload(_job()))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.node_group) == ("speech", "a100-mig")


def test_claim_from_a_stage_the_environment_does_not_deploy(make_model: MakeModel) -> None:
    verdict = explain(make_model(_mountpoint, env="dev"), workload(_job()))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert (reason.stage, reason.message, reason.fix) == (
        "scheduling",
        'persistentvolumeclaim "s3-a100-mig" not found (the storage stage creates it; this environment does not'
        " deploy it)",
        "roll out through storage (environments.dev.rollout.through), where the claim is created",
    )


def test_unknown_claim_names_the_namespaces_claims(model: FleetModel) -> None:
    volumes_ = [{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}}]
    (reason,) = explain(model, workload(_job(volumes=volumes_))).reasons
    assert reason.message == 'persistentvolumeclaim "datasets" not found'
    assert reason.fix == "name a claim of namespace speech: s3-a100-mig, s3-l40s, s3-notebooks"


def test_without_mountpoint_there_is_no_claim(make_model: MakeModel) -> None:
    def without(data: dict[str, Any]) -> None:
        data["checkpoints"].pop("mountpoint", None)
        for team in data["teams"]:
            team.pop("prefetch", None)  # it reads the claims: validate refuses it without them

    (reason,) = explain(make_model(without), workload(_job())).reasons
    assert reason.message == 'persistentvolumeclaim "s3-a100-mig" not found'
    assert reason.fix.startswith("create the PersistentVolumeClaim in speech first")


def test_another_groups_claim_is_a_volume_node_affinity_conflict(model: FleetModel) -> None:
    volumes_ = [{"name": "data", "persistentVolumeClaim": {"claimName": "s3-notebooks"}}]
    (reason,) = explain(model, workload(_job(volumes=volumes_))).reasons
    assert (reason.stage, reason.message) == (
        "scheduling",
        "node(s) had volume node affinity conflict: volume speech-s3-notebooks may be used on node group notebooks"
        " only",
    )


def test_kueue_picks_its_flavor_without_regard_to_the_volume(model: FleetModel) -> None:
    """Without a nodeSelector Kueue admits the Job to the first flavor of the queue with room (a100-mig) and gives it
    that flavor's nodeSelector; Kueue does not read volumes, so the notebooks claim then conflicts: a pod that mounts
    a group's claim must select that group."""
    volumes_ = [{"name": "data", "persistentVolumeClaim": {"claimName": "s3-notebooks"}}]
    verdict = explain(model, workload(_job(nodeSelector=None, volumes=volumes_)))
    assert verdict.flavor == "a100-mig"
    (reason,) = verdict.reasons
    assert reason.message.startswith("node(s) had volume node affinity conflict: volume speech-s3-notebooks")


def test_pod_level_credentials_need_the_pod_identity_service_account(model: FleetModel) -> None:
    (reason,) = explain(model, workload(_job(serviceAccountName=None))).reasons
    assert (reason.stage, reason.fix) == ("kubelet", "set serviceAccountName: checkpoint-writer")
    assert reason.message == (
        'MountVolume.SetUp failed for volume "speech-s3-a100-mig": authenticationSource pod, and service account'
        " speech/default has no EKS Pod Identity association, so Mountpoint gets no credentials"
    )


def test_the_node_plugin_tolerates_every_group(model: FleetModel) -> None:
    """The chart's node.tolerateAllTaints: `operator: Exists`, read by the model as the operand's tolerations."""
    assert model.volumes.plugins == {"s3.csi.aws.com": ({"operator": "Exists"},)}


def test_a_node_plugin_that_does_not_tolerate_the_group_fails_the_mount(model: FleetModel) -> None:
    narrow = dataclasses.replace(model.volumes, plugins={"s3.csi.aws.com": ()})
    (reason,) = explain(dataclasses.replace(model, volumes=narrow), workload(_job())).reasons
    assert (reason.stage, reason.message) == (
        "kubelet",
        'MountVolume.SetUp failed for volume "speech-s3-a100-mig" on node group a100-mig: driver name s3.csi.aws.com'
        " not found in the list of registered CSI drivers (its node plugin does not run there)",
    )


def test_claim_names_reads_only_claims() -> None:
    pod = {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "persistentVolumeClaim": {"claimName": "x"}}]}
    assert volumes.claim_names(pod) == ["x"]


def test_the_prefetch_daemonset_runs_on_every_node_of_its_group_without_quota(make_model: MakeModel) -> None:
    """The example's language/prefetch-l40s as rendered: Kueue manages its pods (team namespace), admits them with no
    flavor since they request nothing (so no flavor nodeSelector can conflict with the DaemonSet's node pinning),
    the claim binds on l40s and the Mountpoint node plugin mounts it there with the team's Pod Identity role."""
    model = make_model()
    (ds,) = [
        r.args["object"]
        for s in model.plan.stages
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == "DaemonSet"
        and r.args["object"]["metadata"]["name"] == "prefetch-l40s"
    ]
    verdict = explain(model, workload(ds))
    assert (verdict.runs, verdict.cluster_queue, verdict.flavor, verdict.node_group) == (True, "language", None, "l40s")
    # with an fsGroup-free pod and the claim's account, nothing stops the mount; another account has no role
    other = copy.deepcopy(ds)
    other["spec"]["template"]["spec"]["serviceAccountName"] = "default"
    (reason,) = explain(model, workload(other)).reasons
    assert reason.message.startswith('MountVolume.SetUp failed for volume "language-s3-l40s": authenticationSource pod')


def test_explain_says_whether_a_serving_pod_shares_the_prefetched_cache(make_model: MakeModel) -> None:
    """The example prefetches llama/ on l40s: docs/examples/vllm.yaml shares each node's Mountpoint Pod with
    language/prefetch-l40s; the same server with an fsGroup gets a Mountpoint Pod, and a cache, of its own
    (mountpoint-s3-csi-driver v2.7.0 reconciler.go buildFieldFilters)."""
    model = make_model()
    root = Path(__file__).resolve().parents[2]
    server = next(yaml.safe_load_all((root / "docs" / "examples" / "vllm.yaml").read_text()))
    assert (
        "claim s3-l40s: its pods share each node's Mountpoint Pod with DaemonSet language/prefetch-l40s, which keeps"
        " the cache warm"
    ) in explain(model, workload(server)).notes
    server["spec"]["template"]["spec"]["securityContext"] = {"fsGroup": 1000}
    verdict = explain(model, workload(server))
    assert verdict.runs
    assert (
        "claim s3-l40s: its pods get a Mountpoint Pod of their own, with an empty cache, not the one DaemonSet"
        " language/prefetch-l40s keeps warm: fsGroup 1000 (the DaemonSet's: unset) (the CSI driver shares a"
        " Mountpoint Pod only between pods with the same fsGroup and service account)"
    ) in verdict.notes


def test_a_prefetch_daemonset_of_another_driver_version_keeps_no_cache_for_new_pods(make_model: MakeModel) -> None:
    """Issue 41 item 12: the driver gives a new pod no Mountpoint Pod another driver version created (awslabs/
    mountpoint-s3-csi-driver v2.7.0 reconciler.go shouldAssignNewWorkloadToMountpointPod): a prefetch DaemonSet whose
    pods started under driver 2.6.0 (and did not roll with the upgrade) shares nothing with vLLM's new pods."""
    model = make_model()
    key = ("language", "s3-l40s")
    name, pod, made_by = model.volumes.keepers[key]
    assert made_by == model.volumes.driver_version == "2.7.0"
    stale = dataclasses.replace(model.volumes, keepers={**model.volumes.keepers, key: (name, pod, "2.6.0")})
    root = Path(__file__).resolve().parents[2]
    server = next(yaml.safe_load_all((root / "docs" / "examples" / "vllm.yaml").read_text()))
    verdict = explain(dataclasses.replace(model, volumes=stale), workload(server))
    assert verdict.runs
    assert (
        "claim s3-l40s: its pods get a Mountpoint Pod of their own, with an empty cache, not the one DaemonSet"
        " language/prefetch-l40s keeps warm: the CSI driver is 2.7.0 and the DaemonSet's Mountpoint Pods were made by"
        " CSI driver 2.6.0 (the driver gives a new pod no Mountpoint Pod another driver version created: roll the"
        " DaemonSet with the driver)"
    ) in verdict.notes
