"""Weight-load and scale-up times per Inference group (gpufleet.facts.weights), hand-computed."""

from __future__ import annotations

import pytest

from gpufleet.facts import weights
from gpufleet.plan.builders import serving_start
from tests.network.fleets import fleet, group


@pytest.mark.parametrize(
    ("model_gb", "replica_gpus", "node_gpus", "network", "cards", "devices", "nodes", "s3_s", "nvme_s"),
    [
        # g6e.12xlarge: 100 Gbps on 1 card = 12.5 GB/s; one GPU copies 10 GB/s, the cap; 2 devices x 2 GB/s = 4 GB/s
        (140, 1, 4, 100, 1, 2, 1, 14.0, 35.0),
        # 8 GPUs over two 4-GPU nodes: 70 GB each; S3 12.5 GB/s under the 4 GPUs' 40 GB/s
        (140, 8, 4, 100, 1, 0, 2, 5.6, None),
        # p5.48xlarge: 3200 Gbps over 32 cards = 12.5 GB/s; 8 devices x 2 = 16 GB/s, 8 GPUs 80 GB/s
        (1000, 8, 8, 3200, 32, 8, 1, 80.0, 62.5),
        # g5.xlarge: 10 Gbps = 1.25 GB/s
        (16, 1, 1, 10, 1, 0, 1, 12.8, None),
    ],
)
def test_load_times(model_gb, replica_gpus, node_gpus, network, cards, devices, nodes, s3_s, nvme_s) -> None:
    load = weights.load(
        model_gb=model_gb,
        replica_gpus=replica_gpus,
        node_gpus=node_gpus,
        network_gbps=network,
        network_cards=cards,
        nvme_devices=devices,
    )
    assert load.nodes == nodes
    assert load.from_s3_s == pytest.approx(s3_s)
    assert load.from_nvme_s == (None if nvme_s is None else pytest.approx(nvme_s))


SERVE = group("serve", "g6e.12xlarge", local="RAID0", max_size=8).replace(
    "workloadClass: Training", "workloadClass: Inference"
)
TEAM = "teams:\n  - {name: llm, quotas: [{nodeGroup: serve, gpus: 4}]}\n"
CHECKPOINTS = """\
checkpoints:
  bucket: team-checkpoints
  modelParameters: 70000000000
  meanTimeBetweenFailuresHours: 6
  mountpoint: {}
workloads:
  servingModelGB: {serve: 140}
"""


def test_ready_time_with_and_without_a_warm_node() -> None:
    f = fleet([SERVE], TEAM + CHECKPOINTS)
    t = serving_start.ready_time(f, f.node_group("serve"))
    assert t is not None
    # node Ready 180 s + operands 180 s, no image set to pre-pull; so the image is pulled after (an assumed 10.78 GB
    # in parallel on AL2023, the default on this release, at 0.18 GB/s: 59.813 s, gpufleet.facts.image_pull)
    assert (t.node_start_s, t.image_pull_s, t.warm_up_s) == (360, pytest.approx(59.813), 60)
    assert t.cold_node_s == pytest.approx(360 + 59.813 + 14 + 60)
    assert t.warm_node_s3_s == pytest.approx(59.813 + 14 + 60)
    assert t.warm_node_cached_s == pytest.approx(59.813 + 35 + 60)
    (row,) = [n for n in serving_start.notes(f) if n.startswith("| serve |")]
    assert row == (
        "| serve | 140 GB | 14 s at 10 GB/s | 35 s at 4 GB/s | 6.0 min | 60 s | 1.0 min | **8.2 min** | 2.2 min"
        " | 2.6 min | **8.2 min**: no warm node (no headroom) |"
    )


HEADROOM = SERVE.replace("    taints: []", "    headroom: {nodes: 2}\n    taints: []")
PREFETCH = (
    "teams:\n  - {name: llm, quotas: [{nodeGroup: serve, gpus: 4}], prefetch: [{nodeGroup: serve, paths: [m/]}]}\n"
)


@pytest.mark.parametrize(
    ("groups", "teams", "replica", "column"),
    [
        # headroom, no prefetch: the replica lands on a running node and reads from S3 (2.2 min above)
        ([HEADROOM], TEAM, 4, "**2.2 min**: first 2 replica(s) on headroom nodes, weights from S3"),
        # headroom and prefetch: the node's cache already holds the weights (2.6 min above: the example's slower
        # NVMe figure, 2 devices at 2 GB/s against one card's 10 GB/s, is what the table says)
        ([HEADROOM], PREFETCH, 4, "**2.6 min**: first 2 replica(s) on headroom nodes, cache warm (prefetch: llm)"),
        # a replica of 8 GPUs spans two 4-GPU nodes: two headroom nodes keep one replica warm
        ([HEADROOM], PREFETCH, 8, "first 1 replica(s) on headroom nodes, cache warm (prefetch: llm)"),
        # prefetch without headroom: a scale-up still waits for a node
        ([SERVE], PREFETCH, 4, "**8.2 min**: no warm node (no headroom)"),
    ],
)
def test_the_next_scale_up_is_the_one_this_spec_gets(groups, teams, replica, column) -> None:
    extra = CHECKPOINTS + f"  inferenceReplicaGpus: {{serve: {replica}}}\n"
    f = fleet(groups, teams + extra)
    (row,) = [n for n in serving_start.notes(f) if n.startswith("| serve |")]
    assert row.endswith(f"{column} |"), row


def test_without_mountpoint_no_cache_and_the_default_size() -> None:
    f = fleet([SERVE], TEAM)
    (row,) = [n for n in serving_start.notes(f) if n.startswith("| serve |")]
    assert "100 GB (servingModelGB omitted)" in row
    assert "none (no RAID0 array with checkpoints.mountpoint)" in row


def test_measured_rates_replace_the_assumptions_and_say_so() -> None:
    """workloads.weightLoadGBps: a node's cold read through the claim (S3) and its warm-cache read, as measured."""
    f = fleet([SERVE], TEAM + CHECKPOINTS + "  weightLoadGBps: {serve: {s3: 2.5, nvme: 6}}\n")
    t = serving_start.ready_time(f, f.node_group("serve"))
    assert t is not None
    assert (t.load.s3_gbps, t.load.nvme_gbps, t.load.s3_measured, t.load.nvme_measured) == (2.5, 6, True, True)
    assert t.load.from_s3_s == pytest.approx(140 / 2.5)
    (row,) = [n for n in serving_start.notes(f) if n.startswith("| serve |")]
    assert row.startswith("| serve | 140 GB | 56 s at 2.5 GB/s (measured) | 23 s at 6 GB/s (measured) |")
    # one measured, one assumed: only the measured one says so
    f = fleet([SERVE], TEAM + CHECKPOINTS + "  weightLoadGBps: {serve: {s3: 2.5}}\n")
    (row,) = [n for n in serving_start.notes(f) if n.startswith("| serve |")]
    assert row.startswith("| serve | 140 GB | 56 s at 2.5 GB/s (measured) | 35 s at 4 GB/s |")
