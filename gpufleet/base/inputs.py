"""What gpufleet reads from the user, bounded: the file itself and the YAML in it.

Why, with sources: docs/commands.md, "Design notes", gpufleet/base/inputs.py.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import Any, TypeGuard

import yaml

from gpufleet.base.errors import Issue, Position

# A large fleet spec is tens of KB, about ten levels deep and a few thousand values; a Kubernetes object is at most
# about 1.5 MB (etcd's request limit) and a few tens of levels deep.
MAX_DEPTH = 64
MAX_VALUES = 50_000


class InputRefused(OSError):
    """A file gpufleet will not read: not a regular file, or larger than the command's limit. An OSError, so every
    command reports it where it reports a file it cannot read (exit 2)."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_bounded(path: str, limit: int, what: str, *, stdin: bool = False) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes (`what` names what no larger file is: "no fleet
    spec needs"); `-` is standard input where `stdin` allows it. Raises OSError
    (InputRefused for a file that is not one to read), with its strerror the reason."""
    if path == "-" and stdin:
        data = sys.stdin.buffer.read(limit + 1)
    else:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; a regular file ignores it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                kind = _kind(mode)
                raise InputRefused(errno.EINVAL, f"{kind}, not a regular file" if kind.startswith("a ") else kind)
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(limit + 1)  # never more: a runaway file would exhaust memory
        finally:
            os.close(fd)
    if len(data) > limit:
        raise InputRefused(errno.EFBIG, f"larger than {_size(limit)}, which {what}")
    return data


# Linux's NAME_MAX and PATH_MAX (linux/limits.h), in bytes of the file system's encoding: a longer name made the
# commands that open it fail with ENAMETOOLONG outside their error handling.
NAME_MAX = 255
PATH_MAX = 4096


def name_problem(path: str) -> str | None:
    """Why no file can have the name `path` (a component or the whole too long), or None."""
    encoded = os.fsencode(path)
    if len(encoded) >= PATH_MAX:
        return f"the path is {len(encoded)} bytes long; the file system allows {PATH_MAX - 1}"
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > NAME_MAX:
        return f"a name in the path is {longest} bytes long; the file system allows {NAME_MAX}"
    return None


def is_count(text: object) -> TypeGuard[str]:
    """Whether `text` is a count as Kubernetes and AWS write one: ASCII digits only.

    Why: docs/commands.md, "Design notes", inputs.is_count."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 16 * 1024 * 1024 else f"{limit // 1024} KiB"


def _event_pos(event: yaml.Event) -> Position:
    mark = event.start_mark
    return Position(mark.line + 1, mark.column + 1) if mark is not None else Position(1, 1)


def beyond_bounds(text: str, loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader]) -> Issue | None:
    """Depth and size after alias expansion (per document), from the event stream before composing (iterative,
    linear).

    Why: docs/commands.md, "Design notes", inputs.beyond_bounds."""
    sizes: dict[str, int] = {}  # anchor -> values it expands to
    open_nodes: list[list[Any]] = []  # [anchor, values inside so far, itself included] per open mapping or list
    total = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.DocumentStartEvent):  # anchors are the document's: each document has the bound
            sizes, total = {}, 0
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) == MAX_DEPTH:
                return Issue(
                    path=(),
                    message=f"the document nests deeper than {MAX_DEPTH} levels",
                    hint="a fleet spec is about ten levels deep",
                    position=_event_pos(event),
                )
            open_nodes.append([event.anchor, 1])
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
            if open_nodes:
                open_nodes[-1][1] += size
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            size = 1 if isinstance(event, yaml.ScalarEvent) else sizes.get(event.anchor or "", 1)
            if isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
                sizes[event.anchor] = 1
            if open_nodes:
                open_nodes[-1][1] += size
            total += size
        if total > MAX_VALUES:
            return Issue(
                path=(),
                message=(
                    f"the document expands to more than {MAX_VALUES} values (YAML aliases are expanded where they are"
                    " used)"
                ),
                hint="use aliases for small shared blocks only; a fleet spec has a few thousand values at most",
                position=_event_pos(event),
            )
    return None


def yaml_beyond_bounds(text: str) -> str | None:
    """`LINE:COL: message` when the YAML text exceeds the bounds, else None (also for text that is not YAML, which
    the caller's parser reports in its words). For texts other than specs: manifests and the files of a tree."""
    try:
        issue = beyond_bounds(text, yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)
    except yaml.YAMLError:
        # LibYAML refuses nesting past its own limit (1,000 flow levels) as an error, where the callers' pure-Python
        # composer would recurse (RecursionError a few thousand levels down): read the events as the spec loader does
        # then, with the pure-Python parser, which is iterative and stops at MAX_DEPTH.
        try:
            issue = beyond_bounds(text, yaml.SafeLoader) if yaml.__with_libyaml__ else None
        except yaml.YAMLError:
            return None
    if issue is None:
        return None
    pos = issue.position or Position(1, 1)
    return f"{pos.line}:{pos.column}: {issue.message}"
