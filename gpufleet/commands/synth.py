"""write the reviewable tree of what `pulumi up` would register

`gpufleet synth --env ENV [--out DIR]` writes the whole tree or nothing (gpufleet.output).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from gpufleet.commands import EXIT_OK, print_warnings
from gpufleet.commands import plan as plan_command
from gpufleet.errors import SpecError, UsageError, sort_issues
from gpufleet.model.check import Contradictions
from gpufleet.output import TargetRefused, prepare
from gpufleet.pipeline import open_spec
from gpufleet.synth import synth_tree


def add_arguments(parser: argparse.ArgumentParser) -> None:
    plan_command.add_arguments(parser)
    parser.add_argument(
        "--out",
        help="output directory (default: out/<env>): absent, empty, or a tree gpufleet wrote, which is replaced whole",
    )


def run(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    print_warnings(validated)
    out = args.out if args.out is not None else f"out/{args.env}"
    try:
        staging = prepare(out, args.spec)  # refuses a foreign target and proves it writable before synthesising
    except TargetRefused as exc:
        raise UsageError(f"--out {out}: {exc}") from None
    try:
        plan, tree = synth_tree(validated.environments[args.env], args.env)
        staging.commit(tree)
    except Contradictions as exc:  # the fleet contradicts itself: an error of the spec, nothing written
        staging.discard()
        raise SpecError(
            validated.source,
            sort_issues(validated.source, [replace(i, context=f"environment {args.env}") for i in exc.issues]),
        ) from None
    except TargetRefused as exc:  # the target changed while synthesising
        staging.discard()
        raise UsageError(f"--out {out}: {exc}") from None
    except BaseException:  # an error, SIGINT or SIGTERM: leave nothing behind
        staging.discard()
        raise
    counts = sum(1 for path in tree.files if "/" in path)
    print(f"wrote {out}: {counts} files, stages {', '.join(s.name for s in plan.included())}")
    return EXIT_OK
