"""write the reviewable tree of what `pulumi up` would register

`gpufleet synth --env ENV [--out DIR]` writes the whole tree or nothing (gpufleet.tree.output).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from gpufleet.base.collector import rare_collections
from gpufleet.base.errors import SpecError, UsageError, sort_issues
from gpufleet.base.interrupts import signals_deferred
from gpufleet.commands import EXIT_OK, print_warnings
from gpufleet.commands import plan as plan_command
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import open_spec
from gpufleet.simulate.self_check import Contradictions, canonical_rows, contradictions, will_it_run
from gpufleet.simulate.verdict import fleet_model
from gpufleet.spec.fleet import Fleet
from gpufleet.tree.output import Staging, TargetRefused, prepare
from gpufleet.tree.write import Tree, build_tree


@rare_collections()
def synth_tree(fleet: Fleet, environment: str) -> tuple[RolloutPlan, Tree]:
    """The tree for one environment. Imports the Pulumi layer only here, when synth actually runs.

    Raises Contradictions (before anything is recorded) when a workload gpufleet renders, or the canonical workload
    of a node group, would not run on this fleet."""
    from gpufleet.components.recording import record

    plan = build_plan(fleet, environment)
    model = fleet_model(plan)
    rows = canonical_rows(model)
    issues = contradictions(model, rows)
    if issues:
        raise Contradictions(issues)
    return plan, build_tree(plan, record(plan), plan_markdown(plan, will_it_run(rows)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    plan_command.add_arguments(parser)
    parser.add_argument(
        "--out",
        help="output directory (default: out/<env>): absent, empty, or a tree gpufleet wrote, which is replaced whole",
    )


def _discard(staging: Staging | None) -> None:
    if staging is not None:
        staging.discard()


def run(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    print_warnings(validated)
    out = args.out if args.out is not None else f"out/{args.env}"
    fleet = validated.fleet(args.env)  # with clusters[], one cluster's stack
    staging: Staging | None = None
    try:
        # A signal between creating the staging directory and knowing it would leave it behind: it waits.
        with signals_deferred():
            staging = prepare(out, args.spec)  # refuses a foreign target and proves it writable before synthesising
        plan, tree = synth_tree(fleet, args.env)
        staging.commit(tree, keep_deferred=True)
    except Contradictions as exc:  # the fleet contradicts itself: an error of the spec, nothing written
        _discard(staging)
        raise SpecError(
            validated.source,
            sort_issues(validated.source, [replace(i, context=f"environment {args.env}") for i in exc.issues]),
        ) from None
    except TargetRefused as exc:  # refused up front, or the target changed while synthesising
        _discard(staging)
        raise UsageError(f"--out {out}: {exc}") from None
    except BaseException:  # an error, SIGINT or SIGTERM: leave nothing behind
        _discard(staging)
        raise
    counts = sum(1 for path in tree.files if "/" in path)
    print(f"wrote {out}: {counts} files, stages {', '.join(s.name for s in plan.included())}")
    return EXIT_OK
