"""compare two synth trees for review: changes per stage, GPU node replacements, team quotas, cost (exit 0)

`gpufleet diff OLD_DIR NEW_DIR [--format text|markdown]`: resources added, removed and changed (with the changed
field paths) per stage; node groups that a change replaces or rolls, flagged with the reason; nvidia.com/gpu
quota changes per team; the fleet's monthly cost at min and max size. `--format markdown` prints a pull request
comment body. Resources are matched by logical name (their Pulumi identity); the comparison is of what would be
registered, so it needs neither credentials nor state. The classification itself is in `gpufleet.impact`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet import diff_report, impact

EXIT_OK, EXIT_USAGE = 0, 2


@dataclass(frozen=True, slots=True)
class Tree:
    """A synth tree as diff reads it: resources by id (inventory.json) and the plan summary (plan.json)."""

    resources: dict[str, dict[str, Any]]
    plan: dict[str, Any] = field(default_factory=dict)


def load_tree(directory: str | Path) -> Tree:
    root = Path(directory)
    inventory = json.loads((root / "inventory.json").read_text(encoding="utf-8"))
    if not isinstance(inventory, list):
        raise ValueError(f"{root / 'inventory.json'}: expected a list of resources")
    plan_path = root / "plan.json"
    plan = json.loads(plan_path.read_text(encoding="utf-8")) if plan_path.is_file() else {}
    return Tree(resources={str(r["id"]): r for r in inventory}, plan=plan)


def diff_trees(old: Tree, new: Tree) -> impact.Report:
    return impact.compare(old.resources, new.resources, stages=_stage_order(old, new), environment=new.plan.get("environment") or old.plan.get("environment"))


def _stage_order(old: Tree, new: Tree) -> list[str]:
    names: list[str] = []
    for tree in (new, old):
        for stage in tree.plan.get("stages", []):
            if stage.get("name") not in names:
                names.append(stage["name"])
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", help="the synth tree before the change (e.g. of the pull request's base commit)")
    parser.add_argument("new", help="the synth tree after the change")
    parser.add_argument("--format", choices=("text", "markdown"), default="text", help="text (default) or markdown (a pull request comment body)")


def run(args: argparse.Namespace) -> int:
    trees = []
    for directory in (args.old, args.new):
        try:
            trees.append(load_tree(directory))
        except (OSError, ValueError, KeyError) as exc:
            print(f"gpufleet diff: error: {directory} is not a synth tree: {exc}", file=sys.stderr)
            return EXIT_USAGE
    report = diff_trees(trees[0], trees[1])
    render = diff_report.markdown if args.format == "markdown" else diff_report.text
    print(render(report, args.old, args.new), end="")
    return EXIT_OK
