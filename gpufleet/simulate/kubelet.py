"""Kubelet admission of a pod on one node: the Topology Manager over the pod's NUMA-aligned devices and CPUs.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/kubelet.py.
"""

from __future__ import annotations

from gpufleet.simulate import topology_manager as tm
from gpufleet.simulate.nodes import NodeModel
from gpufleet.simulate.workload import PodSpec


def _providers(node: NodeModel, request: dict[str, int], guaranteed: bool) -> list[tm.ProviderHints]:
    devices: dict[str, list[tm.Hint] | None] = {}
    for resource, amount in sorted(request.items()):
        if amount > 0 and resource != "cpu" and resource in node.per_numa:
            devices[resource] = tm.device_hints(node.per_numa[resource], amount)
    cpu: dict[str, list[tm.Hint] | None] = {}
    milli = request.get("cpu", 0)
    if node.cpu_manager_policy == "static" and guaranteed and milli > 0 and milli % 1000 == 0:
        cores = {n: v // 1000 for n, v in node.per_numa["cpu"].items()}
        cpu["cpu"] = tm.device_hints(cores, milli // 1000)
    return [cpu, devices]


def topology_error(node: NodeModel, pod: PodSpec) -> tuple[str, int] | None:
    """(what was refused, NUMA nodes the narrowest fit needs) when the Topology Manager rejects the pod."""
    if node.topology_policy == tm.NONE:
        return None
    guaranteed = pod.guaranteed()
    units = (
        [("pod", pod.request())]
        if node.topology_scope == "pod"
        else [(f"container {c.name}", dict(c.requests)) for c in pod.init_containers + pod.containers]
    )
    for what, request in units:
        _, admit = tm.merge(node.topology_policy, node.numa_nodes, _providers(node, request, guaranteed))
        if not admit:
            best, _ = tm.merge(tm.RESTRICTED, node.numa_nodes, _providers(node, request, guaranteed))
            needed = tm.count(best.affinity) if best.affinity is not None and best.preferred else len(node.numa_nodes)
            return what, needed
    return None
