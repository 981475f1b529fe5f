"""The pull request comment of a fleet repository's workflow (gpufleet/data/fleet-repo/gpufleet.yml): every
environment's `gpufleet diff --format markdown`, cut to what GitHub takes.

Why, with sources: docs/policies-and-diff.md, "Design notes", gpufleet/review/comment.py.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

LIMIT = 65_536
MARKER = "<!-- gpufleet-diff -->"
_ENVIRONMENT = re.compile(r"^<!-- gpufleet-diff:(?P<env>[^ ]+) -->$", re.M)
_DETAILS = re.compile(r"^<details>.*?^</details>\n\n?", re.M | re.S)


def length(text: str) -> int:
    """The length GitHub counts: UTF-16 code units, as a JavaScript string's length (at least the code points)."""
    return len(text.encode("utf-16-le")) // 2


def _sections(diff: str) -> tuple[str, list[tuple[str, str]]]:
    """(what comes before the first environment, [(environment, its section)])."""
    starts = list(_ENVIRONMENT.finditer(diff))
    if not starts:
        return diff, []
    head = diff[: starts[0].start()]
    ends = [m.start() for m in starts[1:]] + [len(diff)]
    return head, [(m.group("env"), diff[m.start() : end]) for m, end in zip(starts, ends, strict=True)]


def _where(link: str) -> str:
    artifact = f"the artifact [gpufleet-diff]({link})" if link else "the workflow artifact gpufleet-diff"
    return f"the job summary of this run and {artifact}"


def fit(diff: str, link: str = "", limit: int = LIMIT) -> str:
    """The comment for `diff` (the workflow's diff.md) in at most `limit` characters; `link`: the artifact's URL."""
    if length(diff) <= limit:
        return diff
    head, sections = _sections(diff)
    head = head.removeprefix(MARKER + "\n")
    note = (
        f"{MARKER}\n> [!NOTE]\n> The whole diff is {length(diff):,} characters, more than a comment holds"
        f" ({limit:,}): the resource tables of each stage are left out here. They are in {_where(link)}.\n\n"
    )
    shown = [(env, _DETAILS.sub("", text)) for env, text in sections]
    out = note + head
    left: list[str] = []
    for i, (env, text) in enumerate(shown):
        # room for the line naming what is left out; the first environment is shown even when it must be cut
        if i > 0 and (left or length(out + text) > limit - 400):
            left.append(env)
        else:
            out += text
    if left:
        out += (
            f"\n**Not shown here** (no room): {', '.join(f'`{e}`' for e in left)}: their diff is in {_where(link)}.\n"
        )
    if length(out) <= limit:
        return out
    cut = "\n\n**Cut here** (no room): the rest is in " + _where(link) + ".\n"
    keep = out[: limit - length(cut) - 1]
    while length(keep) > limit - length(cut):  # characters outside the BMP take two units
        keep = keep[:-1]
    return keep[: keep.rfind("\n") + 1 or len(keep)] + cut


def main(argv: Sequence[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: python -m gpufleet.review.comment DIFF_MD [ARTIFACT_URL]", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        diff = f.read()
    sys.stdout.write(fit(diff, argv[1] if len(argv) > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
