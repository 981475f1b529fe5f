"""`validate` and `plan` load only what they use.

The budget: `gpufleet validate fleet.yaml` and `gpufleet plan fleet.yaml --env prod` each finish within 0.5 s of wall
time, interpreter start included (docs/performance.md), because a reviewer and a pre-commit hook run them on every
change. Their own work takes a few tens of milliseconds; the rest is importing modules. When the CLI imported every
command's modules for any command (the policy pack, the workload model, the tree reader and writer, the diff report,
the log parsers, Pulumi's door), each run took over a second. Timing is not tested (it depends on the machine and its
load); what the time is made of is: the modules a run leaves in sys.modules. The CLI imports only the chosen
command's module (gpufleet.cli.COMMANDS), and validate neither builds the plan nor renders templates.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]

# What no run of validate or plan of a valid spec may load: every other command's module, the tree
# (written by synth, read by check and diff), the Pulumi layer and the policy pack, the workload model, and the
# clients of preflight.
NEVER = (
    "pulumi",
    "pulumi_aws",
    "pulumi_kubernetes",
    "boto3",
    "botocore",
    "gpufleet.components",
    "gpufleet.policies",
    "gpufleet.commands.synth",
    "gpufleet.tree.output",
    "gpufleet.tree.write",
    "gpufleet.tree.read",
    "gpufleet.plan.report",
    "gpufleet.simulate",
    "gpufleet.commands.check",
    "gpufleet.commands.diff",
    "gpufleet.review.summary",
    "gpufleet.review.impact",
    "gpufleet.review.running_work",
    "gpufleet.commands.explain",
    "gpufleet.preflight",
    "gpufleet.commands.preflight",
    "gpufleet.diagnose",
    "gpufleet.commands.diagnose",
    "gpufleet.commands.init",
)
# validate checks the spec; the plan (its stages, builders and manifests, and the Jinja2 templates and MIME envelope of the
# scripts they render) is plan's work only.
NOT_FOR_VALIDATE = (
    "gpufleet.commands.plan",
    "gpufleet.plan.rollout",
    "gpufleet.plan.builders",
    "gpufleet.plan.stages",
    "gpufleet.plan.manifests",
    "gpufleet.base.render",
    "jinja2",
    "email",
)


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[str, set[str]]]:
    """In one fresh interpreter: `gpufleet validate fleet.yaml`, then `gpufleet plan fleet.yaml --env prod`; for each,
    its stdout and the modules loaded when it ended (plan's include validate's: a subset of what plan alone loads)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from gpufleet.cli import main\n"
        "runs = {}\n"
        "for argv in (['validate', 'fleet.yaml'], ['plan', 'fleet.yaml', '--env', 'prod']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        assert main(argv) == 0\n"
        "    runs[argv[0]] = (out.getvalue(), sorted(sys.modules))\n"
        "print(json.dumps(runs))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return {command: (stdout, set(modules)) for command, (stdout, modules) in json.loads(done.stdout).items()}


def _matching(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_validate_loads_neither_other_commands_nor_the_plan(runs: dict[str, tuple[str, set[str]]]) -> None:
    stdout, modules = runs["validate"]
    assert stdout == "fleet.yaml: valid (environments: dev, prod)\n"
    assert "gpufleet.commands.validate" in modules
    assert _matching(modules, NEVER + NOT_FOR_VALIDATE) == []


def test_plan_loads_no_other_command(runs: dict[str, tuple[str, set[str]]]) -> None:
    stdout, modules = runs["plan"]
    assert stdout.startswith("fleet research, environment prod: rollout through cost")
    assert {"gpufleet.commands.plan", "gpufleet.plan.rollout"} <= modules
    assert _matching(modules, NEVER) == []


def test_the_help_lists_each_command_with_its_module_s_first_line(capsys: pytest.CaptureFixture[str]) -> None:
    # The CLI keeps each command's help line in COMMANDS so that the help imports no command; it must stay the first
    # line of the module's docstring, where the command is described.
    assert main(["--help"]) == 0
    listing = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    for name, (module, help_text) in COMMANDS.items():
        assert (importlib.import_module(module).__doc__ or "").strip().splitlines()[0] == help_text, name
    assert " ".join(f"{name} {help_text}" for name, (_, help_text) in COMMANDS.items()) in listing


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_its_own_help(capsys: pytest.CaptureFixture[str], name: str) -> None:
    assert main([name, "--help"]) == 0
    usage, description, *_ = capsys.readouterr().out.split("\n\n")
    assert usage.startswith(f"usage: gpufleet {name} [-h] ")  # and the arguments of the command's module
    assert " ".join(description.split()) == COMMANDS[name][1]
