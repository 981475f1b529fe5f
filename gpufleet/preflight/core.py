"""The preflight run: every check in order over one shared Context; API failures become findings."""

from __future__ import annotations

from typing import Callable, Iterable

from gpufleet.preflight.ami import check_ami
from gpufleet.preflight.clients import ApiError, Clients
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import Finding, ordered
from gpufleet.preflight.instances import check_efa, check_instance_types, check_offerings, check_zones
from gpufleet.preflight.network import check_subnets
from gpufleet.preflight.quotas import check_quotas
from gpufleet.preflight.reservations import check_reservations
from gpufleet.spec import Fleet

Check = Callable[[Context], Iterable[Finding]]

CHECKS: tuple[tuple[str, Check], ...] = (
    ("instance types and GPUs", check_instance_types),
    ("zones", check_zones),
    ("subnets", check_subnets),
    ("instance type offerings", check_offerings),
    ("EFA", check_efa),
    ("capacity reservations", check_reservations),
    ("vCPU quotas", check_quotas),
    ("AMI releases", check_ami),
)


def preflight(fleet: Fleet, clients: Clients) -> list[Finding]:
    """Every finding for one environment's fleet, errors first. Reads only; never creates anything.

    A failed AWS call ends its check with one blocking finding naming the call; a credential or connection
    failure ends the run, since every later call would fail the same way.
    """
    ctx = Context(fleet, clients)
    findings: list[Finding] = []
    for _name, check in CHECKS:
        try:
            for finding in check(ctx):
                findings.append(finding)
        except ApiError as exc:
            findings.append(exc.finding())
            if exc.fatal:
                break
    return ordered(findings)
