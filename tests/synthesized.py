"""Test helper: synth trees that several tests read, synthesised once per test session (each costs a whole
recording under the Pulumi mocks). Callers must not change the tree they get."""

from __future__ import annotations

import functools
from pathlib import Path

from gpufleet.pipeline import load_fleet
from gpufleet.synth import synth_tree
from gpufleet.tree import Tree


@functools.cache
def tree_of(spec: Path, env: str) -> Tree:
    return synth_tree(load_fleet(str(spec), env).environments[env], env)[1]
