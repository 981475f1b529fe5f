"""Checkov skips that belong to one object: `checkov.io/skipN: CKV_K8S_xx=<reason>` in the metadata.annotations
of the top-level object, where Checkov reads them. Which checks are skipped where, and why:
docs/policies-and-diff.md, "Checkov"."""

from __future__ import annotations

from collections.abc import Mapping


def skip_annotations(reasons: Mapping[str, str]) -> dict[str, str]:
    """`{check id: reason}` as Checkov skip annotations, numbered in the given order.

    Checkov splits each value at "=" into id and reason, so a reason must not contain one (and must say why)."""
    annotations: dict[str, str] = {}
    for number, (check, reason) in enumerate(reasons.items(), start=1):
        if not reason.strip() or "=" in reason:
            raise ValueError(f"Checkov skip of {check}: the reason must be non-empty and contain no '=': {reason!r}")
        annotations[f"checkov.io/skip{number}"] = f"{check}={reason}"
    return annotations
