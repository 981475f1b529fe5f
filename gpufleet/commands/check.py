"""run the fleet policies over a synth tree and print each finding with its fix (exit 1 on a mandatory violation)

Why, with sources: docs/policies-and-diff.md, "Design notes", gpufleet/commands/check.py.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpufleet.policies.rules import MANDATORY, RULES, PolicyFinding, evaluate
from gpufleet.tree.read import NotATree, read_tree

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


def render(findings: list[PolicyFinding], resource_count: int, directory: str) -> str:
    lines = []
    for f in findings:
        lines.append(f"{f.severity.upper()} {f.rule} {f.resource or '-'}: {f.message}")
        lines.append(f"  fix: {f.hint}")
    mandatory = sum(1 for f in findings if f.severity == MANDATORY)
    advisory = len(findings) - mandatory
    verdict = "FAILED" if mandatory else "passed"
    lines.append(
        f"{directory}: {verdict}: {len(RULES)} rules over {resource_count} resources: "
        f"{mandatory} mandatory violation{'s' * (mandatory != 1)}, {advisory} advisory finding{'s' * (advisory != 1)}"
    )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="a synth tree (the --out of `gpufleet synth`, e.g. out/prod)")


def run(args: argparse.Namespace) -> int:
    try:
        resources = read_tree(args.dir).resources
    except NotATree as exc:
        print(f"gpufleet check: error: {args.dir} is not a synth tree: {exc}", file=sys.stderr)
        return EXIT_USAGE
    code, text = report(resources, args.dir)
    print(text)
    return code


def report(resources: list[dict[str, Any]], directory: str) -> tuple[int, str]:
    """(exit code, text) of the policies over the resources of the tree at `directory`."""
    findings = evaluate(resources)
    return EXIT_VIOLATION if any(f.severity == MANDATORY for f in findings) else EXIT_OK, render(
        findings, len(resources), directory
    )
