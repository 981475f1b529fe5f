"""`gpufleet explain` of a job mounting its team's FSx for Lustre claim (`fsx-lustre`, issue 33 item 1): the model
knows the claim, its static volume and the FSx CSI node plugin, which must run on the GPU group the pod lands on."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.plan.parts import Resource, RolloutPlan, StageContent
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.simulate import operands, volumes
from gpufleet.simulate.verdict import FleetModel, explain, fleet_model
from gpufleet.simulate.workload import workload

CASE = Path(__file__).resolve().parents[1] / "golden" / "cases" / "fsx-lustre" / "fleet.yaml"
SPEC: dict[str, Any] = yaml.safe_load(CASE.read_text())

# A two-node pretraining Job of team llm on the EFA group, every GPU of each node, reading and writing the team's
# directory of the file system (subPath) as the awsome-distributed-training EKS examples mount /fsx.
JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "pretrain", "namespace": "llm", "labels": {"kueue.x-k8s.io/queue-name": "llm"}},
    "spec": {
        "parallelism": 2,
        "completions": 2,
        "completionMode": "Indexed",
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"gpufleet.io/node-group": "h100"},
                "containers": [
                    {
                        "name": "train",
                        "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                        "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}},
                        "volumeMounts": [{"name": "fsx", "mountPath": "/fsx", "subPath": "llm"}],
                    }
                ],
                "volumes": [{"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-lustre"}}],
            }
        },
    },
}


def model_of(spec: dict[str, Any], env: str = "prod") -> FleetModel:
    fleet = load_fleet_text(yaml.safe_dump(spec), env=env).environments[env]
    return fleet_model(build_plan(fleet, env))


def with_plan(model: FleetModel, plan: RolloutPlan) -> FleetModel:
    return dataclasses.replace(model, plan=plan, volumes=volumes.from_plan(plan))


@pytest.fixture(scope="module")
def model() -> FleetModel:
    return model_of(SPEC)


def test_the_fsx_node_plugin_is_a_csi_node_plugin_on_every_group(model: FleetModel) -> None:
    plugin = next(w for w in operands.operands(model.plan) if w.name == "fsx-csi-node")
    assert plugin.namespace == "kube-system"
    # node.tolerateAllTaints: the template's `operator: Exists` alone (templates/node-daemonset.yaml, chart 1.17.0).
    assert plugin.pod_sets[0].pod.tolerations == ({"operator": "Exists"},)
    assert model.volumes.plugins["fsx.csi.aws.com"] == ({"operator": "Exists"},)
    assert ("llm", "fsx-lustre") in model.volumes.claims
    assert "fsx-lustre-llm" in model.volumes.volumes


def test_a_job_mounting_the_teams_fsx_claim_runs(model: FleetModel) -> None:
    verdict = explain(model, workload(JOB))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.node_group, verdict.pods_admitted) == ("llm", "h100", 2)


def test_the_claim_of_another_namespace_is_not_found(model: FleetModel) -> None:
    job = copy.deepcopy(JOB)
    job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "fsx-lustre-eval"
    verdict = explain(model, workload(job))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert (reason.stage, reason.message, reason.fix) == (
        "scheduling",
        'persistentvolumeclaim "fsx-lustre-eval" not found',
        "name a claim of namespace llm: fsx-lustre",
    )


def test_an_environment_without_the_storage_stage_has_no_claim_yet() -> None:
    spec = copy.deepcopy(SPEC)
    spec["environments"]["prod"]["rollout"]["through"] = "network"
    verdict = explain(model_of(spec), workload(JOB))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert (reason.stage, reason.message, reason.fix) == (
        "scheduling",
        'persistentvolumeclaim "fsx-lustre" not found (the storage stage creates it; this environment does not'
        " deploy it)",
        "roll out through storage (environments.prod.rollout.through), where the claim is created",
    )


def test_a_node_plugin_that_does_not_tolerate_the_gpu_group_fails_the_mount(model: FleetModel) -> None:
    """With node.tolerateAllTaints false the chart's node DaemonSet tolerates only NoExecute taints and its startup
    taint: it never reaches a GPU node (nvidia.com/gpu NoSchedule), and kubelet cannot mount the volume there."""

    def untolerant(res: Resource) -> Resource:
        if res.id != "helm-aws-fsx-csi-driver":
            return res
        values = {**res.args["values"], "node": {"tolerateAllTaints": False}}
        return dataclasses.replace(res, args={**res.args, "values": values})

    stages = tuple(
        dataclasses.replace(
            s,
            content=StageContent(
                resources=tuple(untolerant(r) for r in s.content.resources),
                gates=s.content.gates,
                warnings=s.content.warnings,
                notes=s.content.notes,
            ),
        )
        for s in model.plan.stages
    )
    changed = with_plan(model, dataclasses.replace(model.plan, stages=stages))
    assert changed.volumes.plugins["fsx.csi.aws.com"] == (
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "fsx.csi.aws.com/agent-not-ready", "operator": "Exists"},
    )
    verdict = explain(changed, workload(JOB))
    assert not verdict.runs
    (reason,) = verdict.reasons
    assert (reason.stage, reason.message, reason.fix) == (
        "kubelet",
        'MountVolume.SetUp failed for volume "fsx-lustre-llm" on node group h100: driver name fsx.csi.aws.com not'
        " found in the list of registered CSI drivers (its node plugin does not run there)",
        "install the fsx.csi.aws.com driver (fsxLustre) and let its node plugin tolerate the group",
    )


def test_explain_command_on_the_fsx_fleet(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`gpufleet explain` (exit 0) of the job mounting the team's claim, as team llm's member submits it."""
    path = tmp_path / "pretrain.yaml"
    path.write_text(json.dumps(JOB))
    member = "arn:aws:iam::111122223333:role/llm-team"
    assert main(["explain", str(CASE), "--env", "prod", str(path), "--as", member, "--format", "json"]) == 0
    (verdict,) = json.loads(capsys.readouterr().out)["workloads"]
    assert (verdict["runs"], verdict["nodeGroup"], verdict["pods"]) == (True, "h100", {"total": 2, "admitted": 2})
