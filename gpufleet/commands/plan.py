"""print the staged rollout of one environment

`gpufleet plan --env ENV`: the table of stages, what each brings and whether the environment includes it; for a spec
with clusters[], the fleet-wide summary (the stacks in deploy order, the dispatch order, the quota per cluster) and
each cluster's table (`--env ENV.CLUSTER`: one cluster's).
"""

from __future__ import annotations

import argparse

from gpufleet.commands import EXIT_OK, print_warnings, spec_argument
from gpufleet.plan import fleet_summary
from gpufleet.plan.parts import render_table
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import open_spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec and --env, shared by synth."""
    spec_argument(parser)
    parser.add_argument("--env", required=True, help="the environment (stack) to plan")


def run(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    print_warnings(validated)
    stacks = validated.clusters(args.env)
    if stacks:  # clusters[]: the fleet-wide summary, then each cluster's stack
        print(fleet_summary.summary(args.env, stacks))
        return EXIT_OK
    print(render_table(build_plan(validated.fleet(args.env), args.env)))
    return EXIT_OK
