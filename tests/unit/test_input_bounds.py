"""Bounded input and values the schema must not let through (issue 14 items 2 and 3).

The exact messages of the YAML cases live in the corpus (tests/specs/invalid: alias-bomb, deep-nesting,
name-trailing-newline, integer-as-exponent, integer-too-large, nan-number, null-list-entry-override); here: what
is not a spec file, the time it takes, and the schema-wide invariants.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpufleet.base.errors import Issue, Position, SourceFile, SpecError, sort_issues
from gpufleet.cli import main
from gpufleet.spec.load import MAX_SPEC_BYTES
from gpufleet.spec.schema import SCHEMA_FILE, whole_string
from tests.scaling import assert_linear

ROOT = Path(__file__).resolve().parents[2]


def test_an_endless_file_is_not_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "/dev/zero"]) == 2
    assert capsys.readouterr() == (
        "",
        "gpufleet validate: error: cannot read /dev/zero: a device, not a regular file\n",
    )


def test_a_file_just_over_the_bound_is_refused_and_one_at_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "big.yaml"
    spec.write_text("#" * (MAX_SPEC_BYTES + 1))
    assert main(["validate", str(spec)]) == 2
    spec.write_text("#" * MAX_SPEC_BYTES)
    assert main(["validate", str(spec)]) == 1  # read, and reported as empty
    assert "the file is empty" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["alias-bomb", "deep-nesting"])
def test_bombs_are_stopped_quickly(capsys: pytest.CaptureFixture[str], case: str) -> None:
    start = time.monotonic()
    assert main(["validate", str(ROOT / f"tests/specs/invalid/{case}.yaml")]) == 1
    assert time.monotonic() - start < 2
    capsys.readouterr()


def _many_errors(lines: int) -> tuple[SourceFile, list[Issue]]:
    source = SourceFile(name="big.yaml", text="".join(f"k{i}: v\n" for i in range(lines)))
    for i in range(lines):
        source.values[(f"k{i}",)] = Position(i + 1, 5)
    return source, [Issue(path=(f"k{i}",), message="wrong") for i in range(lines)]


def test_twenty_thousand_errors_render_in_linear_time() -> None:
    """Rendering grows linearly with the errors, measured against 2,500 of them in the same run (tests/scaling.py):
    it took 73 s for 20,000 when the file was split once per error."""
    inputs = {n: _many_errors(n) for n in (2_500, 20_000)}  # built outside the timing
    assert_linear(lambda n: SpecError(inputs[n][0], sort_issues(*inputs[n])).render(), sorted(inputs), "render")
    text = SpecError(inputs[20_000][0], sort_issues(*inputs[20_000])).render()
    assert text.count("\n") == 3 * 20_000
    assert text.endswith("big.yaml: 20000 error(s)")


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("^[a-z]+$", "vision", True),
        ("^[a-z]+$", "vision\n", False),  # Python's $ alone would match before the newline
        ("^[a-z$]+$", "a$b", True),  # $ inside a class is a character
        (r"^a\$$", "a$", True),  # an escaped $ is a character
        (r"^a\\$", "a\\", True),  # an escaped backslash, then the end
    ],
)
def test_patterns_match_the_whole_string(pattern: str, value: str, matches: bool) -> None:
    assert bool(whole_string(pattern).search(value)) is matches


def _nodes(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _nodes(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _nodes(value, f"{path}/{i}")


SCHEMA_NODES = list(_nodes(json.loads(SCHEMA_FILE.read_text())))


def test_every_pattern_is_anchored_at_both_ends() -> None:
    loose = [
        (path, n["pattern"])
        for path, n in SCHEMA_NODES
        if isinstance(n.get("pattern"), str) and not (n["pattern"].startswith("^") and n["pattern"].endswith("$"))
    ]
    assert loose == []


def test_every_string_is_constrained() -> None:
    """A free string field would take newlines and control characters into names, files and tags."""
    free = [
        path for path, n in SCHEMA_NODES if n.get("type") == "string" and not {"pattern", "enum", "const"} & n.keys()
    ]
    assert free == []


def test_every_number_is_bounded_above() -> None:
    unbounded = [
        path
        for path, n in SCHEMA_NODES
        if n.get("type") in ("integer", "number") and not {"maximum", "exclusiveMaximum", "enum"} & n.keys()
    ]
    assert unbounded == []


# Near misses that make a regex with nested quantifiers ("(a+/?)*") backtrack exponentially: a run of pattern
# characters behind each literal start a pattern may need, then one character no pattern takes.
_STARTS = ["", "/", "a", "v1.", "arn:aws:iam::111122223333:role/", "1.2.3-"]
_PUMPS = ["a", "a/", "a-", "a.", "0", "a:", "a0-"]


@pytest.mark.parametrize(
    "pattern", sorted({n["pattern"] for _, n in SCHEMA_NODES if isinstance(n.get("pattern"), str)})
)
def test_every_pattern_refuses_a_near_miss_in_linear_time(pattern: str) -> None:
    """fsxLustre.dataRepositories[].fileSystemPath's ^/([A-Za-z0-9_.-]+/?)*$ took 2 s on "/" + 24 letters + "!" and
    doubled with each letter: one line of a spec held validate for hours. Each pattern answers a 26-character near
    miss at once."""
    regex = whole_string(pattern)
    start = time.monotonic()
    for head in _STARTS:
        for pump in _PUMPS:
            regex.search(head + pump * (26 // len(pump)) + "\x00")
    assert time.monotonic() - start < 0.5
