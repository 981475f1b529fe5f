"""Positioned, collected user errors: `FILE:LINE:COL: PATH: message`, the source line, a caret and a hint.

Why, with sources: docs/architecture.md, "Design notes", gpufleet/base/errors.py.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


class UsageError(Exception):
    """A command-line mistake, such as an unreadable file (exit 2)."""


PathPart = str | int
Path = tuple[PathPart, ...]


def format_path(path: Path) -> str:
    """`("nodeGroups", 1, "instanceType")` -> `nodeGroups[1].instanceType`; the empty path is `(root)`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(root)"


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """One problem in the spec. `path` addresses the offending node; `at_key` points at its key instead."""

    path: Path
    message: str
    hint: str = ""
    at_key: bool = False
    severity: str = "error"  # error | warning
    context: str = ""  # e.g. "environment dev": appended to the message
    position: Position | None = None  # set only where no path applies (YAML syntax errors)


def closest(value: object, choices: Iterable[str]) -> str | None:
    """The allowed value closest to `value` (ignoring case), or None when none is close or it is `value` itself."""
    if not isinstance(value, str):
        return None
    by_case = {o.lower(): o for o in sorted(set(choices))}
    close = difflib.get_close_matches(value.lower(), list(by_case), n=1, cutoff=0.6)
    if close and by_case[close[0]] != value:
        return by_case[close[0]]
    return None


def suggest(match: str) -> str:
    return f'did you mean "{match}"?'


def did_you_mean(value: object, choices: Iterable[str]) -> str:
    """A hint naming the closest allowed value, or listing the allowed ones when nothing is close."""
    options = sorted(set(choices))
    if not isinstance(value, str):
        return f"allowed: {', '.join(options)}" if options else ""
    match = closest(value, options)
    if match is not None:
        return suggest(match)
    if options and len(options) <= 12:
        return f"allowed: {', '.join(options)}"
    return ""


@dataclass(slots=True)
class SourceFile:
    """The text of a spec file and where each path sits in it (filled by `gpufleet.spec.load`)."""

    name: str
    text: str
    values: dict[Path, Position] = field(default_factory=dict)
    keys: dict[Path, Position] = field(default_factory=dict)
    # path -> source text of a plain scalar that YAML 1.1 resolved to a non-string (bool, number, null, date)
    plain: dict[Path, str] = field(default_factory=dict)
    lines: list[str] | None = field(default=None, repr=False, compare=False)  # text.splitlines(), when first needed

    def locate(self, issue: Issue) -> Position:
        return issue.position or self.position(issue.path, issue.at_key)

    def position(self, path: Path, at_key: bool = False) -> Position:
        """The position of `path`, falling back to the nearest ancestor that has one (cluster-toolkit findPos)."""
        probe = path
        while True:
            if at_key and probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            if probe in self.keys:
                return self.keys[probe]
            if not probe:
                return Position(1, 1)
            probe = probe[:-1]

    def line_text(self, line: int) -> str:
        if self.lines is None:  # split once: rendering thousands of errors stays linear in the file
            self.lines = self.text.splitlines()
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""


def render_issue(source: SourceFile, issue: Issue) -> str:
    pos = source.locate(issue)
    message = issue.message + (f" ({issue.context})" if issue.context else "")
    prefix = "" if issue.severity == "error" else f"{issue.severity}: "
    head = f"{source.name}:{pos.line}:{pos.column}: {prefix}{format_path(issue.path)}: {message}"
    code = source.line_text(pos.line)
    gutter = f"{pos.line:>5} | "
    lines = [head, f"{gutter}{code}", " " * (len(gutter) - 2) + "| " + " " * (pos.column - 1) + "^"]
    if issue.hint:
        lines.append(f"hint: {issue.hint}")
    return "\n".join(lines)


def sort_issues(source: SourceFile, issues: Iterable[Issue]) -> list[Issue]:
    """Deduplicate and sort by position, then path and message, so output is stable."""
    unique = {(i.path, i.message, i.context, i.at_key, i.severity, i.position): i for i in issues}.values()

    def key(i: Issue) -> tuple[int, int, str, str]:
        pos = source.locate(i)
        return (pos.line, pos.column, format_path(i.path), i.message)

    return sorted(unique, key=key)


class SpecError(Exception):
    """The spec is invalid; carries every issue found, already sorted."""

    def __init__(self, source: SourceFile, issues: Sequence[Issue]):
        self.source = source
        self.issues = list(issues)
        super().__init__(f"{len(self.issues)} error(s) in {source.name}")

    def render(self) -> str:
        blocks = [render_issue(self.source, i) for i in self.issues]
        errors = sum(1 for i in self.issues if i.severity == "error")
        blocks.append(f"{self.source.name}: {errors} error(s)")
        return "\n".join(blocks)
