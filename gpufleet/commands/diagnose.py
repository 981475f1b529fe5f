"""find what slows a GPU job: NCCL_DEBUG=INFO logs, node descriptions and data loader checks, most urgent first

`gpufleet diagnose [--nccl-log F]... [--node-describe F]... [--dataloader-log F]...` exits 0 when nothing above info
is found, 1 with a warning or critical finding, 2 on a usage error (no input, or a file that cannot be read). All NCCL
logs of one run are read as one job (one file per pod works), so ranks can be compared with each other. `-` reads
standard input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from gpufleet.base.inputs import read_bounded
from gpufleet.diagnose import dataloader
from gpufleet.diagnose.findings import LogFinding, rank, render
from gpufleet.diagnose.nccl import parse_nccl
from gpufleet.diagnose.nccl_checks import check_job
from gpufleet.diagnose.node import check_describe

__all__ = ["LogFinding", "add_arguments", "diagnose", "render", "run"]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def diagnose(
    nccl_texts: Mapping[str, str], node_texts: Mapping[str, str], loader_texts: Mapping[str, str] | None = None
) -> list[LogFinding]:
    """Pure: file name -> text in, ranked findings out."""
    findings = check_job({name: parse_nccl(text) for name, text in nccl_texts.items()})
    for name, text in node_texts.items():
        findings += check_describe(name, text)
    findings += dataloader.check(loader_texts or {})
    return rank(findings)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nccl-log",
        dest="nccl_log",
        action="append",
        default=[],
        metavar="FILE",
        help="output of a job run with NCCL_DEBUG=INFO (repeat for one file per pod)",
    )
    parser.add_argument(
        "--node-describe",
        dest="node_describe",
        action="append",
        default=[],
        metavar="FILE",
        help="output of `kubectl describe node` for a GPU node (repeatable)",
    )
    parser.add_argument(
        "--dataloader-log",
        dest="dataloader_log",
        action="append",
        default=[],
        metavar="FILE",
        help="log of the data loader check (docs/examples/dataloader-check.yaml; repeatable)",
    )


class _Unreadable(Exception):
    pass


# An NCCL_DEBUG=INFO log is a few MB per pod even for a thousand ranks; parsing is linear (about 6 MB/s measured on
# channel lines), so this bound keeps a run to about ten seconds and its memory to a few hundred MB.
MAX_LOG_BYTES = 64 * 1024 * 1024


def _read(path: str) -> str:
    """A log or description: a regular file or `-` (stdin), bounded as every input is (gpufleet.base.inputs: a FIFO
    blocked forever, /dev/zero was read until the process was killed)."""
    try:
        raw = read_bounded(path, MAX_LOG_BYTES, "no NCCL log or node description needs", stdin=True)
        # Logs carry stray bytes (progress bars, cut multibyte characters); never fail on them.
        return raw.decode("utf-8", errors="replace")
    except OSError as exc:
        raise _Unreadable(f"cannot read {path}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    nccl_paths: list[str] = list(getattr(args, "nccl_log", None) or [])
    node_paths: list[str] = list(getattr(args, "node_describe", None) or [])
    loader_paths: list[str] = list(getattr(args, "dataloader_log", None) or [])
    if not nccl_paths and not node_paths and not loader_paths:
        inputs = "--nccl-log FILE, --node-describe FILE or --dataloader-log FILE"
        print(f"gpufleet diagnose: error: give at least one {inputs}", file=sys.stderr)
        return EXIT_USAGE
    try:
        nccl = {p if p != "-" else "<stdin>": _read(p) for p in nccl_paths}
        nodes = {p if p != "-" else "<stdin>": _read(p) for p in node_paths}
        loaders = {p if p != "-" else "<stdin>": _read(p) for p in loader_paths}
    except _Unreadable as exc:
        print(f"gpufleet diagnose: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    findings = diagnose(nccl, nodes, loaders)
    if not findings:
        print("gpufleet diagnose: no findings")
        return EXIT_CLEAN
    print(render(findings))
    # Info findings are context (versions, unpinned settings that did no harm): they do not fail a pipeline.
    return EXIT_FINDINGS if any(f.severity != "info" for f in findings) else EXIT_CLEAN
