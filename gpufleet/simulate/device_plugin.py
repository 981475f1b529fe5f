"""The NVIDIA device plugin's Allocate, where a node group shares its GPUs.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/device_plugin.py.
"""

from __future__ import annotations

from gpufleet.plan.manifests.sharing import MIG_MIXED, MIG_PREFIX
from gpufleet.simulate.nodes import NodeModel
from gpufleet.simulate.workload import PodSpec
from gpufleet.spec.names import GPU_RESOURCE


def allocate_error(node: NodeModel, pod: PodSpec) -> str | None:
    if not node.fail_requests_greater_than_one:
        return None
    for c in pod.containers + pod.init_containers:
        n = c.requests.get(GPU_RESOURCE, 0)
        if n > 1:
            return f"request for '{GPU_RESOURCE}: {n}' too large: maximum request size for shared resources is 1"
    return None


def advertised_mig(node: NodeModel) -> list[str]:
    return sorted(r for r in node.allocatable if r.startswith(MIG_PREFIX))


def unadvertised_mig(node: NodeModel, pod: PodSpec) -> str | None:
    """A MIG resource name the group does not advertise, or whole GPUs asked of a group that has only MIG slices."""
    mixed = advertised_mig(node)
    for c in pod.containers + pod.init_containers:
        for r, n in c.requests.items():
            if r.startswith(MIG_PREFIX) and r not in mixed:
                if node.mig_strategy == MIG_MIXED:
                    where = f"its layout has {', '.join(mixed)}"
                elif node.mig_strategy:
                    where = f"MIG strategy {node.mig_strategy} advertises every slice as {GPU_RESOURCE}"
                else:
                    where = "the group has no MIG slices"
                return f"{r} is not advertised on node group {node.group}: {where}"
            if r == GPU_RESOURCE and n > 0 and node.mig_strategy == MIG_MIXED:
                return (
                    f"{GPU_RESOURCE} is not advertised on node group {node.group}: MIG strategy {MIG_MIXED} advertises"
                    f" each slice by its profile ({', '.join(mixed)})"
                )
    return None
