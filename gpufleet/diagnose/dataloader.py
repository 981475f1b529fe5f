"""The data loader check's result as a finding: the lines docs/examples/dataloader-check.yaml prints (its harness,
gpufleet/data/dataloader/dataloader_check.py), one per rank:

    gpufleet-dataloader-check rank=0 steps=50 real_step_seconds=0.4120 synthetic_step_seconds=0.2050

The step fed by the real input pipeline minus the step fed by synthetic input (one batch held in memory: the same
compute, no input) is the time the step waits on input; as a share of the real step it is the share of GPU time lost
to the loader, the "low GPU utilization" a starved loader shows up as.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/diagnose/dataloader.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpufleet.diagnose.findings import LogFinding

STARVED_FRACTION = 0.10
# Anywhere on the line: kubectl --prefix/--timestamps and torchrun's [rankN]: come before it.
_LINE = re.compile(
    r"gpufleet-dataloader-check rank=(\d{1,7}) steps=(\d{1,9}) real_step_seconds=(\d{1,9}(?:\.\d{1,9})?)"
    r" synthetic_step_seconds=(\d{1,9}(?:\.\d{1,9})?)"
)
STORAGE_HINT = (
    "the GPUs wait on input: read the dataset from storage that keeps up with the node (copy it to the node-local"
    " NVMe array, nodeGroups[].localStorage: RAID0, before training; or a shared file system sized for the read"
    " rate: docs/network-and-storage.md, stage 6), and feed it faster: more DataLoader workers (num_workers, one or"
    " more per GPU), pin_memory=True, a larger prefetch_factor, and fewer, larger files (shards) than one object per"
    " sample"
)


@dataclass(frozen=True, slots=True)
class RankResult:
    rank: int
    steps: int
    real: float
    synthetic: float

    @property
    def waiting(self) -> float:
        """The share of the real step spent waiting on input (0 when the real step is not slower)."""
        return max(0.0, (self.real - self.synthetic) / self.real) if self.real > 0 else 0.0


def parse(text: str) -> list[RankResult]:
    results = []
    for line in text.splitlines():
        if "gpufleet-dataloader-check" not in line:
            continue
        match = _LINE.search(line[:16384])
        if match:
            rank, steps, real, synthetic = match.groups()
            results.append(RankResult(int(rank), int(steps), float(real), float(synthetic)))
    return results


def _seconds(value: float) -> str:
    return f"{value:.3g} s"


def check(texts: Mapping[str, str]) -> list[LogFinding]:
    """One finding per log with a result: the rank that waits most, a warning at or above STARVED_FRACTION."""
    findings = []
    for source, text in texts.items():
        results = parse(text)
        if not results:
            findings.append(
                LogFinding(
                    "info",
                    source,
                    "log",
                    "no gpufleet-dataloader-check result line: the check did not finish (or this is another log)",
                    "run docs/examples/dataloader-check.yaml to the end and pass its log (kubectl logs job/...)",
                    "input.no-dataloader-result",
                )
            )
            continue
        worst = max(results, key=lambda r: (r.waiting, -r.rank))
        ranks = len({r.rank for r in results})
        subject = f"rank {worst.rank}" + (f" (the most starved of {ranks} ranks)" if ranks > 1 else "")
        share = f"{round(worst.waiting * 100)}% of the step waits on input"
        measured = f"step time with real data {_seconds(worst.real)} vs synthetic {_seconds(worst.synthetic)}"
        if round(worst.waiting, 9) >= STARVED_FRACTION:  # 1.0 vs 0.9 s is 10%, not 9.99...%
            findings.append(
                LogFinding(
                    "warning",
                    source,
                    subject,
                    f"data loader starved: {measured} ({share})",
                    STORAGE_HINT,
                    "job.dataloader-starved",
                )
            )
        else:
            findings.append(
                LogFinding(
                    "info",
                    source,
                    subject,
                    f"data loader keeps up: {measured} ({share}; starved from {round(STARVED_FRACTION * 100)}%)",
                    "",
                    "job.dataloader-ok",
                )
            )
    return findings
