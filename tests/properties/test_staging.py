"""Stale staging directories (issue 47 item 7): whatever lies beside --out, a successful write removes exactly the
staging directories of the same target whose writer is gone (SIGKILL: the kernel dropped its marker lock), and
nothing else: not a live writer's, not another target's, not a directory or file that only looks like one."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.tree import output
from gpufleet.tree.output import MARKER, prepare, write_tree
from tests.properties.cli import scratch, snapshot
from tests.synthesized import tree_of

TREE = tree_of(Path(__file__).resolve().parents[1] / "specs/valid/minimal.yaml", "dev")
KINDS = ["stale", "stale", "live", "stale-other", "unmarked", "wrong-marker", "marker-symlink", "file", "symlink"]


def _killed(target: str) -> output.Staging:
    """A writer SIGKILLed after staging: its directory stays, its marker lock is gone with its descriptor."""
    staging = prepare(target)
    assert staging.marker_fd is not None
    os.close(staging.marker_fd)
    staging.marker_fd = None
    return staging


@given(st.lists(st.sampled_from(KINDS), max_size=8), st.booleans())
def test_a_write_removes_only_its_targets_stale_staging(kinds: list[str], existing: bool) -> None:
    with scratch() as root:
        (root / "out").mkdir()
        if existing:
            write_tree(TREE, "out/dev")
        live: list[output.Staging] = []
        stale: set[str] = set()
        for i, kind in enumerate(kinds):
            lookalike = root / "out" / f".dev.gpufleet-staging-{kind}{i}"
            if kind == "stale":
                stale.add(_killed("out/dev").directory.name)
            elif kind == "live":
                live.append(prepare("out/dev"))
            elif kind == "stale-other":
                _killed("out/prod")
            elif kind == "unmarked":
                lookalike.mkdir()
                (lookalike / "mine.txt").write_text("mine\n")
            elif kind == "wrong-marker":
                lookalike.mkdir()
                (lookalike / MARKER).write_text(f"gpufleet synth staging directory for {root}/out/dev-not\n")
            elif kind == "marker-symlink":  # a marker that is a link to a stale one's: not followed
                killed = _killed("out/dev")
                stale.add(killed.directory.name)
                lookalike.mkdir()
                (lookalike / MARKER).symlink_to(killed.directory / MARKER)
            elif kind == "file":
                lookalike.write_text("a file\n")
            elif kind == "symlink":  # a link named like staging to a stale directory elsewhere: not followed
                elsewhere = _killed("elsewhere/dev").directory
                lookalike.symlink_to(elsewhere)
        before = snapshot(root / "out")
        try:
            write_tree(TREE, "out/dev")
            after = snapshot(root / "out")
        finally:
            for staging in live:
                staging.discard()
        expected = {
            k: v for k, v in before.items() if k.split("/")[0] not in stale and not (k == "dev" or k.startswith("dev/"))
        }
        got = {k: v for k, v in after.items() if not (k == "dev" or k.startswith("dev/"))}
        assert got == expected
        assert {k: v for k, v in after.items() if k.startswith("dev/") and v is not None} == {
            f"dev/{rel}": text.encode() for rel, text in TREE.files.items()
        }
