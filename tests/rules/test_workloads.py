"""The rules of gpufleet/rules/workloads.py (the workload layer) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import SERVING, Patch, at, build, found, group

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # workloads
    pytest.param("workloads", [], [], id="workloads/defaults"),
    pytest.param(
        "workloads",
        [at("workloads", value={"trainer": "Install", "jobSet": "None"})],
        [
            (
                "workloads.jobSet",
                "the Trainer runs every TrainJob as a JobSet: trainer Install needs the JobSet controller",
            )
        ],
        id="workloads/trainer-needs-jobset",
    ),
    pytest.param(
        "workloads",
        [at("workloads", value={"trainer": "None", "jobSet": "None"})],
        [],
        id="workloads/both-off",
    ),
    pytest.param(
        "workloads",
        [
            group(instanceType="g6.12xlarge", workloadClass="Inference"),
            at("workloads", value={"inferenceReplicaGpus": {"l4": 8}}),
        ],
        [],
        id="workloads/two-node-replica",
    ),
    pytest.param(
        "workloads",
        [at("workloads", value={"inferenceReplicaGpus": {"l4": 8}})],
        [("workloads.inferenceReplicaGpus.l4", "node group l4 has workloadClass Batch, not Inference")],
        id="workloads/replica-on-a-batch-group",
    ),
    pytest.param(
        "workloads",
        [*SERVING, at("workloads", value={"weightLoadGBps": {"serve": {"s3": 2.5, "nvme": 6}}})],
        [],
        id="workloads/measured-rates",
    ),
    pytest.param(
        "workloads",
        [at("workloads", value={"imagePullGBps": {"l4": 0.25}})],
        [],
        id="workloads/measured-pull-rate",
    ),
    pytest.param(
        "workloads",
        [at("workloads", value={"imagePullGBps": {"l5": 0.25}})],
        [("workloads.imagePullGBps.l5", "no node group named l5")],
        id="workloads/measured-pull-rate-of-no-group",
    ),
    pytest.param(
        "workloads",
        [at("workloads", value={"weightLoadGBps": {"l4": {"s3": 2.5}, "serv": {"s3": 1}}})],
        [
            ("workloads.weightLoadGBps.l4", "node group l4 has workloadClass Batch, not Inference"),
            ("workloads.weightLoadGBps.serv", "no node group named serv"),
        ],
        id="workloads/measured-rates-on-other-groups",
    ),
    pytest.param(
        "workloads",
        [
            group(instanceType="g6e.12xlarge", workloadClass="Inference"),
            at("workloads", value={"weightLoadGBps": {"l4": {"s3": 2.5, "nvme": 6}}}),
        ],
        [
            (
                "workloads.weightLoadGBps.l4.nvme",
                "node group l4 has no Mountpoint cache to read from (it needs localStorage RAID0 and"
                " checkpoints.mountpoint), so a warm-cache rate has nothing to describe",
            )
        ],
        id="workloads/cache-rate-without-a-cache",
    ),
    pytest.param(
        "workloads",
        [at("workloads", value={"inferenceReplicaGpus": {"l40s": 8}})],
        [("workloads.inferenceReplicaGpus.l40s", "no node group named l40s")],
        id="workloads/replica-on-an-unknown-group",
    ),
    pytest.param(
        "workloads",
        [
            group(instanceType="g6.12xlarge", workloadClass="Inference"),
            at("workloads", value={"inferenceReplicaGpus": {"l4": 6}}),
        ],
        [
            (
                "workloads.inferenceReplicaGpus.l4",
                "6 GPUs is not a whole number of g6.12xlarge nodes (4 GPUs each): a LeaderWorkerSet replica spans whole"
                " nodes, so the last one is partly idle",
            )
        ],
        id="workloads/replica-not-whole-nodes",
    ),
    pytest.param(
        "workloads",
        [
            group(instanceType="g6.12xlarge", workloadClass="Inference"),
            at("workloads", value={"inferenceReplicaGpus": {"l4": 8}, "leaderWorkerSet": "None"}),
        ],
        [
            (
                "workloads.leaderWorkerSet",
                "a serving replica of l4 needs more GPUs than one node has, and no LeaderWorkerSet is installed: each"
                " replica must be wired across nodes by hand",
            )
        ],
        id="workloads/multi-node-replica-without-lws",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
