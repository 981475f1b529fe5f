"""Pods that already hold a group's nodes, and the kube-scheduler preemption that makes room for a new pod among them.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/preemption.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.nodes import NodeModel
from gpufleet.simulate.scheduling import insufficient, is_extended
from gpufleet.simulate.workload import PodSpec, Workload, workload
from gpufleet.spec.names import LABEL_NODE_GROUP

PREEMPT_LOWER = "PreemptLowerPriority"
NEVER = "Never"


@dataclass(frozen=True, slots=True, kw_only=True)
class PodPriority:
    value: int
    policy: str  # PreemptLowerPriority | Never
    class_name: str  # "" without a class

    @property
    def preempts(self) -> bool:
        return self.policy != NEVER

    def text(self) -> str:
        return f"{self.class_name} {self.value}" if self.class_name else f"{self.value} (no priority class)"


# eq=False: a resident is hashed and compared by identity; one object stands for every replica of a pod set.
@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Resident:
    owner: str  # "<Kind> <namespace>/<name>"
    priority: PodPriority
    request: Mapping[str, int]
    own: bool  # one of gpufleet's own standing pods (a headroom placeholder)


def priority_classes(plan: RolloutPlan) -> dict[str, PodPriority]:
    """The PriorityClasses the plan renders, by name."""
    out: dict[str, PodPriority] = {}
    for stage in plan.included():
        for res in stage.content.resources:
            obj = res.args.get("object") or {}
            if obj.get("kind") == "PriorityClass":
                name = str(obj["metadata"]["name"])
                out[name] = PodPriority(
                    value=int(obj["value"]), policy=str(obj.get("preemptionPolicy") or PREEMPT_LOWER), class_name=name
                )
    return out


def pod_priority(classes: Mapping[str, PodPriority], pod: PodSpec) -> PodPriority:
    """The Priority admission plugin's resolution.

    Why: docs/explain-model.md, "Design notes", preemption.pod_priority."""
    name = str(pod.raw.get("priorityClassName") or "")
    if name in classes:
        return classes[name]
    return PodPriority(value=0, policy=str(pod.raw.get("preemptionPolicy") or PREEMPT_LOWER), class_name="")


def standing(plan: RolloutPlan, classes: Mapping[str, PodPriority]) -> dict[str, tuple[Resident, ...]]:
    """gpufleet's own pods that hold GPU nodes while the fleet is idle, by node group: the replicas of every rendered
    Deployment whose pods select one node group and request one of its devices (the headroom placeholders)."""
    out: dict[str, list[Resident]] = {}
    for stage in plan.included():
        for res in stage.content.resources:
            obj = res.args.get("object")
            if not isinstance(obj, dict) or obj.get("kind") != "Deployment":
                continue
            wl = workload(obj)
            for ps in wl.pod_sets:
                group = ps.pod.node_selector.get(LABEL_NODE_GROUP)
                request = ps.pod.request()
                if group and any(is_extended(r) and v > 0 for r, v in request.items()):
                    resident = Resident(
                        owner=f"{wl.kind} {wl.namespace}/{wl.name}",
                        priority=pod_priority(classes, ps.pod),
                        request=request,
                        own=True,
                    )
                    out.setdefault(group, []).extend([resident] * ps.count)
    return {g: tuple(r) for g, r in out.items()}


def running(
    wl: Workload, classes: Mapping[str, PodPriority], placements: Iterable[tuple[int, str, int]]
) -> dict[str, list[Resident]]:
    """The residents of a workload that runs: (pod set index, node group, pods) as the verdict placed them."""
    out: dict[str, list[Resident]] = {}
    for index, group, count in placements:
        pod = wl.pod_sets[index].pod
        resident = Resident(
            owner=f"{wl.kind} {wl.namespace}/{wl.name}",
            priority=pod_priority(classes, pod),
            request=pod.request(),
            own=False,
        )
        out.setdefault(group, []).extend([resident] * count)
    return out


def after(
    residents: tuple[Resident, ...],
    outcome: Outcome,
    wl: Workload,
    classes: Mapping[str, PodPriority],
    pod: PodSpec,
    count: int,
) -> tuple[Resident, ...]:
    """The residents once `count` pods of `wl` took their place: its victims gone, those that got a node again back,
    and its own pods (the next pod set of the same workload meets them)."""
    left = list(residents)
    for victim, n in outcome.preempted.items():
        for _ in range(n):
            left.remove(victim)
    for victim, n in outcome.restarted.items():
        left += [victim] * n
    mine = Resident(
        owner=f"{wl.kind} {wl.namespace}/{wl.name}",
        priority=pod_priority(classes, pod),
        request=pod.request(),
        own=False,
    )
    return tuple(left + [mine] * count)


@dataclass(slots=True)
class _Node:
    free: dict[str, int]
    pods: list[Resident] = field(default_factory=list)

    def fits(self, request: Mapping[str, int]) -> bool:
        return not insufficient(request, self.free)

    def add(self, pod: Resident) -> None:
        self.pods.append(pod)
        for r, v in pod.request.items():
            self.free[r] = self.free.get(r, 0) - v

    def remove(self, pod: Resident) -> None:
        self.pods.remove(pod)
        for r, v in pod.request.items():
            self.free[r] = self.free.get(r, 0) + v


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """Where `placed` of the asked pods went, and what that did to the residents."""

    placed: int
    preempted: Mapping[Resident, int]  # residents evicted, by kind of resident, with their count
    on_existing: int  # pods placed on nodes that were running (free or freed by preemption)
    added: int  # nodes the autoscaler starts for the new pods
    restarted: Mapping[Resident, int]  # evicted residents that get a node again (new ones, while below maxSize)
    nodes_before: int  # nodes running before the new pods arrived
    held: int  # nodes holding residents the new pod may not preempt, at the end (its maxSize is shared with them)
    holders: tuple[str, ...]  # the owners of those residents
    max_size: int


def _victims(node: _Node, request: Mapping[str, int], priority: int) -> list[Resident] | None:
    """SelectVictimsOnNode: every lower-priority pod is a potential victim; with all of them gone the pod must fit;
    then victims are reprieved from the highest priority down while it still fits."""
    lower = [p for p in node.pods if p.priority.value < priority]
    trial = _Node(free=dict(node.free), pods=[p for p in node.pods if p not in lower])
    for p in lower:
        for r, v in p.request.items():
            trial.free[r] = trial.free.get(r, 0) + v
    if not trial.fits(request):
        return None
    victims = []
    for p in sorted(lower, key=lambda p: -p.priority.value):
        trial.add(p)
        if not trial.fits(request):
            trial.remove(p)
            victims.append(p)
    return victims


# pickOneNodeForPreemption's minSumPrioritiesScoreFunc adds MaxInt32+1 to every victim's priority "so that a node
# with a few pods with negative priority is not picked over a node with a smaller number of pods with the same
# negative priority" (pkg/scheduler/framework/preemption/preemption.go).
_SHIFT = 2**31


def _pick(candidates: list[tuple[int, list[Resident]]]) -> tuple[int, list[Resident]]:
    """pickOneNodeForPreemption: lowest highest-victim priority, then lowest sum of (priority + MaxInt32 + 1), then
    fewest victims (the first node in order on a tie)."""
    return min(
        candidates,
        key=lambda c: (
            max((v.priority.value for v in c[1]), default=-_SHIFT),
            sum(v.priority.value + _SHIFT for v in c[1]),
            len(c[1]),
        ),
    )


def schedule(
    node: NodeModel,
    residents: tuple[Resident, ...],
    request: Mapping[str, int],
    count: int,
    priority: PodPriority,
    scalable: bool,
) -> Outcome:
    """`count` pods of one shape and priority arrive, one after another, at a group whose nodes hold `residents`."""
    nodes: list[_Node] = [_Node(free=dict(node.allocatable)) for _ in range(node.min_size)]

    def start_node() -> _Node | None:
        if not scalable or len(nodes) >= node.max_size:
            return None
        nodes.append(_Node(free=dict(node.allocatable)))
        return nodes[-1]

    def settle(pod: Resident) -> bool:
        """A pending pod that preempts nothing: a node where it fits, else a new one."""
        target = next((n for n in nodes if n.fits(pod.request)), None) or start_node()
        if target is None or not target.fits(pod.request):
            return False
        target.add(pod)
        return True

    # The scheduler's queue sorts by priority (PrioritySort): higher residents first.
    for pod in sorted(residents, key=lambda p: -p.priority.value):
        settle(pod)
    before = len(nodes)
    arriving = Resident(owner="", priority=priority, request=request, own=False)
    preempted: dict[Resident, int] = {}
    placed = on_existing = 0
    pending: list[Resident] = []
    for _ in range(count):
        free = next((n for n in nodes if n.fits(request)), None)
        if free is None and priority.preempts:
            candidates = [
                (i, found) for i, n in enumerate(nodes) if (found := _victims(n, request, priority.value)) is not None
            ]
            if candidates:
                i, victims = _pick(candidates)
                for victim in victims:
                    nodes[i].remove(victim)
                    preempted[victim] = preempted.get(victim, 0) + 1
                    pending.append(victim)
                free = nodes[i]
        if free is not None:
            free.add(arriving)
            placed += 1
            on_existing += 1 if nodes.index(free) < before else 0
            continue
        target = start_node()
        if target is None or not target.fits(request):
            break
        target.add(arriving)
        placed += 1
    added = len(nodes) - before
    restarted: dict[Resident, int] = {}
    for pod in sorted(pending, key=lambda p: -p.priority.value):
        if settle(pod):
            restarted[pod] = restarted.get(pod, 0) + 1
    kept = [
        [p for p in n.pods if p is not arriving and not (priority.preempts and p.priority.value < priority.value)]
        for n in nodes
    ]
    held = sum(1 for k in kept if k)
    holders = tuple(dict.fromkeys(p.owner for k in kept for p in k))
    return Outcome(
        placed=placed,
        preempted=preempted,
        on_existing=on_existing,
        added=added,
        restarted=restarted,
        nodes_before=before,
        held=held,
        holders=holders,
        max_size=node.max_size,
    )


def describe(group: str, outcome: Outcome) -> list[str]:
    """The verdict's notes: which residents were preempted and what became of them."""
    notes = []
    for victim, n in outcome.preempted.items():
        back = outcome.restarted.get(victim, 0)
        what = "placeholder pod(s) of" if victim.own else "pod(s) of"
        fate = (
            f"{'their replacements bring' if n > 1 else 'its replacement brings'} up {back} new node(s)"
            if back == n
            else f"{n - back} wait for a node (node group {group} is at maxSize {outcome.max_size})"
            + (f", {back} get new nodes" if back else "")
        )
        notes.append(
            f"preempts {n} {what} {victim.owner} (priority {victim.priority.text()}) on node group {group}"
            f" (kube-scheduler preemption of lower-priority pods): {fate}"
        )
    return notes


def residents_json(preempted: Mapping[Resident, int]) -> list[dict[str, Any]]:
    return [
        {"owner": r.owner, "priority": r.priority.value, "pods": n, "placeholder": r.own} for r, n in preempted.items()
    ]
