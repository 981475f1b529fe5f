"""Test helper: synth trees and recordings that several tests read, made once per test session (each costs a whole
recording under the Pulumi mocks). Callers must not change what they get."""

from __future__ import annotations

import functools
from pathlib import Path

from gpufleet.commands.synth import synth_tree
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.tree.write import Registration, Tree


@functools.cache
def tree_of(spec: Path, env: str) -> Tree:
    return synth_tree(load_fleet(str(spec), env).environments[env], env)[1]


@functools.cache
def registrations_of(spec: Path, env: str) -> tuple[Registration, ...]:
    """What the Pulumi program registers for the fleet's environment, as synth records it."""
    from gpufleet.components.recording import record

    return tuple(record(build_plan(load_fleet(str(spec), env).environments[env], env)))
