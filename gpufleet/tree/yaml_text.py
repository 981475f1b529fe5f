"""The YAML text of a synth tree's files: PyYAML's safe_dump with sorted keys, block style, width 120, Unicode,
and `|` blocks for multi-line strings. The text is PyYAML's pure-Python emitter's, whichever way it is produced.

A tree has thousands of files, and PyYAML spends most of its time on the generic machinery around each node
(representer, resolver, serializer events), not on the few choices a node needs. `YamlWriter` writes the block
structure itself (its layout is fixed: two-space mappings, sequences flush with their key) and asks PyYAML only
how each distinct scalar is written, once per scalar, folding long lines where they land as PyYAML does. A
document it cannot vouch for (a double-quoted line past the width, a block kept with its final blank lines, a
shared container PyYAML would write as an anchor, a float or another type) goes to PyYAML whole. tests/unit/test_yaml_writer.py holds it to the pure-Python emitter's output.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import ScalarNode

_WIDTH = 120
_STR_TAG = "tag:yaml.org,2002:str"


def _str_presenter(dumper: yaml.representer.SafeRepresenter, data: str) -> yaml.ScalarNode:
    # Multi-line strings (user data, scripts, JSON configs) as literal blocks, so reviewers read them as text.
    if "\n" in data:
        return dumper.represent_scalar(_STR_TAG, data, style="|")
    return dumper.represent_scalar(_STR_TAG, data)


Dumper = type[yaml.SafeDumper] | type[yaml.CSafeDumper]


def _dumper(base: Dumper) -> Dumper:
    dumper: Dumper = type("Dumper", (base,), {})
    dumper.add_representer(str, _str_presenter)
    return dumper


# LibYAML's emitter (PyYAML's C extension, in its wheels) writes the same text several times faster than the
# pure-Python one, except where the two break long quoted lines, long keys or escape characters differently
# (found by running both over random strings); a document with any such string is written by the pure-Python
# emitter. tests/unit/test_yaml_c.py holds the two to identical output.
PURE_DUMPER = _dumper(yaml.SafeDumper)
DUMPER = _dumper(yaml.CSafeDumper) if yaml.__with_libyaml__ else PURE_DUMPER
_SHORT = 60  # no line break or quoting choice of either emitter depends on a string this short
_KEY = 100  # a simple key (`key: value`) to both: LibYAML limits them at 128 bytes of UTF-8, PyYAML at 128 characters
_SPECIAL = re.compile(r"[^\x20-\x7e\n\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
_BLANK_AT_END = re.compile(r" \n| $")  # a line ending in a blank rules out the literal style: a quoted string follows


def _alike(value: Any) -> bool:
    """Whether LibYAML writes `value` exactly as PyYAML does."""
    if isinstance(value, str):
        return (
            not _SPECIAL.search(value)
            and (len(value) <= _SHORT and "\n" not in value or not _BLANK_AT_END.search(value))
            # A block kept with its final blank lines (`|+`): LibYAML ends the document with "..." after it even
            # when more of the document follows, PyYAML only when nothing does.
            and not (value == "\n" or value.endswith("\n\n"))
        )
    if isinstance(value, dict):
        return all(
            isinstance(k, str)
            and 0 < len(k.encode()) <= _KEY
            and "\n" not in k
            and not _SPECIAL.search(k)
            and _alike(v)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return all(_alike(v) for v in value)
    return True


def pyyaml_dump(data: Any, dumper: Dumper | None = None) -> str:
    """`data` as PyYAML writes it (LibYAML where it writes the same text, else the pure-Python emitter)."""
    chosen = dumper or (DUMPER if _alike(data) else PURE_DUMPER)
    return yaml.dump(data, Dumper=chosen, sort_keys=True, default_flow_style=False, allow_unicode=True, width=_WIDTH)


# A string of these characters is a plain scalar to PyYAML's emitter unless its resolver reads it as another
# type (1.30, yes, null, 2024-01-01): no indicator can start it, no blank or break is in it, and a colon is
# always followed by a non-blank. Most strings of a tree are such names, ARNs and references.
_PLAIN = re.compile(r"[A-Za-z0-9<_/][A-Za-z0-9<>_/.=+@~-]*(?::[A-Za-z0-9<>_/.=+@~-]+)*\Z")
_RESOLVER = yaml.resolver.Resolver()
# Line breaks to PyYAML's emitter besides "\n": the writer leaves strings with them to it.
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")
_BLANKS = re.compile(" +")


def _fold(text: str, column: int, indent: int) -> str:
    """A plain or single-quoted scalar's one-line `text`, written from `column`, folded as PyYAML's emitter folds
    it (write_plain, write_single_quoted): a single blank (not next to a quote) becomes a line break and `indent`
    blanks once the line has passed the width."""
    pieces: list[str] = []
    last = 0
    quoted = text.startswith("'")
    for blank in _BLANKS.finditer(text):
        start, end = blank.span()
        pieces.append(text[last:start])
        column += start - last
        if end - start == 1 and column > _WIDTH and not (quoted and (start == 1 or end == len(text) - 1)):
            pieces.append("\n" + " " * indent)
            column = indent
        else:
            pieces.append(text[start:end])
            column += end - start
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


class _Unsupported(Exception):
    """The writer cannot vouch for this document's text: PyYAML writes it."""


class YamlWriter:
    """Writes documents as `pyyaml_dump` does, remembering how each distinct key and scalar is written.

    One writer serves one tree; the scalars of a tree repeat (names, labels, references), so most are looked up.
    """

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}
        # A value string -> its text on one line, or ("|" header, lines) of a literal block, or None (PyYAML decides).
        self._values: dict[str, str | tuple[str, list[str]] | None] = {}
        # A value string written on one line -> " text\n", what follows its key's colon or its dash wherever the
        # line stays within the width: the loops below look these up without a call.
        self._lines: dict[str, str] = {}

    def dump(self, data: Any) -> str:
        text = self.text(data)
        return pyyaml_dump(data) if text is None else text

    def text(self, data: Any) -> str | None:
        """`data` as PyYAML writes it, or None where PyYAML has to write it."""
        if type(data) is not dict or not data:
            return None
        out: list[str] = []
        try:
            self._mapping(data, 0, True, out, set())
        except _Unsupported:
            return None
        return "".join(out)

    # Block layout, as PyYAML's emitter lays out block collections with indent 2: a mapping's keys at its indent,
    # a sequence under a key flush with the key ("indentless"), a collection in a sequence item starting on the
    # dash's line, a scalar or literal block's lines two columns in from its key or dash, empty collections as {} / [].
    # A container met twice (in `seen`) is an anchor and an alias (&id001 / *id001) to PyYAML.

    def _mapping(self, data: dict[str, Any], indent: int, line_start: bool, out: list[str], seen: set[int]) -> None:
        """A non-empty mapping whose keys go at column `indent`; unless at `line_start`, the first key continues
        the current line (a sequence item's, which then already reaches `indent`)."""
        if id(data) in seen:
            raise _Unsupported
        seen.add(id(data))
        pad = " " * indent
        key_texts, lines = self._keys, self._lines
        try:
            keys = sorted(data)
        except TypeError:  # keys of types that do not compare: PyYAML keeps their order
            raise _Unsupported from None
        for key in keys:
            text = key_texts.get(key)  # holds strings only: no other key finds one
            if text is None:
                if type(key) is not str:
                    raise _Unsupported
                text = self._key(key)
            out.append(f"{pad}{text}:" if line_start else f" {text}:")
            line_start = True  # every value ends its line
            value = data[key]
            kind = type(value)
            if kind is str:
                line = lines.get(value)
                if line is not None and indent + len(text) + len(line) <= _WIDTH:
                    out.append(line)
                else:
                    self._scalar(value, indent, indent + len(text) + 2, out)
            elif kind is dict and value:
                out.append("\n")
                self._mapping(value, indent + 2, True, out, seen)
            elif kind is list and value:
                out.append("\n")
                self._sequence(value, indent, True, out, seen)
            else:
                self._scalar(value, indent, indent + len(text) + 2, out)

    def _sequence(self, data: list[Any], indent: int, line_start: bool, out: list[str], seen: set[int]) -> None:
        """A non-empty sequence whose dashes go at column `indent` (unless at `line_start`, the first continues
        the current line: the sequence is itself a sequence item)."""
        if id(data) in seen:
            raise _Unsupported
        seen.add(id(data))
        pad = " " * indent
        lines = self._lines
        for value in data:
            out.append(f"{pad}-" if line_start else " -")
            line_start = True  # every item ends its line
            kind = type(value)
            if kind is str:
                line = lines.get(value)
                if line is not None and indent + len(line) <= _WIDTH:
                    out.append(line)
                else:
                    self._scalar(value, indent, indent + 2, out)
            elif kind is dict and value:
                self._mapping(value, indent + 2, False, out, seen)
            elif kind is list and value:
                self._sequence(value, indent + 2, False, out, seen)
            else:
                self._scalar(value, indent, indent + 2, out)

    def _scalar(self, value: Any, indent: int, column: int, out: list[str]) -> None:
        """`value` after its key's colon or its dash: on that line from `column`, or as a literal block whose
        lines go two columns in from `indent`."""
        kind = type(value)
        if kind is str:
            text = self._value(value)
            if isinstance(text, tuple):
                header, lines = text
                pad = " " * (indent + 2)
                out.append(f" {header}\n")
                out.extend(f"{pad}{line}\n" if line else "\n" for line in lines)
                return
            self._lines[value] = f" {text}\n"
            if column + len(text) > _WIDTH and (" " in text or text.startswith('"')):
                if text.startswith('"'):  # a double-quoted line also folds after escapes: PyYAML's to write
                    raise _Unsupported
                text = _fold(text, column, indent + 2)
        elif kind is int:
            text = str(value)
        elif kind is bool:
            text = "true" if value else "false"
        elif value is None:
            text = "null"
        elif kind is dict:  # empty: non-empty ones are laid out above
            text = "{}"
        elif kind is list:
            text = "[]"
        else:  # floats and anything else: PyYAML's representation
            raise _Unsupported
        out.append(f" {text}\n")

    def _key(self, key: str) -> str:
        text = self._keys.get(key)
        if text is None:
            if len(key) <= _KEY and _PLAIN.match(key):
                text = self._plain_or_quoted(key)
            else:
                # PyYAML's own text of the key; a key it does not write as `key: ` is left to it whole.
                dumped = pyyaml_dump({key: 0})
                if not dumped.endswith(": 0\n") or "\n" in dumped[:-1] or dumped.startswith("? "):
                    raise _Unsupported
                text = dumped[: -len(": 0\n")]
            self._keys[key] = text
        return text

    def _value(self, value: str) -> str | tuple[str, list[str]]:
        if value in self._values:
            text = self._values[value]
        else:
            text = self._values[value] = self._value_text(value)
        if text is None:
            raise _Unsupported
        return text

    def _value_text(self, value: str) -> str | tuple[str, list[str]] | None:
        if _PLAIN.match(value):
            return self._plain_or_quoted(value)
        if _OTHER_BREAKS.search(value):
            return None  # line breaks PyYAML writes as they are, in quotes or blocks: left to it with its context
        # PyYAML's own text of the value after a key (the same after a dash): one line, a line it folded at the
        # width (the line is kept whole, `_fold` folds it where it lands), or a literal block.
        dumped = pyyaml_dump({"k": value})
        head, _, body = dumped[len("k: ") :].partition("\n")
        if not body:
            return head
        if head.startswith("|"):
            if head.endswith("+"):
                return None  # a block kept with its final blank lines: PyYAML may end the document with "..."
            return head, [line[2:] for line in body.split("\n")[:-1]]
        if head.startswith("'") and "\n" not in value:
            whole = "'" + value.replace("'", "''") + "'"
        elif not head.startswith(("'", '"')):
            whole = value  # plain: written as it is
        else:
            return None  # double-quoted, or single-quoted over line breaks
        # The line must fold back to what PyYAML wrote.
        return whole if f"k: {_fold(whole, 3, 2)}\n" == dumped else None

    @staticmethod
    def _plain_or_quoted(value: str) -> str:
        """A string of `_PLAIN` characters: plain, or single-quoted where the resolver would read another type."""
        if _RESOLVER.resolve(ScalarNode, value, (True, False)) == _STR_TAG:  # type: ignore[no-untyped-call]  # PyYAML stubs leave it untyped
            return value
        return f"'{value}'"
