"""explain across clusters (issue 44 item 6): a manifest submitted to the MultiKueue manager is judged there up to
Kueue's admission, then on each worker's own model in the Incremental dispatcher's rounds (kueue
pkg/controller/workloaddispatcher/incrementaldispatcher.go @ v0.19.2): which worker takes it, after how many rounds,
or what stops it at the manager or on every worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.simulate import dispatch
from gpufleet.simulate.verdict import Reason, Verdict

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "golden" / "cases" / "multikueue" / "fleet.yaml"
MANAGER = "prod.research-manager"
ASSUMES = (
    "(assumes an otherwise idle fleet: no other workload holds quota or nodes; groups grow to maxSize through the"
    " autoscaler (a Karpenter pool: to its NodePool limit))"
)


def _job(
    name: str, *, pods: int, gpus: int, team: str = "vision", group: str | None = None, kind: str = "Job"
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "t", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
    }
    if group:
        pod["nodeSelector"] = {"gpufleet.io/node-group": group}
    meta = {"name": name, "namespace": team, "labels": {"kueue.x-k8s.io/queue-name": team}}
    job = {"parallelism": pods, "completions": pods, "template": {"spec": pod}}
    if kind == "JobSet":
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": meta,
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": job}}]},
        }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job}


def _explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], obj: dict[str, Any], *extra: str, spec: Path = SPEC
) -> tuple[int, str]:
    path = tmp_path / f"{obj['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(obj), encoding="utf-8")
    code = main(["explain", str(spec), "--env", MANAGER, str(path), *extra])
    return code, capsys.readouterr().out


def test_the_first_worker_takes_what_it_admits_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _explain(tmp_path, capsys, _job("fits-east", pods=2, gpus=4))
    assert code == 0
    assert out.splitlines() == [
        "Job vision/fits-east: runs on research-use1, at once; admitted on the manager research-manager through"
        " ClusterQueue vision, flavor l40s-use1",
        "  dispatch (Incremental, stepSize 1):",
        "  round 1 (at once): research-use1 runs it, through ClusterQueue vision, flavor l40s-use1, on node group"
        " l40s-use1",
        ASSUMES,
    ]


def test_what_the_first_worker_cannot_admit_spills_to_the_next_after_a_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _explain(tmp_path, capsys, _job("west-only", pods=1, gpus=4, group="l40s-usw2"))
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == (
        "Job vision/west-only: runs on research-usw2, after 1 round(s) unadmitted (5 minutes); admitted on the manager"
        " research-manager through ClusterQueue vision, flavor l40s-usw2"
    )
    assert lines[2].startswith("  round 1 (at once): research-use1 would not run it: ")
    assert lines[3] == (
        "  round 2 (after 5 minutes): research-usw2 runs it, through ClusterQueue vision, flavor l40s-usw2, on node"
        " group l40s-usw2"
    )


def test_what_the_manager_does_not_admit_reaches_no_worker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # speech has no quota in us-west-2, so the manager's ClusterQueue speech has no l40s-usw2 quota either
    code, out = _explain(tmp_path, capsys, _job("speech-west", pods=1, gpus=4, team="speech", group="l40s-usw2"))
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == (
        "Job speech/speech-west: would not run: the manager research-manager does not admit it, so no worker is"
        " nominated"
    )
    assert lines[1].startswith("  admission: ")
    # the case installs JobSet everywhere and no LeaderWorkerSet
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": {
            "leaderWorkerTemplate": {
                "size": 1,
                "workerTemplate": {"spec": _job("w", pods=1, gpus=4)["spec"]["template"]["spec"]},
            }
        },
    }
    code, out = _explain(tmp_path, capsys, lws)
    assert code == 1 and out.splitlines()[1].startswith('  api: no matches for kind "LeaderWorkerSet"'), out


def test_a_jobset_is_dispatched_to_the_first_worker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # e2e/test_multikueue.py runs this JobSet on the two control planes: it lands on research-use1
    code, out = _explain(tmp_path, capsys, _job("js", pods=1, gpus=4, kind="JobSet"))
    assert code == 0, out
    assert out.splitlines()[0] == (
        "JobSet vision/js: runs on research-use1, at once; admitted on the manager research-manager through"
        " ClusterQueue vision, flavor l40s-use1"
    )


def test_what_no_worker_can_run_waits_on_the_manager_with_each_workers_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 5 GPUs in one pod: the manager's quota holds it, no g6e.12xlarge node (4 GPUs) does
    code, out = _explain(tmp_path, capsys, _job("too-wide", pods=1, gpus=5))
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == (
        "Job vision/too-wide: would not run on any worker; admitted on the manager research-manager through"
        " ClusterQueue vision, flavor l40s-use1, it waits there"
    )
    assert [line.split(":")[0] for line in lines[2:-1]] == [
        "  round 1 (at once)",
        "    fix",
        "  round 2 (after 5 minutes)",
        "    fix",
    ]


def test_a_step_of_two_nominates_both_at_once_and_the_first_to_admit_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    data["admission"]["multiKueue"]["stepSize"] = 2
    spec = tmp_path / "fleet.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, out = _explain(tmp_path, capsys, _job("either", pods=1, gpus=4), "--format", "json", spec=spec)
    assert code == 0
    (result,) = json.loads(out)["workloads"]
    assert result["dispatchedTo"] == ["research-use1", "research-usw2"] and result["waitsRounds"] == 0
    assert [(w["cluster"], w["round"], w["runs"]) for w in result["workers"]] == [
        ("research-use1", 1, True),
        ("research-usw2", 1, True),
    ]
    assert result["manager"] == {
        "cluster": "research-manager",
        "admitted": True,
        "clusterQueue": "vision",
        "flavor": "l40s-use1",
        "reasons": result["manager"]["reasons"],
    }


def test_running_workloads_are_a_workers_question(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(_job("r", pods=1, gpus=1)), encoding="utf-8")
    assert main(["explain", str(SPEC), "--env", MANAGER, str(path), "--running", str(path)]) == 2
    assert (
        "--running: a manager runs nothing; give a worker's stack to judge what runs there" in capsys.readouterr().err
    )


def _verdict(runs: bool, stage: str = "scheduling") -> Verdict:
    reasons = () if runs else (Reason(stage=stage, message="m", fix="f"),)
    return Verdict(kind="Job", namespace="t", name="j", runs=runs, cluster_queue="t", reasons=reasons)


@pytest.mark.parametrize(
    ("step", "runs_on", "rounds", "takers"),
    [
        (1, (False, False, True), [1, 2, 3], ["c"]),
        (2, (False, False, True), [1, 1, 2], ["c"]),
        (3, (True, False, True), [1, 1, 1], ["a", "c"]),
        (2, (False, False, False), [1, 1, 2], []),
        (5, (False, True, False), [1, 1, 1], ["b"]),
    ],
)
def test_rounds_follow_the_incremental_dispatcher(
    step: int, runs_on: tuple[bool, ...], rounds: list[int], takers: list[str]
) -> None:
    workers = list(zip(("a", "b", "c"), (_verdict(r) for r in runs_on), strict=True))
    d = dispatch.dispatch("m", _verdict(False), workers, step)
    assert [w.round for w in d.workers] == rounds
    assert [w.cluster for w in d.takers] == takers


@pytest.mark.parametrize("stage", dispatch.MANAGER_STAGES)
def test_a_manager_stop_nominates_nobody(stage: str) -> None:
    d = dispatch.dispatch("m", _verdict(False, stage), [("a", _verdict(True))], 1)
    assert d.stopped_at_manager and not d.runs
