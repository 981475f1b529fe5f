"""`gpufleet init|validate|plan|synth|check|diff|preflight|snapshot|diagnose|explain` (docs/architecture.md section 5).

Why, with sources: docs/commands.md, "Design notes", gpufleet/cli.py.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from gpufleet import __version__
from gpufleet.base.errors import SpecError, UsageError
from gpufleet.base.interrupts import defer_signals, end_deferral, keep_interrupts, raise_interrupt

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM  # the shell's convention: 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as a KeyboardInterrupt so that cleanup runs before the conventional exit 143.

    Why: docs/commands.md, "Design notes", cli.Terminated."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


# Command -> (its module, the line `gpufleet --help` shows for it: the first line of the module's docstring, copied
# here so that the help imports nothing; a test holds the two equal). The order is the order of the help.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("gpufleet.commands.validate", "parse, schema-check and rule-check the spec"),
    "plan": ("gpufleet.commands.plan", "print the staged rollout of one environment"),
    "synth": ("gpufleet.commands.synth", "write the reviewable tree of what `pulumi up` would register"),
    "init": (
        "gpufleet.commands.init",
        "write a commented starter spec: one cluster, a GPU node group per instance type, one team, dev and prod",
    ),
    "check": (
        "gpufleet.commands.check",
        (
            "run the fleet policies over a synth tree and print each finding with its fix (exit 1 on a mandatory"
            " violation)"
        ),
    ),
    "diff": (
        "gpufleet.commands.diff",
        "compare two synth trees for review: changes per stage, GPU node replacements, team quotas, cost (exit 0)",
    ),
    "preflight": (
        "gpufleet.commands.preflight",
        "check the AWS account against one environment's fleet before anything is created",
    ),
    "snapshot": (
        "gpufleet.commands.snapshot",
        "snapshot a Bottlerocket data volume that holds a group's images, for nodeGroups[].dataVolumeSnapshotId",
    ),
    "diagnose": (
        "gpufleet.commands.diagnose",
        "find what slows a GPU job: NCCL logs, node descriptions, data loader checks, image pulls, most urgent first",
    ),
    "explain": (
        "gpufleet.commands.explain",
        "would these workloads run on this fleet: queue, flavor, node group, or the first gate that stops them and why",
    ),
}


def _chosen(argv: Sequence[str]) -> str | None:
    """The command argparse will run: the first argument that is not an option (the top level has only -h)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(command: str | None) -> argparse.ArgumentParser:
    """Every command is listed; only `command` (the chosen one) gets its module's arguments and run()."""
    parser = argparse.ArgumentParser(
        prog="gpufleet", description="Generate a staged GPU Kubernetes fleet on AWS EKS from one spec."
    )
    # The release (CHANGELOG.md lists what each one changed, its tree format version and tested pins).
    parser.add_argument("--version", action="version", version=f"gpufleet {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None, *, console: bool = False) -> int:
    """Run one command; its exit code. `console` (the console script): signals the run deferred stay deferred, so
    that the process exits with the run's code (entry)."""
    previous, previous_hook = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    try:
        signal.signal(signal.SIGTERM, _terminate)
        sys.unraisablehook = keep_interrupts(previous_hook)
        return _main(argv)
    except Terminated:  # before _main's own handling began
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        return EXIT_SIGINT
    finally:
        if console:
            defer_signals()  # the outcome is decided: a late signal must not kill the process by its default action
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGTERM, previous)
        if not console:
            end_deferral()


def _main(argv: Sequence[str] | None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    command = "gpufleet"
    try:
        # Importing the command's module takes up to a few tenths of a second: a signal meanwhile is an interrupt
        # like any other (it was a traceback and exit 1).
        parser = build_parser(_chosen(arguments))
        try:
            args = parser.parse_args(arguments)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
            return int(exc.code or 0)
        command = f"gpufleet {args.command}"
        code = int(args.run(args))
        raise_interrupt()  # an interrupt a finalizer swallowed still ends the run as an interrupt
        return code
    except SpecError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_INVALID
    except UsageError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except Exception:  # a bug: show everything so it can be reported
        traceback.print_exc()
        print("gpufleet: internal error (exit 3); please report it with the traceback above", file=sys.stderr)
        return EXIT_BUG


def entry() -> None:
    """The console script.

    Why: docs/commands.md, "Design notes", cli.entry."""
    signal.signal(signal.SIGTERM, _terminate)  # as early as the interpreter lets it
    try:
        code = main(console=True)
    except KeyboardInterrupt:  # Terminated included: before main's own handling began
        code = EXIT_SIGTERM if isinstance(sys.exc_info()[1], Terminated) else EXIT_SIGINT
    if code in (EXIT_SIGINT, EXIT_SIGTERM):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
