"""The eight rollout stages, in order (docs/architecture.md section 3). Telemetry lands second on purpose."""

from __future__ import annotations

from typing import Literal

StageName = Literal["foundation", "telemetry", "admission", "sharing", "network", "storage", "health", "cost"]

STAGES: tuple[StageName, ...] = (
    "foundation",
    "telemetry",
    "admission",
    "sharing",
    "network",
    "storage",
    "health",
    "cost",
)

WHAT: dict[StageName, str] = {
    "foundation": "EKS cluster or existing one, GPU node groups (taints, labels, Topology Manager, warm pools, "
    "pre-pulled images, pinned AMI), Cluster Autoscaler, namespaces, GPU Operator",
    "telemetry": "DCGM exporter profiling counters, Prometheus, ServiceMonitors, recording rules, alerts, dashboard",
    "admission": "Kueue all-or-nothing admission, flavors, team ClusterQueues, cohorts, LocalQueues, priorities",
    "sharing": "time-slicing / MPS device plugin configs, MIG profiles, isolation contract per group",
    "network": "EFA device plugin or Network Operator, Multus, NCCL settings, bandwidth gate",
    "storage": "checkpoint bucket and interval, workload identity, node-local NVMe, S3 and FSx for Lustre claims",
    "health": "DCGM health to node conditions, auto repair, cordon/drain, straggler alerts, planted-fault gate",
    "cost": "allocated and idle GPU-hours by team, weekly report, fleet cost estimate",
}


def index(stage: StageName) -> int:
    """1-based position of a stage."""
    return STAGES.index(stage) + 1


def included(stage: StageName, through: StageName) -> bool:
    return STAGES.index(stage) <= STAGES.index(through)


def directory(stage: StageName) -> str:
    """`NN-<stage>`, the synth tree directory of a stage."""
    return f"{index(stage):02d}-{stage}"
