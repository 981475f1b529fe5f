"""parse, schema-check and rule-check the spec

`gpufleet validate` prints the environments of a valid spec; issues go to stderr (gpufleet.cli renders them).
"""

from __future__ import annotations

import argparse

from gpufleet.commands import EXIT_OK, print_warnings, spec_argument
from gpufleet.rules.pipeline import open_spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    spec_argument(parser)
    parser.add_argument("--env", help="validate only this environment (default: every environment)")


def run(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    print_warnings(validated)
    envs = ", ".join(validated.environments)
    print(f"{args.spec}: valid (environments: {envs})")
    return EXIT_OK
