"""The NVIDIA device plugin's Allocate, where a node group shares its GPUs.

NVIDIA/k8s-device-plugin `internal/plugin/server.go` Allocate: with `failRequestsGreaterThanOne` (gpufleet's
time-slicing config sets it; MPS forces it on, api/config/v1/config.go) a container asking for more than one shared
device is refused: "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1"
(the kubelet reports UnexpectedAdmissionError and the pod does not recover). Under MIG strategy `single` every MIG
device is advertised as `nvidia.com/gpu`; `nvidia.com/mig-<profile>` exists only under strategy `mixed`
(README "MIG Support", deployments/helm values `migStrategy`).
"""

from __future__ import annotations

from gpufleet.names import GPU_RESOURCE
from gpufleet.model.nodes import NodeModel
from gpufleet.model.workload import PodSpec

MIG_PREFIX = "nvidia.com/mig-"


def allocate_error(node: NodeModel, pod: PodSpec) -> str | None:
    if not node.fail_requests_greater_than_one:
        return None
    for c in pod.containers + pod.init_containers:
        n = c.requests.get(GPU_RESOURCE, 0)
        if n > 1:
            return f"request for '{GPU_RESOURCE}: {n}' too large: maximum request size for shared resources is 1"
    return None


def unadvertised_mig(node: NodeModel, pod: PodSpec) -> str | None:
    """A MIG resource name the group's strategy does not advertise."""
    for c in pod.containers + pod.init_containers:
        for r in c.requests:
            if r.startswith(MIG_PREFIX):
                where = f"MIG strategy {node.mig_strategy} advertises every slice as {GPU_RESOURCE}" if node.mig_strategy else "the group has no MIG slices"
                return f"{r} is not advertised on node group {node.group}: {where}"
    return None
