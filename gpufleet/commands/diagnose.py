"""find what slows a GPU job: NCCL logs, node descriptions, data loader checks, image pulls, most urgent first

Why, with sources: docs/diagnose.md, "Design notes", gpufleet/commands/diagnose.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from gpufleet.base.inputs import read_bounded
from gpufleet.diagnose import dataloader, pull
from gpufleet.diagnose.findings import LogFinding, rank, render
from gpufleet.diagnose.nccl import parse_nccl
from gpufleet.diagnose.nccl_checks import check_job
from gpufleet.diagnose.node import check_describe

__all__ = ["LogFinding", "add_arguments", "diagnose", "render", "run"]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def diagnose(
    nccl_texts: Mapping[str, str],
    node_texts: Mapping[str, str],
    loader_texts: Mapping[str, str] | None = None,
    pull_texts: Mapping[str, str] | None = None,
    disk_mibps: int | None = None,
) -> list[LogFinding]:
    """Pure: file name -> text in, ranked findings out."""
    findings = check_job({name: parse_nccl(text) for name, text in nccl_texts.items()})
    for name, text in node_texts.items():
        findings += check_describe(name, text)
    findings += dataloader.check(loader_texts or {})
    findings += pull.check(pull_texts or {}, disk_mibps)
    return rank(findings)


# gp3 is 125 to 1,000 MiB/s (EC2 now 2,000); an instance-store array is faster. The bound only refuses nonsense.
MAX_DISK_MIBPS = 100_000


def _disk_mibps(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_DISK_MIBPS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a throughput: a whole number of MiB/s from 1 to {MAX_DISK_MIBPS}"
            " (the gp3 volume's diskThroughputMiBps, 125 at its baseline)"
        )
    return int(text)


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
    parser.add_argument(
        "--pull-log",
        dest="pull_log",
        action="append",
        default=[],
        metavar="FILE",
        help="one node's image pulls: kubectl describe pod, kubectl get events [-o json], or its journal"
        " (journalctl -u kubelet -u containerd -u soci-snapshotter); repeatable, read as one node",
    )
    parser.add_argument(
        "--disk-mibps",
        dest="disk_mibps",
        type=_disk_mibps,
        default=None,
        metavar="N",
        help="throughput of the volume that holds the node's container store, MiB/s (nodeGroups[].diskThroughputMiBps)",
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
        raw = read_bounded(path, MAX_LOG_BYTES, "no NCCL log, node description or pull log needs", stdin=True)
        # Logs carry stray bytes (progress bars, cut multibyte characters); never fail on them.
        return raw.decode("utf-8", errors="replace")
    except OSError as exc:
        raise _Unreadable(f"cannot read {path}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    nccl_paths: list[str] = list(getattr(args, "nccl_log", None) or [])
    node_paths: list[str] = list(getattr(args, "node_describe", None) or [])
    loader_paths: list[str] = list(getattr(args, "dataloader_log", None) or [])
    pull_paths: list[str] = list(getattr(args, "pull_log", None) or [])
    disk_mibps: int | None = getattr(args, "disk_mibps", None)
    if disk_mibps is not None and not pull_paths:
        print("gpufleet diagnose: error: --disk-mibps is read with --pull-log FILE", file=sys.stderr)
        return EXIT_USAGE
    if not nccl_paths and not node_paths and not loader_paths and not pull_paths:
        inputs = "--nccl-log FILE, --node-describe FILE, --dataloader-log FILE or --pull-log FILE"
        print(f"gpufleet diagnose: error: give at least one {inputs}", file=sys.stderr)
        return EXIT_USAGE
    try:
        nccl = {p if p != "-" else "<stdin>": _read(p) for p in nccl_paths}
        nodes = {p if p != "-" else "<stdin>": _read(p) for p in node_paths}
        loaders = {p if p != "-" else "<stdin>": _read(p) for p in loader_paths}
        pulls = {p if p != "-" else "<stdin>": _read(p) for p in pull_paths}
    except _Unreadable as exc:
        print(f"gpufleet diagnose: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    findings = diagnose(nccl, nodes, loaders, pulls, disk_mibps)
    if not findings:
        print("gpufleet diagnose: no findings")
        return EXIT_CLEAN
    print(render(findings))
    # Info findings are context (versions, unpinned settings that did no harm): they do not fail a pipeline.
    return EXIT_FINDINGS if any(f.severity != "info" for f in findings) else EXIT_CLEAN
