"""What a rollout plan is made of: resources (by id, with deploy-time references), gates, each stage's content and
the plan of the eight stages (built by gpufleet.plan.rollout).

Why, with sources: docs/architecture.md, "Design notes", gpufleet/plan/parts.py.
"""

from __future__ import annotations

import json
import re
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.facts import stages
from gpufleet.spec.fleet import Fleet, NodeGroup


@dataclass(frozen=True, slots=True)
class Ref:
    """A deploy-time value: attribute `attribute` of resource `resource` (e.g. the cluster's endpoint).

    Why: docs/architecture.md, "Design notes", parts.Ref."""

    resource: str
    attribute: str

    def __str__(self) -> str:
        return f"<ref:{self.resource}.{self.attribute}>"

    def steps(self) -> list[str]:
        """The attribute path split into names and `[n]` indexes: `a.b[0].c` -> ["a", "b", "[0]", "c"]."""
        return re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]", self.attribute)


@dataclass(frozen=True, slots=True, init=False)
class Concat:
    """A string built from literal parts and Refs (e.g. a kubeconfig from the cluster's endpoint and CA)."""

    parts: tuple[str | Ref, ...]

    def __init__(self, *parts: str | Ref) -> None:
        object.__setattr__(self, "parts", tuple(parts))

    def __str__(self) -> str:
        return "".join(str(p) for p in self.parts)


_MARK = "\u0001ref{}\u0001"  # json.dumps writes it as the escaped text matched below
_MARKED = re.compile(r"\\u0001ref([0-9]+)\\u0001")


def json_document(doc: Any) -> str | Concat:
    """`doc` as indented JSON; Refs inside it become deploy-time strings (e.g. an IAM role's ARN in a key policy)."""
    refs: list[Ref] = []

    def mark(value: Any) -> Any:
        if isinstance(value, Ref):
            refs.append(value)
            return _MARK.format(len(refs) - 1)
        if isinstance(value, abc.Mapping):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(doc), indent=2)
    if not refs:
        return text
    pieces = _MARKED.split(text)  # literal, index, literal, index, ..., literal
    return Concat(*(refs[int(p)] if i % 2 else p for i, p in enumerate(pieces)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """One resource to register: the Pulumi type token, a unique id (its logical name) and its inputs.

    Why: docs/architecture.md, "Design notes", parts.Resource."""

    id: str
    type: str
    args: Mapping[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: tuple[str, ...] = ()
    # Input paths the API server will not update in place: a change replaces the resource (Pulumi replaceOnChanges),
    # deleting it first when its name is fixed (deleteBeforeReplace).
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    depends_on: tuple[str, ...] = ()
    provider: str | None = None  # id of the explicit provider resource (aws or kubernetes) this one uses
    # Invokes (data sources) are not registered resources but their results are referenced like one.
    lookup: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    """A verification that must pass before the next stage is created (a Job the next stage depends on)."""

    name: str
    resource: str  # id of the Job resource
    expectation: str  # what passing means, for plan.md


@dataclass(frozen=True, slots=True, kw_only=True)
class StageContent:
    """What a stage builder returns."""

    resources: tuple[Resource, ...] = ()
    gates: tuple[Gate, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # markdown lines for plan.md (sizes, contracts, thresholds)


def _none(group: NodeGroup) -> None:
    return None


def _no_labels(group: NodeGroup) -> dict[str, str]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class AtFoundation:
    """What a later stage puts into the foundation stage when the environment deploys it (`at_foundation(ctx)` of
    its builder): what the GPU Operator mounts or reads and what the node groups carry must exist when they are
    created, so the stage that owns a setting cannot create it later in stage order."""

    node_labels: Callable[[NodeGroup], dict[str, str]] = _no_labels
    bottlerocket_settings: Callable[[NodeGroup], dict[str, Any] | None] = _none
    node_repair: Callable[[NodeGroup], dict[str, Any] | None] = _none
    operator_values: tuple[dict[str, Any], ...] = ()
    # Objects the operator's operands read when they start: ConfigMaps in its namespace, the RBAC they need.
    operator_configmaps: tuple[dict[str, Any], ...] = ()


def bottlerocket_settings(group: NodeGroup, parts: Sequence[AtFoundation]) -> dict[str, Any] | None:
    """The keys every part puts into the group's `[settings.kubelet-device-plugins.nvidia]` table, merged in order;
    None when no part has any."""
    found = [t for part in parts if (t := part.bottlerocket_settings(group)) is not None]
    return {k: v for t in found for k, v in t.items()} if found else None


@dataclass(frozen=True, slots=True, kw_only=True)
class StagePlan:
    index: int
    name: stages.StageName
    included: bool
    content: StageContent

    @property
    def directory(self) -> str:
        return stages.directory(self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutPlan:
    fleet: Fleet
    environment: str
    through: stages.StageName
    stages: tuple[StagePlan, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(w for s in self.stages if s.included for w in s.content.warnings)

    def included(self) -> Iterator[StagePlan]:
        return (s for s in self.stages if s.included)


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildContext:
    """What a stage builder sees: the merged fleet of one environment and how far its rollout goes.

    Why: docs/architecture.md, "Design notes", parts.BuildContext."""

    fleet: Fleet
    environment: str
    through: stages.StageName

    def includes(self, stage: stages.StageName) -> bool:
        return stages.included(stage, self.through)


Builder = Callable[[BuildContext], StageContent]


def refs_of(value: Any) -> list[Ref]:
    """Every Ref inside a resource's args, in order."""
    found: list[Ref] = []
    _collect_refs(value, found)
    return found


# Most of a resource's args are strings and numbers: they are passed over by their exact type, without a call or an
# isinstance check each (here and in components/factory.py `resolve`).
# Why: docs/architecture.md, "Design notes", parts.LEAVES.
LEAVES = frozenset({str, int, float, bool, type(None)})


def _collect_refs(value: Any, found: list[Ref]) -> None:
    children: Iterable[Any]
    if type(value) is dict or isinstance(value, abc.Mapping):  # a plain dict skips even the cached ABC lookup
        children = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    elif isinstance(value, Ref):
        found.append(value)
        return
    elif isinstance(value, Concat):
        children = value.parts
    else:
        return
    for child in children:
        if type(child) not in LEAVES:
            _collect_refs(child, found)


def references(plan: RolloutPlan) -> dict[str, set[Ref]]:
    """Resource id -> the Refs to it in the args of the included stages."""
    found: dict[str, set[Ref]] = {}
    for stage in plan.included():
        for res in stage.content.resources:
            for ref in refs_of(res.args):
                found.setdefault(ref.resource, set()).add(ref)
    return found


def outputs_read(plan: RolloutPlan) -> dict[str, frozenset[str]]:
    """Resource id -> the outputs of it that Refs of the included stages read (each Ref's first attribute step)."""
    return {rid: frozenset(ref.steps()[0] for ref in refs) for rid, refs in references(plan).items()}


def check_order(plan: RolloutPlan) -> list[str]:
    """Problems with references: unknown ids, duplicate ids, or a stage reaching into a later stage."""
    problems: list[str] = []
    stage_of: dict[str, int] = {}
    for stage in plan.stages:
        for res in stage.content.resources:
            if res.id in stage_of:
                problems.append(f"duplicate resource id {res.id}")
            stage_of[res.id] = stage.index
    for stage in plan.stages:
        for res in stage.content.resources:
            for target in sorted(_dependencies(res)):
                if target not in stage_of:
                    problems.append(f"{res.id} references unknown resource {target}")
                elif stage_of[target] > stage.index:
                    problems.append(
                        f"{res.id} (stage {stage.index}) references {target} of later stage {stage_of[target]}"
                    )
    return problems


def _dependencies(res: Resource) -> set[str]:
    return {r.resource for r in refs_of(res.args)} | set(res.depends_on) | ({res.provider} if res.provider else set())


def readiness(stage: StagePlan) -> tuple[str, ...]:
    """What the next stage waits for: the stage's gates and every resource of the stage that nothing else of the
    stage references or depends on.

    Why: docs/architecture.md, "Design notes", parts.readiness."""
    registered = [r for r in stage.content.resources if not r.lookup]
    used = {d for r in registered for d in {ref.resource for ref in refs_of(r.args)} | set(r.depends_on)}
    gates = {g.resource for g in stage.content.gates}
    return tuple(r.id for r in registered if r.id in gates or r.id not in used)


def ordered(resources: tuple[Resource, ...]) -> tuple[Resource, ...]:
    """Stable topological order within a stage: a resource comes after what it references in that stage."""
    ids = {r.id for r in resources}
    done: set[str] = set()
    out: list[Resource] = []
    pending = list(resources)
    while pending:
        progressed = False
        for res in list(pending):
            if (_dependencies(res) & ids) <= done:
                out.append(res)
                done.add(res.id)
                pending.remove(res)
                progressed = True
        if not progressed:
            raise AssertionError("dependency cycle among: " + ", ".join(r.id for r in pending))
    return tuple(out)


def render_table(plan: RolloutPlan) -> str:
    """The plan as a text table for `gpufleet plan`."""
    header = ("#", "stage", "included", "resources", "gates", "what it brings")
    rows = [header]
    for s in plan.stages:
        rows.append(
            (
                str(s.index),
                s.name,
                "yes" if s.included else "no",
                str(len([r for r in s.content.resources if not r.lookup])),
                ", ".join(g.name for g in s.content.gates) or "-",
                stages.WHAT[s.name],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = [
        (
            f"fleet {plan.fleet.name}, environment {plan.environment}: rollout through {plan.through} (stage"
            f" {stages.index(plan.through)} of {len(stages.STAGES)})"
        ),
        "",
    ]
    for r in rows:
        # zip stops before the last column, which is not padded
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    if plan.warnings:
        lines.append("")
        lines.extend(f"warning: {w}" for w in plan.warnings)
    return "\n".join(lines)
