"""What `gpufleet preflight` reports: one finding per problem, each naming where, what and the fix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AccountFinding:
    """One problem found in the AWS account before anything is created (gpufleet.base.findings).

    Why: docs/commands.md, "Design notes", findings.AccountFinding."""

    severity: str
    node_group: str | None
    message: str
    hint: str
    scope: str = "cluster"

    @property
    def blocking(self) -> bool:
        return self.severity == "error"

    @property
    def where(self) -> str:
        return f"nodeGroups/{self.node_group}" if self.node_group else self.scope

    def render(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}\n  fix: {self.hint}"


def ordered(findings: Iterable[AccountFinding]) -> list[AccountFinding]:
    """Drop exact repeats (two checks tripping on one failed API call), then errors before warnings, stably."""
    unique = list(dict.fromkeys(findings))
    return sorted(unique, key=lambda f: not f.blocking)


def blocking(findings: Iterable[AccountFinding]) -> bool:
    return any(f.blocking for f in findings)


def summary(subject: str, findings: Sequence[AccountFinding], checks: int) -> str:
    errors = sum(1 for f in findings if f.blocking)
    warnings = len(findings) - errors
    if not findings:
        return f"preflight {subject}: all {checks} checks passed"
    return f"preflight {subject}: {errors} error(s), {warnings} warning(s)"


def render(subject: str, findings: Sequence[AccountFinding], checks: int) -> str:
    """Each finding as a block, then one summary line."""
    return "\n".join([f.render() for f in findings] + [summary(subject, findings, checks)])
