"""What every command reports, in one vocabulary: `severity` (how bad), `message` (what is wrong, with the evidence)
and `hint` (the concrete change that clears it).

Why, with sources: docs/architecture.md, "Design notes", gpufleet/base/findings.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Finding(Protocol):
    """Any command's finding. Severities: error | warning for specs and the AWS account; critical | warning | info
    for logs; mandatory | advisory for policies (Pulumi's enforcement levels)."""

    @property
    def severity(self) -> str: ...

    @property
    def message(self) -> str: ...

    @property
    def hint(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class CatalogFinding:
    """What an offline catalog check finds (gpufleet.facts.ami_releases, gpufleet.facts.addons); the rules turn it
    into a positioned Issue at the field it is about."""

    severity: str  # error | warning
    message: str
    hint: str
