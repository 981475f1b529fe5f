"""compare two synth trees for review: changes per stage, GPU node replacements, team quotas, cost (exit 0)

`gpufleet diff OLD_DIR NEW_DIR [--format text|markdown]`: resources added, removed and changed (with the changed
field paths) per stage; node groups that a change replaces or rolls, flagged with the reason; nvidia.com/gpu
quota changes per team; the fleet's monthly cost at min and max size. `--format markdown` prints a pull request
comment body. Resources are matched by logical name (their Pulumi identity); the comparison is of what would be
registered, so it needs neither credentials nor state. Both trees are verified first (gpufleet.tree.read);
trees of different fleets are compared with a warning. An OLD_DIR that does not exist is an empty fleet (a new
environment, or the first pull request of a fleet repository): every resource of NEW_DIR is added, exit 0. The
classification itself is in `gpufleet.review.impact`.
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


def run(args: argparse.Namespace) -> int:
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
