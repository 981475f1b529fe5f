"""compare two synth trees for review: changes per stage, GPU node replacements, team quotas, cost (exit 0)

Why, with sources: docs/policies-and-diff.md, "Design notes", gpufleet/commands/diff.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

from gpufleet.review import impact, running_work
from gpufleet.review import summary as diff_report
from gpufleet.tree.read import NotATree, SynthTree, describe_fleet, read_tree

EXIT_OK, EXIT_USAGE = 0, 2


def diff_trees(old: SynthTree, new: SynthTree) -> impact.Report:
    a, b = _by_id(old), _by_id(new)
    report = impact.compare(
        a, b, stages=_stage_order(old, new), environment=new.plan.get("environment") or old.plan.get("environment")
    )
    return dataclasses.replace(report, work=tuple(running_work.effects(a, b, report.nodes)))


def _by_id(tree: SynthTree) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in tree.resources}


def _stage_order(old: SynthTree, new: SynthTree) -> list[str]:
    names: list[str] = []
    for tree in (new, old):
        for stage in tree.plan.get("stages", []):
            if stage.get("name") not in names:
                names.append(stage["name"])
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "old",
        help=(
            "the synth tree before the change (e.g. of the pull request's base commit); a path that does not exist"
            " is an empty fleet"
        ),
    )
    parser.add_argument("new", help="the synth tree after the change")
    parser.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="text (default) or markdown (a pull request comment body)",
    )


def empty_tree(like: SynthTree) -> SynthTree:
    """The tree of a fleet that deploys nothing yet: `like`'s identity and environment, no stage, no resource."""
    return SynthTree(
        plan={"fleet": like.fleet, "environment": like.plan.get("environment"), "stages": []}, resources=[]
    )


def stack_trees(directory: str) -> dict[str, str] | None:
    """A directory of one tree per stack (`gpufleet synth --env <env>.<cluster> --out DIR/<env>.<cluster>` for each
    cluster of clusters[]): stack name -> path; None for a tree itself, or anything else."""
    if not os.path.isdir(directory) or os.path.lexists(os.path.join(directory, "plan.json")):
        return None
    found = {
        name: os.path.join(directory, name)
        for name in sorted(os.listdir(directory))
        if os.path.isfile(os.path.join(directory, name, "plan.json"))
    }
    return found or None


def _is_manager(tree: SynthTree) -> bool:
    return any(str(r.get("type", "")).endswith(":MultiKueueConfig") for r in tree.resources)


def _workers_order(trees: list[SynthTree]) -> list[str]:
    """The workers as a manager's MultiKueueConfig lists them (the newest tree's first)."""
    for tree in trees:
        for r in tree.resources:
            if str(r.get("type", "")).endswith(":MultiKueueConfig"):
                inputs = r.get("inputs") or {}
                obj = inputs.get("object") if isinstance(inputs.get("object"), dict) else inputs
                clusters = ((obj or {}).get("spec") or {}).get("clusters")
                if isinstance(clusters, list):
                    return [str(c) for c in clusters]
    return []


@dataclasses.dataclass(frozen=True, slots=True)
class StackDiff:
    stack: str
    role: str  # Manager | Worker | "" (a tree of no MultiKueue)
    state: str  # changed | added | removed
    report: impact.Report
    old: str
    new: str


def fleet_diff(old_dir: str, new_dir: str) -> list[StackDiff]:
    """Each stack's diff, in deploy order: the workers in the manager's MultiKueueConfig order, any other stack, then
    the manager (docs/multi-cluster.md).

    Why: docs/policies-and-diff.md, "Design notes", diff.fleet_diff."""
    old_stacks = stack_trees(old_dir) or {}
    new_stacks = stack_trees(new_dir) or {}
    read: dict[str, tuple[SynthTree | None, SynthTree | None]] = {}
    for stack in sorted(set(old_stacks) | set(new_stacks)):
        a = read_tree(old_stacks[stack]) if stack in old_stacks else None
        b = read_tree(new_stacks[stack]) if stack in new_stacks else None
        read[stack] = (a, b)
    order = _workers_order([t for pair in read.values() for t in reversed(pair) if t is not None])

    def cluster(stack: str) -> str:
        return stack.partition(".")[2]

    def rank(stack: str) -> tuple[int, int, str]:
        trees = [t for t in read[stack] if t is not None]
        manager = any(_is_manager(t) for t in trees)
        position = order.index(cluster(stack)) if cluster(stack) in order else len(order)
        return (1 if manager else 0, position, stack)

    out = []
    for stack in sorted(read, key=rank):
        a, b = read[stack]
        state = "changed" if a is not None and b is not None else ("added" if b is not None else "removed")
        old_tree = a if a is not None else empty_tree(b)  # type: ignore[arg-type]  # one of them is a tree
        new_tree = b if b is not None else empty_tree(old_tree)
        manager = _is_manager(new_tree) or _is_manager(old_tree)
        role = "Manager" if manager else ("Worker" if cluster(stack) in order else "")
        out.append(
            StackDiff(
                stack=stack,
                role=role,
                state=state,
                report=diff_trees(old_tree, new_tree),
                old=old_stacks.get(stack, os.path.join(old_dir, stack)),
                new=new_stacks.get(stack, os.path.join(new_dir, stack)),
            )
        )
    return out


def _summary_rows(diffs: list[StackDiff]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        ("#", "stack", "role", "stack is", "added", "removed", "changed", "replaced", "GPU nodes replaced or rolled")
    ]
    for i, d in enumerate(diffs, 1):
        actions = [c.action for c in d.report.changes]
        nodes = [n for n in d.report.nodes if n.gpu and n.action in ("replace", "roll")]
        rows.append(
            (
                str(i),
                d.stack,
                d.role or "-",
                d.state,
                str(actions.count("add")),
                str(actions.count("remove")),
                str(actions.count("update")),
                str(actions.count("replace")),
                ", ".join(n.node_group for n in nodes) or "-",
            )
        )
    return rows


def fleet_text(diffs: list[StackDiff], old: str, new: str, markdown: bool) -> str:
    rows = _summary_rows(diffs)
    head = f"gpufleet diff {old} -> {new}: {len(diffs)} stacks, in the order they deploy"
    if markdown:
        lines = [f"### {head}", "", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    else:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [head, ""] + ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out = "\n".join(lines) + "\n"
    render = diff_report.markdown if markdown else diff_report.text
    for d in diffs:
        out += "\n" + render(d.report, d.old, d.new, old_absent=d.state == "added")
    return out


def run(args: argparse.Namespace) -> int:
    if stack_trees(args.new) is not None and (not os.path.lexists(args.old) or stack_trees(args.old) is not None):
        try:
            diffs = fleet_diff(args.old, args.new)
        except NotATree as exc:
            print(f"gpufleet diff: error: not a synth tree: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(fleet_text(diffs, args.old, args.new, args.format == "markdown"), end="")
        return EXIT_OK
    # Only a path that is not there at all is an empty fleet; an empty directory, a file or a dangling link stays
    # an error below (it is something, just not a tree).
    old_absent = not os.path.lexists(args.old)
    trees = []
    for directory in (args.new,) if old_absent else (args.old, args.new):
        try:
            trees.append(read_tree(directory))
        except NotATree as exc:
            print(f"gpufleet diff: error: {directory} is not a synth tree: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if old_absent:
        print(
            f"gpufleet diff: note: {args.old} does not exist: compared with an empty fleet (every resource is added)",
            file=sys.stderr,
        )
        trees.insert(0, empty_tree(trees[0]))
    old, new = trees
    if old.fleet != new.fleet:
        print(
            f"gpufleet diff: warning: the trees are of different fleets: {args.old} of {describe_fleet(old.fleet)}, "
            f"{args.new} of {describe_fleet(new.fleet)}",
            file=sys.stderr,
        )
    report = diff_trees(old, new)
    render = diff_report.markdown if args.format == "markdown" else diff_report.text
    print(render(report, args.old, args.new, old_absent=old_absent), end="")
    return EXIT_OK
