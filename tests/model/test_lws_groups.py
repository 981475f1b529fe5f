"""A LeaderWorkerSet of several replica groups (issue 41 item 15): Kueue's integration makes one Workload per group
(kueue v0.19.2 pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go filterWorkloads; its test "should
create prebuilt workloads with leader template": replicas 2, two Workloads of a leader and a worker pod set each), so
each group is admitted on its own and N of M groups run. The model judged all groups' pods as one gang: none ran
when all did not fit, with a note that some might."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gpufleet.commands.explain import _text
from gpufleet.simulate.verdict import explain
from gpufleet.simulate.workload import workload
from tests.model.conftest import group, model_of

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "lws-inference.yaml"


def _lws(replicas: int) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d and d.get("kind") == "LeaderWorkerSet"]
    doc = copy.deepcopy(doc)
    doc["spec"]["replicas"] = replicas
    return doc


def test_groups_beyond_the_quota_wait_and_the_others_run() -> None:
    """The example's 8-GPU groups (a leader and a worker of 4 GPUs) on the example fleet: language has 32 l40s GPUs
    and may borrow the 8 speech lends, so 5 of 6 groups are admitted; the sixth waits for quota."""
    verdict = explain(model_of(), workload(_lws(6)))
    body = verdict.json()
    assert (body["runs"], body["pods"], body["groups"]) == (
        False,
        {"total": 12, "admitted": 10},
        {"total": 6, "admitted": 5},
    )
    assert [r.stage for r in verdict.reasons] == ["admission"]
    assert "insufficient unused quota for nvidia.com/gpu in flavor l40s, 4 more needed" in verdict.reasons[0].message
    assert _text([verdict]).splitlines()[:2] == [
        "LeaderWorkerSet language/llm-multinode: 5 of 6 groups run (10 of 12 pods); 1 waits for quota: "
        + verdict.reasons[0].message,
        "  running: through ClusterQueue language, flavor l40s, on node group l40s",
    ]
    assert not any("some groups may still run" in n for n in verdict.notes)


def test_groups_beyond_the_nodes_wait_and_a_group_is_all_or_nothing() -> None:
    """l40s without headroom and at most 5 nodes (one 4-GPU pod each), language's quota 16 GPUs and the 8 speech
    lends (three groups): two groups take four nodes; the third's leader would find the fifth but its worker none,
    and Kueue's Workload is the whole group: 2 of 3 run."""

    def five_nodes(data: dict[str, Any]) -> None:
        g = group(data, "l40s")
        g.pop("headroom")
        g["scaling"] = {"minSize": 2, "maxSize": 5}
        language = next(t for t in data["teams"] if t["name"] == "language")
        next(q for q in language["quotas"] if q["nodeGroup"] == "l40s")["gpus"] = 16

    verdict = explain(model_of(five_nodes), workload(_lws(3)))
    body = verdict.json()
    assert (body["pods"], body["groups"]) == ({"total": 6, "admitted": 4}, {"total": 3, "admitted": 2})
    assert [r.stage for r in verdict.reasons] == ["autoscaler"]
    assert (
        _text([verdict])
        .splitlines()[0]
        .startswith("LeaderWorkerSet language/llm-multinode: 2 of 3 groups run (4 of 6 pods); 1 waits for nodes: ")
    )


def test_groups_that_all_fit_run_and_say_how_many() -> None:
    verdict = explain(model_of(), workload(_lws(2)))
    assert verdict.runs, verdict.reasons
    assert verdict.json()["groups"] == {"total": 2, "admitted": 2}
    # one group: as before, no groups entry
    assert "groups" not in explain(model_of(), workload(_lws(1))).json()


def test_the_pod_sets_of_one_workload_share_the_group_s_nodes() -> None:
    """One group of a leader and five workers (six 4-GPU pods) on 5 l40s nodes: the leader's pod set and the
    workers' meet the same nodes (one Workload), so it does not fit; each pod set alone did."""

    def five_nodes(data: dict[str, Any]) -> None:
        g = group(data, "l40s")
        g.pop("headroom")
        g["scaling"] = {"minSize": 2, "maxSize": 5}
        language = next(t for t in data["teams"] if t["name"] == "language")
        next(q for q in language["quotas"] if q["nodeGroup"] == "l40s")["gpus"] = 20

    doc = _lws(1)
    doc["spec"]["leaderWorkerTemplate"]["size"] = 6
    verdict = explain(model_of(five_nodes), workload(doc))
    assert not verdict.runs
    assert [r.stage for r in verdict.reasons] == ["autoscaler"]
    assert "1 of 5 pod(s) of this shape find no node" in verdict.reasons[0].message, verdict.reasons[0].message
