"""Findings: what `gpufleet diagnose` reports, their ranking and their text form."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["critical", "warning", "info"]

SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}

# Within one severity, what stops work first: a node that cannot run GPU pods, a job that died at init (the error it
# printed, then EFA or the net plugin missing), a job whose traffic left the fast fabric, then what costs bandwidth,
# then hygiene. Checks not listed sort last.
IMPORTANCE: tuple[str, ...] = (
    "node.not-ready",
    "nccl.fabric-manager",
    "node.accelerated-hardware",
    "node.gpu-not-allocatable",
    "nccl.efa-unavailable",
    "nccl.plugin-failed",
    "nccl.error",
    "nccl.socket-fallback",
    "nccl.transport-mismatch",
    "nccl.socket-interface",
    "nccl.gdr-off",
    "nccl.efa-devices",
    "nccl.one-gpu-per-pod",
    "nccl.mixed-versions",
    "job.dataloader-starved",
    "pull.soci-slow-disk",
    "pull.below-disk",
    "node.gpu-unhealthy",
    "node.device-plugin-restarting",
    "node.hardware-condition",
    "node.mig-pending",
    "node.mig-not-capable",
    "node.sharing-inconsistent",
    "nccl.management-interface",
    "nccl.ib-hca-unset",
    "nccl.socket-ifname-unset",
    "node.pressure",
    "node.no-gpu-taint",
    "node.no-product-label",
    "node.several-teams",
    "input.no-nccl-lines",
    "input.not-node-describe",
    "input.no-dataloader-result",
    "input.no-pull-events",
    "input.malformed-pull-event",
    "nccl.version",
    "job.dataloader-ok",
    "pull.image",
)
_IMPORTANCE_INDEX = {check: i for i, check in enumerate(IMPORTANCE)}


@dataclass(frozen=True, slots=True)
class LogFinding:
    """One thing to change (gpufleet.base.findings).

    Why: docs/diagnose.md, "Design notes", findings.LogFinding."""

    severity: Severity
    source: str
    subject: str
    message: str
    hint: str
    check: str = ""


def rank(findings: Iterable[LogFinding]) -> list[LogFinding]:
    """Most important first: by severity, then IMPORTANCE, then source and subject (stable for equal keys)."""
    return sorted(
        findings,
        key=lambda f: (
            SEVERITY_ORDER[f.severity],
            _IMPORTANCE_INDEX.get(f.check, len(IMPORTANCE)),
            f.source,
            f.subject,
        ),
    )


def render(findings: Iterable[LogFinding]) -> str:
    """One block per finding, blocks separated by a blank line:

    [critical] FILE: subject: what
      fix: ...
    """
    blocks = []
    for f in findings:
        block = f"[{f.severity}] {f.source}: {f.subject}: {f.message}"
        if f.hint:
            block += f"\n  fix: {f.hint}"
        blocks.append(block)
    return "\n\n".join(blocks)
