"""One resource entry of a synth tree's inventory as plain data: its inputs and labels, and which node group it is.

Why, with sources: docs/synth-tree.md, "Design notes", gpufleet/tree/entries.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.spec.names import LABEL_NODE_GROUP, SYSTEM_GROUP

Entry = Mapping[str, Any]

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# EKS AMI types that carry the NVIDIA driver (https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html).
GPU_AMI_TYPES = (
    "AL2_x86_64_GPU",
    "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
    "BOTTLEROCKET_x86_64_NVIDIA",
    "BOTTLEROCKET_ARM_64_NVIDIA",
)


def inputs(entry: Entry) -> Mapping[str, Any]:
    value = entry.get("inputs")
    return value if isinstance(value, Mapping) else {}


def labels(entry: Entry) -> Mapping[str, Any]:
    value = inputs(entry).get("labels")
    return value if isinstance(value, Mapping) else {}


def is_node_group(entry: Entry) -> bool:
    return entry.get("type") == NODE_GROUP


def is_gpu_node_group(entry: Entry) -> bool:
    """A managed node group of GPU nodes: gpufleet's node-group label other than `system`, or an NVIDIA AMI type."""
    if not is_node_group(entry):
        return False
    group = labels(entry).get(LABEL_NODE_GROUP)
    if group is not None:
        return bool(group != SYSTEM_GROUP)
    return bool(inputs(entry).get("amiType") in GPU_AMI_TYPES)


def group_name(entry: Entry) -> str:
    return str(labels(entry).get(LABEL_NODE_GROUP) or entry.get("id"))
