"""The commands that read a fleet spec: validate, plan, synth. Each module is one command, imported by the CLI only
when that command runs, with add_arguments(parser) and run(args) -> exit code like every command module."""

from __future__ import annotations

import argparse
import sys

from gpufleet.base.errors import render_issue
from gpufleet.rules.pipeline import Validated

EXIT_OK = 0


def spec_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", nargs="?", default="fleet.yaml", help="the fleet spec (default: fleet.yaml)")


def print_warnings(validated: Validated) -> None:
    for warning in validated.warnings:
        print(render_issue(validated.source, warning), file=sys.stderr)
