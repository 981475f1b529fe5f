"""Whether a pending pod makes the Cluster Autoscaler scale a node group up (from zero, or past its current size).

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/autoscaler.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.facts import catalog
from gpufleet.simulate.nodes import NodeModel
from gpufleet.simulate.scheduling import fit_request, insufficient, matches_node, untolerated
from gpufleet.simulate.workload import PodSpec


def _per_node(node: NodeModel, request: Mapping[str, int], pods: int) -> int:
    """Pods of this request one idle node of the group holds (0: none).

    Why: docs/explain-model.md, "Design notes", autoscaler._per_node."""
    offered = dict(node.allocatable)
    if node.node_pool is not None and node.template is not None:
        seen = node.template["resources"]
        offered.update({r: min(v, seen.get(r, 0)) for r, v in offered.items() if r not in ("cpu", "memory")})
    return min((offered.get(r, 0) // v for r, v in request.items() if v > 0), default=pods)


def nodes_needed(node: NodeModel, pod: PodSpec, pods: int) -> int:
    """Nodes of the group `pods` pods of this shape take (idle nodes, packed); on a Karpenter pool of several
    instance types, the NodeClaims of karpenter_launch."""
    if node.instance_options:
        return sum(n for _, n in karpenter_launch(node, pod, pods))
    return -(-pods // (_per_node(node, fit_request(pod), pods) or 1))


def _candidates(node: NodeModel, pod: PodSpec, pods: int) -> list[tuple[NodeModel, int]]:
    return [(o, _per_node(o, fit_request(pod), pods)) for o in node.instance_options if matches_node(pod, o.labels)]


def karpenter_launch(node: NodeModel, pod: PodSpec, pods: int) -> tuple[tuple[NodeModel, int], ...]:
    """The instance types and node counts a Karpenter pool of several instance types launches for `pods` pending
    pods of this shape: Karpenter packs pods onto a NodeClaim while one of the pool's instance types still fits all
    of them (its requirements, the pod's selectors, the resources), keeping the types that do as the NodeClaim's
    options, and opens the next NodeClaim when none does (kubernetes-sigs/karpenter
    pkg/controllers/provisioning/scheduling/scheduler.go add, nodeclaim.go CanAdd @ v1.14.1; its instance selection
    test "should schedule on an instance with enough resources": three pods on one node whose every option holds
    the three).

    Why: docs/explain-model.md, "Design notes", autoscaler.karpenter_launch."""
    candidates = _candidates(node, pod, pods)
    fitting = [(o, k) for o, k in candidates if k > 0]
    if not fitting:
        roomiest = max(
            (o for o, _ in candidates), key=lambda o: (o.allocatable["cpu"], o.allocatable["memory"]), default=node
        )
        return ((roomiest, -(-pods // (_per_node(roomiest, fit_request(pod), pods) or 1))),)
    most = max(k for _, k in fitting)
    full, rest = divmod(pods, most)
    out: dict[str, tuple[NodeModel, int]] = {}
    for count, holds in ((full, most), (1 if rest else 0, rest)):
        if count:
            option = next(o for o, k in fitting if k >= holds)
            out[option.instance_type] = (option, out.get(option.instance_type, (option, 0))[1] + count)
    return tuple(out.values())


def karpenter_option(node: NodeModel, pod: PodSpec, pods: int) -> NodeModel:
    """The node `pods` pods of this shape get on the group: on a Karpenter pool of several instance types, the
    type of karpenter_launch's first NodeClaim (the roomiest need: the full ones); elsewhere the group's node."""
    if not node.instance_options:
        return node
    return karpenter_launch(node, pod, pods)[0][0]


def scale_up_blocker(
    node: NodeModel, pod: PodSpec, tolerations: list[Mapping[str, Any]], pods: int
) -> tuple[str, str] | None:
    """(reason, fix) when the group cannot bring the nodes `pods` pods of this shape need; None when it can."""
    needed = nodes_needed(node, pod, pods)
    if needed <= node.min_size:
        return None  # the nodes exist already (idle fleet)
    if node.template is None:
        return (
            (
                f"node group {node.group} keeps {node.min_size} node(s) and nothing scales it up (cluster.autoscaler is"
                f" None); {needed} needed"
            ),
            f"set nodeGroups[{node.group}].scaling.minSize to {needed}, or cluster.autoscaler: Install",
        )
    if node.max_size < needed and node.reserved is not None:
        # maxSize may not exceed a targeted reservation (rules.py): growing means a larger reservation first.
        return (
            (
                f"node group {node.group} may grow to {node.max_size} node(s), within the {node.reserved} instance(s)"
                f" of the capacity reservation it targets; {pods} pod(s) of this shape need {needed}"
            ),
            (
                f"enlarge the reservation, then raise nodeGroups[{node.group}].capacity.reservation.instanceCount and"
                f" scaling.maxSize to {needed}; or ask for fewer pods"
            ),
        )
    if node.max_size < needed and node.node_pool is not None:
        # Karpenter launches no node past the pool's limits (kubernetes-sigs/karpenter pkg/controllers/provisioning: a
        # NodePool whose limits are exceeded is skipped); gpufleet's limit is maxSize nodes' GPUs.
        # Why: docs/explain-model.md, "Design notes", autoscaler.info.
        info = catalog.lookup(node.instance_type)
        seen = node.template["resources"] if node.template is not None else {}
        gpus = int(seen.get("nvidia.com/gpu", info.gpu_count if info is not None else 0))
        per = f", {gpus} per {node.instance_type}" if gpus else ""
        limit = f" (its limit nvidia.com/gpu: {node.max_size * gpus}{per})" if gpus else ""
        return (
            f"NodePool {node.node_pool} may launch {node.max_size} node(s){limit}; {pods} pod(s) of this shape need"
            f" {needed}",
            (
                f"raise nodeGroups[{node.group}].scaling.maxSize to {needed} (the NodePool's GPU limit follows it), or"
                " ask for fewer pods"
            ),
        )
    if node.max_size < needed:
        return (
            f"node group {node.group} may grow to {node.max_size} node(s); {pods} pod(s) of this shape need {needed}",
            f"raise nodeGroups[{node.group}].scaling.maxSize to {needed}, or ask for fewer pods",
        )
    return template_blocker(node, pod, tolerations)


def template_blocker(node: NodeModel, pod: PodSpec, tolerations: list[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(reason, fix) when the group's scale-up template does not take the pod (its labels, taints, resources)."""
    request = pod.request()
    template = node.template
    if template is None:
        return (
            f"node group {node.group} keeps {node.min_size} node(s) and nothing scales it up",
            f"set nodeGroups[{node.group}].scaling.minSize higher, or cluster.autoscaler: Install",
        )
    # A Karpenter pool's node may carry any combination of its requirements' values (nodes.karpenter_variants); the
    # Cluster Autoscaler's template is the one label map of the managed node group.
    variants = template.get("variants") or [{}]
    if not any(matches_node(pod, {**variant, **template["labels"]}) for variant in variants):
        return (
            f"the scale-from-zero template of node group {node.group} does not carry the labels the pod selects",
            "select the group by gpufleet.io/node-group",
        )
    bad = untolerated(template["taints"], tolerations)
    if bad:
        return (
            (
                f"the scale-from-zero template of node group {node.group} has taint"
                f" {bad[0]['key']}={bad[0]['value']}:{bad[0]['effect']} the pod does not tolerate"
            ),
            f"add a toleration for {bad[0]['key']}",
        )
    missing = insufficient(request, template["resources"])
    if missing and node.node_pool is not None:
        seen = template["resources"]
        what = ", ".join(f"{r} {seen.get(r, 0)} (the pod asks for {request[r]})" for r in missing)
        return (
            (
                f"Karpenter makes no NodeClaim of NodePool {node.node_pool} for the pod: a {node.instance_type} offers"
                f" {what} as Karpenter sees it (EC2's instance type, the EC2NodeClass's efa-only interfaces and the"
                " pool's NodeOverlay; a resource it does not list counts as 0)"
            ),
            (
                "ask for at most what Karpenter sees, or include the stage whose device plugin advertises it (gpufleet"
                " renders the NodeOverlay that tells Karpenter)"
            ),
        )
    if missing:
        return (
            (
                f"the scale-from-zero template of node group {node.group} does not offer {', '.join(missing)} (beyond"
                " what its node-template resource tags give)"
            ),
            "include the stage whose device plugin advertises it in this environment",
        )
    return None
