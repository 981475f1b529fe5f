"""What `gpufleet preflight` reports: one finding per problem, each naming where, what and the fix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in the AWS account before anything is created.

    blocking: the rollout would fail (exit 1); a warning does not block.
    node_group: the node group it is about, or None for the cluster, the account or the AWS API itself.
    what: what is wrong, with the evidence AWS returned.
    fix: the concrete change that clears it.
    scope: what a finding without a node group is about ("cluster", "account" or "aws").
    """

    blocking: bool
    node_group: str | None
    what: str
    fix: str
    scope: str = "cluster"

    @property
    def where(self) -> str:
        return f"nodeGroups/{self.node_group}" if self.node_group else self.scope

    def render(self) -> str:
        level = "error" if self.blocking else "warning"
        return f"{level}: {self.where}: {self.what}\n  fix: {self.fix}"


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Drop exact repeats (two checks tripping on one failed API call), then errors before warnings, stably."""
    unique = list(dict.fromkeys(findings))
    return sorted(unique, key=lambda f: not f.blocking)


def blocking(findings: Iterable[Finding]) -> bool:
    return any(f.blocking for f in findings)


def summary(subject: str, findings: Sequence[Finding], checks: int) -> str:
    errors = sum(1 for f in findings if f.blocking)
    warnings = len(findings) - errors
    if not findings:
        return f"preflight {subject}: all {checks} checks passed"
    return f"preflight {subject}: {errors} error(s), {warnings} warning(s)"


def render(subject: str, findings: Sequence[Finding], checks: int) -> str:
    """Each finding as a block, then one summary line."""
    return "\n".join([f.render() for f in findings] + [summary(subject, findings, checks)])
