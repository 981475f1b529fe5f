"""`gpufleet init|validate|plan|synth|check|diff|preflight|diagnose|explain` (DESIGN.md section 4).

Exit codes: 0 success, 1 the input is invalid (or findings), 2 usage error, 3 internal error (a bug: the
traceback is printed). User errors never print a traceback and never write output.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from dataclasses import replace
from typing import Callable, Sequence

from gpufleet import check, diagnose, diff, explain, preflight, starter
from gpufleet.errors import SpecError, UsageError, render_issue, sort_issues
from gpufleet.model.check import Contradictions
from gpufleet.output import TargetRefused, keep_interrupts, prepare, raise_interrupt
from gpufleet.pipeline import Validated, open_spec
from gpufleet.plan import render_table
from gpufleet.rollout import build_plan
from gpufleet.synth import synth_tree

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM  # the shell's convention: 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as a KeyboardInterrupt so that cleanup runs before the conventional exit 143. A subclass, not
    a sibling: asyncio lets only KeyboardInterrupt and SystemExit out of a task or callback (asyncio/tasks.py
    `__step`, events.py `Handle._run`) and keeps any other BaseException in the task, where a SIGTERM arriving
    while synth's Pulumi program runs under the mocks was lost and the run waited forever."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _spec_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", nargs="?", default="fleet.yaml", help="the fleet spec (default: fleet.yaml)")


def _print_warnings(validated: Validated) -> None:
    for warning in validated.warnings:
        print(render_issue(validated.source, warning), file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    _print_warnings(validated)
    envs = ", ".join(validated.environments)
    print(f"{args.spec}: valid (environments: {envs})")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    _print_warnings(validated)
    print(render_table(build_plan(validated.environments[args.env], args.env)))
    return EXIT_OK


def cmd_synth(args: argparse.Namespace) -> int:
    validated = open_spec(args.spec, args.env)
    _print_warnings(validated)
    out = args.out if args.out is not None else f"out/{args.env}"
    try:
        staging = prepare(out, args.spec)  # refuses a foreign target and proves it writable before synthesising
    except TargetRefused as exc:
        raise UsageError(f"--out {out}: {exc}") from None
    try:
        plan, tree = synth_tree(validated.environments[args.env], args.env)
        staging.commit(tree)
    except Contradictions as exc:  # the fleet contradicts itself: an error of the spec, nothing written
        staging.discard()
        raise SpecError(validated.source, sort_issues(validated.source, [replace(i, context=f"environment {args.env}") for i in exc.issues])) from None
    except TargetRefused as exc:  # the target changed while synthesising
        staging.discard()
        raise UsageError(f"--out {out}: {exc}") from None
    except BaseException:  # an error, SIGINT or SIGTERM: leave nothing behind
        staging.discard()
        raise
    counts = sum(1 for path in tree.files if "/" in path)
    print(f"wrote {out}: {counts} files, stages {', '.join(s.name for s in plan.included())}")
    return EXIT_OK


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]


def _subcommands() -> dict[str, Command]:
    def validate_args(p: argparse.ArgumentParser) -> None:
        _spec_arg(p)
        p.add_argument("--env", help="validate only this environment (default: every environment)")

    def plan_args(p: argparse.ArgumentParser) -> None:
        _spec_arg(p)
        p.add_argument("--env", required=True, help="the environment (stack) to plan")

    def synth_args(p: argparse.ArgumentParser) -> None:
        plan_args(p)
        p.add_argument("--out", help="output directory (default: out/<env>): absent, empty, or a tree gpufleet wrote, which is replaced whole")

    commands: dict[str, Command] = {
        "validate": ("parse, schema-check and rule-check the spec", validate_args, cmd_validate),
        "plan": ("print the staged rollout of one environment", plan_args, cmd_plan),
        "synth": ("write the reviewable tree of what `pulumi up` would register", synth_args, cmd_synth),
    }
    # Commands with a module of their own expose add_arguments(parser) and run(args) -> exit code.
    for name, mod in (("init", starter), ("check", check), ("diff", diff), ("preflight", preflight), ("diagnose", diagnose), ("explain", explain)):
        commands[name] = ((mod.__doc__ or name).strip().splitlines()[0], mod.add_arguments, mod.run)
    return commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpufleet", description="Generate a staged GPU Kubernetes fleet on AWS EKS from one spec.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_args, run) in _subcommands().items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_args(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    previous = signal.signal(signal.SIGTERM, _terminate)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = keep_interrupts(previous_hook)
    try:
        return _main(argv)
    finally:
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        code = int(args.run(args))
        raise_interrupt()  # an interrupt a finalizer swallowed still ends the run as an interrupt
        return code
    except SpecError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_INVALID
    except UsageError as exc:
        print(f"gpufleet {args.command}: error: {exc}", file=sys.stderr)
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
    """The console script. After an interrupt (130, 143) the cleanup is done: the process ends at once, as the
    signal's default action would, instead of running the finalizers of a Pulumi runtime the interrupt cut short (an
    asyncio event loop closed half-way reports "Invalid file descriptor" from its __del__ at interpreter exit)."""
    code = main()
    if code in (EXIT_SIGINT, EXIT_SIGTERM):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
