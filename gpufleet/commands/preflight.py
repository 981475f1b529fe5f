"""check the AWS account against one environment's fleet before anything is created

`gpufleet preflight [SPEC] --env ENV` reads (never writes) the AWS account and Region of the environment's
cluster and reports, per node group, what would make the rollout fail:

- every instance type exists and has the GPU model, count and memory gpufleet's catalog says;
- a pinned zone is a zone ID of the Region, and the instance type is offered there (or in the zones of the
  group's subnets), matched by zone ID, not name;
- EFA groups use instance types EC2 says support EFA;
- the subnets exist, are in the cluster's VPC, span at least two zones EKS accepts, and a pinned group's
  subnets are in its zone;
- a Capacity Block exists, is active (scheduled: a warning), is a Capacity Block of the group's instance
  type in the group's zone, and holds its maxSize;
- a targeted On-Demand Capacity Reservation exists, is active, is not a Capacity Block, matches the group's
  instance type, platform, tenancy and zone, and holds its maxSize (its count and free instances against the
  spec: warnings); open reservations of the type in the group's zones hold its instanceCount (a warning);
- the account's P and G vCPU quotas (On-Demand and Spot) cover the fleet at maxSize, Running warm pools
  included;
- the pinned AMI release is published for the cluster's Kubernetes version;
- each pinned EKS add-on version is one EKS offers for that Kubernetes version (eks:DescribeAddonVersions);
- the deploying identity (sts:GetCallerIdentity; an assumed role counts as its role) is one of cluster.admins, since
  the cluster grants its creator no access of its own (a warning in mode Existing);
- the Pulumi stack's `aws:region` (`<stackConfigDir>/Pulumi.<env>.yaml` beside the spec) is the spec's
  cluster.region.

Each finding prints as `error: nodeGroups/<name>: <what>` (or `warning:`) with a `fix:` line, then a summary
line. Exit 0 when nothing blocks, 1 when something does (or the spec is invalid), 2 on a usage error. AWS API
failures (no credentials, endpoint unreachable, access denied, a response that is not an AWS one) are findings,
never tracebacks. Time is bounded: connect and read timeouts are short (3 s and 10 s, two attempts), and the
whole run stops at `--deadline` (default 120 s) with a blocking finding, however slowly an endpoint drips.

AWS access is the standard chain: `boto3.session.Session(region_name=cluster.region)` with the usual
credential sources and endpoint settings. To run against a local emulator instead of AWS, start one (for
example `moto_server -p 5000`) and point every client at it:

    AWS_ENDPOINT_URL=http://127.0.0.1:5000 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \\
        gpufleet preflight fleet.yaml --env dev

(`AWS_ENDPOINT_URL_EC2`, `AWS_ENDPOINT_URL_SSM`, `AWS_ENDPOINT_URL_SERVICE_QUOTAS` route one service each.)
Emulators usually lack EC2 service quotas, EKS AMI parameters and capacity reservations; those checks then
report the failed call as a finding. The tests inject those clients with botocore's Stubber instead.
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
