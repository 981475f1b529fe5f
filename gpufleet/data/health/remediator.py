"""gpufleet remediation controller: turns the DCGMUnhealthy node condition (set by Node Problem Detector from DCGM
health checks) into cordon, then drain per workload class, and undoes its own cordon when the node is healthy.

Per node (GPU nodes carry gpufleet.io/node-group and gpufleet.io/workload-class labels):
- condition True: cordon (spec.unschedulable, annotated as ours); with REMEDIATION=CordonAndDrain evict the pods
  that hold GPUs (never DaemonSet pods, never pods without a GPU request or, on a DRA node, a ResourceClaim)
  through the Eviction API, which honours PodDisruptionBudgets:
    Training, Batch: evict them all now; the job controller / Kueue requeues the work on healthy nodes.
    Inference: evict one pod per pass (NotReady replicas first), and only when every other replica of its
      ReplicaSet/StatefulSet is ready (the candidate itself is not missing capacity: the replica on the bad GPU is
      usually the NotReady one), so the replacement must find capacity elsewhere before the next one goes.
    Interactive: leave sessions alone for INTERACTIVE_GRACE_SECONDS after the cordon, then evict.
    Any class, when the node's AcceleratedHardwareReady reason is one EKS node auto repair reboots or replaces the
      node for (EKS_REPAIRED_REASONS: the GPU is gone or must be reset): evict now; the repair owns that fault and
      would cut the class's pacing short.
- condition False and cordoned by us: uncordon.
- condition Unknown (the check cannot run, its verdict is stale): never cordon on it; but a node we cordoned (on
  True) that now reads Unknown stays cordoned and is drained as if True, until the check passes: a degrading GPU
  often stalls DCGM itself (NVIDIA/NVSentinel#1748), so losing the verdict after an unhealthy one is no all-clear.
- condition absent (Node Problem Detector removed, the node object re-created: nothing will report again): a node we
  cordoned is uncordoned UNKNOWN_RELEASE_SECONDS after our cordon.
Every path that cordons has a path that uncordons: True -> False, True -> Unknown -> False, and True -> absent.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

CONDITION = "DCGMUnhealthy"
HARDWARE_CONDITION = "AcceleratedHardwareReady"  # the EKS node monitoring agent's
LABEL_NODE_GROUP = "gpufleet.io/node-group"
LABEL_WORKLOAD_CLASS = "gpufleet.io/workload-class"
ANN_CORDONED = "gpufleet.io/cordoned-by"
ANN_CORDONED_AT = "gpufleet.io/cordoned-at"
ME = "gpufleet-remediator"
GPU_PREFIX = "nvidia.com/"


class Api(Protocol):
    def get(self, path: str) -> Any: ...
    def patch(self, path: str, body: Any) -> Any: ...
    def post(self, path: str, body: Any) -> Any: ...


@dataclass
class Config:
    remediation: str = "CordonAndDrain"  # CordonAndDrain | CordonOnly
    interactive_grace_seconds: int = 3600
    unknown_release_seconds: int = 1800
    dry_run: bool = False
    # AcceleratedHardwareReady reasons EKS node auto repair reboots or replaces the node for (the repair overrides
    # the plan renders): those faults are EKS's, and the remediator does not pace a drain the repair would cut short.
    eks_repaired_reasons: frozenset[str] = frozenset()

    @staticmethod
    def from_env() -> "Config":
        return Config(
            remediation=os.environ.get("REMEDIATION", "CordonAndDrain"),
            interactive_grace_seconds=int(os.environ.get("INTERACTIVE_GRACE_SECONDS", "3600")),
            unknown_release_seconds=int(os.environ.get("UNKNOWN_RELEASE_SECONDS", "1800")),
            dry_run=os.environ.get("DRY_RUN", "false") == "true",
            eks_repaired_reasons=frozenset(r for r in os.environ.get("EKS_REPAIRED_REASONS", "").split(",") if r),
        )


@dataclass
class Actions:
    """What one pass decided (and, unless dry run, did)."""

    cordon: list[str] = field(default_factory=list)
    uncordon: list[str] = field(default_factory=list)
    evict: list[str] = field(default_factory=list)  # namespace/pod
    waiting: list[str] = field(default_factory=list)  # namespace/pod kept for now, with the reason


def _condition(node: dict[str, Any]) -> dict[str, Any] | None:
    for cond in node.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == CONDITION:
            return dict(cond)
    return None


def condition_status(node: dict[str, Any]) -> str:
    cond = _condition(node)
    return "Unknown" if cond is None else str(cond.get("status", "Unknown"))


def not_true_since(node: dict[str, Any]) -> float | None:
    """When the condition last left True (its lastTransitionTime), else our cordon time; None when neither is known."""
    cond = _condition(node)
    stamp = (cond or {}).get("lastTransitionTime")
    if stamp:
        return datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    cordoned_at = (node["metadata"].get("annotations", {}) or {}).get(ANN_CORDONED_AT)
    return float(cordoned_at) if cordoned_at else None


def holds_gpu(pod: dict[str, Any]) -> bool:
    """The pod holds the node's devices: nvidia.com/* in a container's requests or limits (the device plugin's), or,
    on a node that hands them out through Dynamic Resource Allocation (devices DRA), ResourceClaims it names
    (spec.resourceClaims): there no pod asks for nvidia.com/gpu, and a pod on a GPU node claims its GPUs (with their
    EFA interfaces) that way."""
    if pod.get("spec", {}).get("resourceClaims"):
        return True
    for container in pod.get("spec", {}).get("containers", []) or []:
        resources = container.get("resources", {}) or {}
        for section in ("requests", "limits"):
            if any(name.startswith(GPU_PREFIX) for name in (resources.get(section) or {})):
                return True
    return False


def _owner(pod: dict[str, Any]) -> dict[str, Any] | None:
    owners = pod.get("metadata", {}).get("ownerReferences", []) or []
    return next((o for o in owners if o.get("controller")), None)


def evictable(pod: dict[str, Any]) -> bool:
    owner = _owner(pod)
    if owner is not None and owner.get("kind") == "DaemonSet":
        return False
    phase = pod.get("status", {}).get("phase")
    return phase in ("Pending", "Running") and holds_gpu(pod) and not pod.get("metadata", {}).get("deletionTimestamp")


def _ref(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def pod_ready(pod: dict[str, Any]) -> bool:
    for cond in pod.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def replicas_all_ready(api: Api, pod: dict[str, Any]) -> bool:
    """For serving pods: are all the other replicas of the owning workload ready (so evicting this one keeps them)?

    The candidate itself is not missing capacity: the replica on the bad GPU is usually the NotReady one, and
    `readyReplicas >= replicas` would then wait for it forever. Its workload may be short by the candidate alone."""
    owner = _owner(pod)
    if owner is None or owner.get("kind") not in ("ReplicaSet", "StatefulSet"):
        return True  # a bare pod has no replicas elsewhere to wait for
    ns = pod["metadata"]["namespace"]
    plural = "replicasets" if owner["kind"] == "ReplicaSet" else "statefulsets"
    obj = api.get(f"/apis/apps/v1/namespaces/{ns}/{plural}/{owner['name']}")
    wanted = int(obj.get("spec", {}).get("replicas", 1) or 0)
    ready = int(obj.get("status", {}).get("readyReplicas", 0) or 0)
    others_ready = ready - (1 if pod_ready(pod) else 0)
    return others_ready >= wanted - 1


def held_unhealthy(node: dict[str, Any]) -> bool:
    """A node we cordoned (only True cordons) whose condition now reads Unknown: the check stopped giving a verdict
    after an unhealthy one. A degrading GPU often stalls DCGM itself (NVIDIA/NVSentinel#1748), so this is no
    all-clear: the node stays cordoned, and drained per class, until the check passes (False)."""
    annotations = node["metadata"].get("annotations", {}) or {}
    ours = annotations.get(ANN_CORDONED) == ME and bool(node.get("spec", {}).get("unschedulable"))
    return ours and _condition(node) is not None and condition_status(node) not in ("True", "False")


def eks_repairs(node: dict[str, Any], cfg: Config) -> str | None:
    """The reason EKS node auto repair will reboot or replace this node for, if it reports one now."""
    for cond in node.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == HARDWARE_CONDITION and cond.get("status") == "False":
            reason = str(cond.get("reason", ""))
            return reason if reason in cfg.eks_repaired_reasons else None
    return None


def plan_node(api: Api, node: dict[str, Any], pods: list[dict[str, Any]], cfg: Config, now: float) -> Actions:
    """Decide what to do with one node (pure apart from reading owner workloads)."""
    acts = Actions()
    name = node["metadata"]["name"]
    annotations = node["metadata"].get("annotations", {}) or {}
    cordoned = bool(node.get("spec", {}).get("unschedulable"))
    ours = annotations.get(ANN_CORDONED) == ME
    status = condition_status(node)
    if status == "False":
        if cordoned and ours:
            acts.uncordon.append(name)
        return acts
    held = status != "True" and held_unhealthy(node)
    if status != "True" and not held:
        since = not_true_since(node)
        if cordoned and ours and since is not None and now - since >= cfg.unknown_release_seconds:
            acts.uncordon.append(name)
        return acts
    if held:
        acts.waiting.append(f"{name}: DCGM verdict Unknown after unhealthy; kept cordoned until the check passes")
    if not cordoned:
        acts.cordon.append(name)
    if cfg.remediation != "CordonAndDrain":
        return acts
    candidates = [p for p in pods if evictable(p)]
    wclass = node["metadata"].get("labels", {}).get(LABEL_WORKLOAD_CLASS, "Training")
    repaired = eks_repairs(node, cfg)
    if repaired:
        # EKS owns this fault class: its repair wait is the only grace left, so every GPU pod goes now, through the
        # Eviction API (PodDisruptionBudgets still apply), rather than being cut off by the reboot or replacement.
        acts.waiting.append(f"{name}: EKS node auto repair owns {repaired}: GPU pods evicted before its repair")
        acts.evict += [_ref(p) for p in candidates]
    elif wclass in ("Training", "Batch"):
        acts.evict += [_ref(p) for p in candidates]
    elif wclass == "Inference":
        # NotReady replicas first: they serve nothing, and the one on the bad GPU is usually among them.
        for pod in sorted(candidates, key=pod_ready):
            if not acts.evict and replicas_all_ready(api, pod):
                acts.evict.append(_ref(pod))
            else:
                acts.waiting.append(f"{_ref(pod)}: waiting for serving capacity")
    else:  # Interactive
        since = float(annotations.get(ANN_CORDONED_AT, now)) if ours else now
        if now - since >= cfg.interactive_grace_seconds:
            acts.evict += [_ref(p) for p in candidates]
        else:
            acts.waiting += [f"{_ref(p)}: interactive grace period" for p in candidates]
    return acts


def apply(api: Api, acts: Actions, now: float, cfg: Config) -> None:
    if cfg.dry_run:
        return
    for name in acts.cordon:
        api.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": True}, "metadata": {"annotations": {ANN_CORDONED: ME, ANN_CORDONED_AT: str(int(now))}}})
    for name in acts.uncordon:
        api.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": False}, "metadata": {"annotations": {ANN_CORDONED: None, ANN_CORDONED_AT: None}}})
    for ref in acts.evict:
        ns, pod = ref.split("/", 1)
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": ns}}
        try:
            api.post(f"/api/v1/namespaces/{ns}/pods/{pod}/eviction", body)
        except Exception as exc:  # 429: a PodDisruptionBudget says not now; retried next pass
            print(json.dumps({"evict": ref, "deferred": str(exc)}), flush=True)


def run_once(api: Api, cfg: Config, now: float) -> dict[str, Actions]:
    nodes = api.get(f"/api/v1/nodes?labelSelector={LABEL_NODE_GROUP}")["items"]
    done: dict[str, Actions] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        pods: list[dict[str, Any]] = []
        if condition_status(node) == "True" or held_unhealthy(node):
            pods = api.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{name}")["items"]
        acts = plan_node(api, node, pods, cfg, now)
        apply(api, acts, now, cfg)
        if acts.cordon or acts.uncordon or acts.evict or acts.waiting:
            print(json.dumps({"node": name, **acts.__dict__}), flush=True)
        done[name] = acts
    return done


def main() -> None:  # pragma: no cover - runs in the cluster
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from kube import Kube

    cfg = Config.from_env()
    interval = int(os.environ.get("INTERVAL_SECONDS", "30"))
    api = Kube()
    while True:
        try:
            run_once(api, cfg, time.time())
        except Exception as exc:
            print(json.dumps({"error": str(exc)}), flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    main()
