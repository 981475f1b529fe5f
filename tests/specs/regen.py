"""Rewrite the golden `.err` files of tests/specs/invalid from what `gpufleet validate` prints now.

For humans, after a deliberate change of a message:

    .venv/bin/python tests/specs/regen.py                 # every case
    .venv/bin/python tests/specs/regen.py taint-eks-spelling efa-without-zone   # some cases

Then read the diff of the .err files before committing: each one is the exact text a user sees. The test
(tests/unit/test_specs.py) never regenerates; a case without a .err file fails there.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INVALID = Path("tests/specs/invalid")


def render(case: Path) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `gpufleet validate tests/specs/invalid/<case>.yaml`, run from the root."""
    from gpufleet.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", case.as_posix()])
    return code, out.getvalue(), err.getvalue()


def regen(names: list[str]) -> int:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    cases = [INVALID / f"{n.removesuffix('.yaml')}.yaml" for n in names] or sorted(INVALID.glob("*.yaml"))
    status = 0
    for case in cases:
        code, out, err = render(case)
        if code != 1 or out:
            print(f"{case}: exit {code} (expected 1), stdout {out!r}: not written", file=sys.stderr)
            status = 1
            continue
        golden = case.with_suffix(".err")
        old = golden.read_text(encoding="utf-8") if golden.exists() else None
        if old != err:
            golden.write_text(err, encoding="utf-8")
            print(f"{'wrote' if old is None else 'updated'} {golden}")
    return status


if __name__ == "__main__":
    sys.exit(regen(sys.argv[1:]))
