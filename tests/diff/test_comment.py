"""The pull request comment of `gpufleet diff --format markdown`, byte for byte (gpufleet/templates/diff-comment.md.j2):
a report with every section against tests/diff/comment-every-section.md. Regenerate the file after an intended
change with `GPUFLEET_UPDATE_GOLDEN=1 python -m pytest tests/diff/test_comment.py` and read its diff."""

from __future__ import annotations

import os
from pathlib import Path

from gpufleet.review import summary
from gpufleet.review.impact import Change, Effect, FileSystemCost, GroupCost, NodeImpact, QuotaChange, Report

GOLDEN = Path(__file__).resolve().parent / "comment-every-section.md"


def _cost(name: str, max_size: int, warm_pool: int = 0) -> GroupCost:
    return GroupCost(
        node_group=name,
        instance_type="p5.48xlarge",
        gpus_per_node=8,
        min_size=0,
        max_size=max_size,
        gpu_hour_usd=6.88,
        price_source="spec",
        warm_pool=warm_pool,
    )


# A diff with every section of the pull request comment.
EVERY_SECTION = Report(
    environment="prod",
    stages=("foundation", "storage"),
    changes=(
        Change(
            id="h100-node-group",
            type="aws:eks/nodeGroup:NodeGroup",
            stage="foundation",
            action="replace",
            paths=("instanceTypes[0]",),
            reasons=("instanceTypes[0]: a | b",),
        ),
        Change(id="checkpoint-bucket", type="aws:s3/bucket:Bucket", stage="storage", action="remove", protected=True),
    ),
    nodes=(
        NodeImpact(
            node_group="h100", id="h100-node-group", action="replace", gpu=True, reasons=("instanceTypes[0]: a -> b",)
        ),
    ),
    quotas=(
        QuotaChange(team="vision", flavor="h100", field="nominalQuota", old="64", new=None, unit="GPUs"),
        QuotaChange(
            team="vision",
            flavor="notebooks",
            field="nominalQuota",
            old="32",
            new="16",
            unit="TimeSlicing replicas, 4 per GPU",
            per_gpu=4,
        ),
    ),
    cost_old=(_cost("h100", 16),),
    cost_new=(_cost("h100", 8, warm_pool=1),),
    storage_new=(
        FileSystemCost(id="fsx-lustre", deployment_type="PERSISTENT_2", capacity_gib=2400, per_unit_throughput=250),
    ),
    work=(
        Effect(id="gpu-operator", disruptive=True, what="driver change"),
        Effect(id="dcgm-exporter", disruptive=False, what="exporter restarts"),
    ),
)


def test_the_comment_with_every_section() -> None:
    body = summary.markdown(EVERY_SECTION, "a", "b")
    if os.environ.get("GPUFLEET_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(body)
    assert body == GOLDEN.read_text()
