"""The preflight run: every check in order over one shared Context; API failures become findings."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from gpufleet.preflight.addon_versions import check_addons
from gpufleet.preflight.addons import check_node_monitoring_agent
from gpufleet.preflight.ami import check_ami
from gpufleet.preflight.clients import CONNECTION_FIX, ApiError, Clients
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding, ordered
from gpufleet.preflight.identity import check_identity
from gpufleet.preflight.instances import check_efa, check_instance_types, check_offerings, check_zones
from gpufleet.preflight.network import check_efa_security_group, check_subnets
from gpufleet.preflight.quotas import check_quotas
from gpufleet.preflight.reservations import check_reservations
from gpufleet.spec.fleet import Fleet

Check = Callable[[Context], Iterable[AccountFinding]]

CHECKS: tuple[tuple[str, Check], ...] = (
    ("instance types and GPUs", check_instance_types),
    ("zones", check_zones),
    ("subnets", check_subnets),
    ("instance type offerings", check_offerings),
    ("EFA", check_efa),
    ("EFA security group", check_efa_security_group),
    ("capacity reservations", check_reservations),
    ("vCPU quotas", check_quotas),
    ("AMI releases", check_ami),
    ("node monitoring agent", check_node_monitoring_agent),
    ("EKS add-on versions", check_addons),
    ("deploying identity", check_identity),
)


DEFAULT_DEADLINE_S = 120.0
DEADLINE_FIX = f"{CONNECTION_FIX}; or allow more time with --deadline SECONDS"


class _DeadlineExceeded(BaseException):
    """Raised from SIGALRM; a BaseException so that no `except Exception` in botocore or urllib3 swallows it."""


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """SIGALRM after `seconds`: it interrupts a blocked socket read, which no read timeout does for a server
    that drips a byte at a time. Only the main thread receives signals; elsewhere the run is unbounded."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _DeadlineExceeded()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def preflight(fleet: Fleet, clients: Clients, deadline: float | None = None) -> list[AccountFinding]:
    """Every finding for one environment's fleet, errors first. Reads only; never creates anything.

    Why: docs/commands.md, "Design notes", core.preflight."""
    ctx = Context(fleet, clients)
    findings: list[AccountFinding] = []
    current = CHECKS[0][0]
    try:
        with _alarm(deadline):
            for current, check in CHECKS:  # noqa: B007 (the deadline handler names the check it stopped)
                try:
                    for finding in check(ctx):
                        findings.append(finding)
                except ApiError as exc:
                    findings.append(exc.finding())
                    if exc.fatal:
                        break
    except _DeadlineExceeded:
        message = (
            f"preflight stopped after {deadline:g} s (--deadline) in the {current} check: the AWS API did not answer in"
            " time"
        )
        findings.append(
            AccountFinding(severity="error", node_group=None, message=message, hint=DEADLINE_FIX, scope="aws")
        )
    return ordered(findings)
