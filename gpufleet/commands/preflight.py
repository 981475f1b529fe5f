"""check the AWS account against one environment's fleet before anything is created

Why, with sources: docs/commands.md, "Design notes", gpufleet/commands/preflight.py.
"""

from __future__ import annotations

import argparse
import os

from gpufleet.preflight import clients as aws
from gpufleet.preflight.clients import ApiError, Clients
from gpufleet.preflight.core import CHECKS, DEFAULT_DEADLINE_S
from gpufleet.preflight.core import preflight as run_checks
from gpufleet.preflight.findings import AccountFinding, blocking, ordered, render
from gpufleet.preflight.stack import check_stack_region
from gpufleet.rules.pipeline import open_spec
from gpufleet.spec.fleet import Fleet

__all__ = ["ApiError", "Clients", "AccountFinding", "add_arguments", "preflight", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", nargs="?", default="fleet.yaml", help="the fleet spec (default: fleet.yaml)")
    parser.add_argument("--env", required=True, help="the environment (stack) whose cluster and node groups to check")
    parser.add_argument(
        "--deadline",
        type=_seconds,
        default=DEFAULT_DEADLINE_S,
        metavar="SECONDS",
        help=f"stop after this long and report what was found so far as blocking (default: {DEFAULT_DEADLINE_S:g})",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 3600 seconds")
    return value


def preflight(fleet: Fleet, clients: Clients, deadline: float | None = None) -> list[AccountFinding]:
    """Every finding for `fleet`, read through `clients` (see gpufleet.preflight.core)."""
    return run_checks(fleet, clients, deadline)


def run(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)  # SpecError: rendered by gpufleet.cli, exit 1
    fleet = validated.fleet(args.env)
    region = fleet.cluster.region
    try:
        findings = preflight(fleet, aws.make_clients(region), args.deadline)
    except ApiError as exc:  # no session could be built (a broken profile, say)
        findings = [exc.finding()]
    findings = ordered([*check_stack_region(fleet, args.spec, args.env), *findings])
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    subject = f"{fleet.name}/{args.env} in {region}" + (f" via AWS_ENDPOINT_URL={endpoint}" if endpoint else "")
    print(render(subject, findings, len(CHECKS)))
    return 1 if blocking(findings) else 0
