"""The JSON text of a synth tree's files: `json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)` and a
final newline, exactly.

With an indent, the json module encodes in pure Python, through a generator per nesting level for every item;
inventory.json of a 96-group fleet is 1.8 MB, and it is encoded twice (the file, and the digest's copy without
the files' hashes). `dump_json` writes the same text with one recursive function filling one list, using the
json module's own string encoder; a document holding anything but dicts with string keys, lists, tuples,
strings, ints, booleans and None (a float, whose text has rules of its own) is left to json.dumps whole.
tests/unit/test_tree_json.py holds the two to the same text.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) writes a string with (C where built)
from typing import Any


class _Unsupported(Exception):
    """A value json.dumps writes by rules this module does not repeat."""


def dump_json(data: Any) -> str:
    out: list[str] = []
    try:
        _encode(data, "\n", out)
    except _Unsupported:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    out.append("\n")
    return "".join(out)


def _encode(value: Any, newline: str, out: list[str]) -> None:
    """`value` as json.dumps writes it at the nesting level whose line break and indent is `newline`."""
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        try:
            keys = sorted(value)
        except TypeError:  # keys of types that do not compare: json.dumps raises its own error
            raise _Unsupported from None
        separator = "{" + inner
        for key in keys:
            if type(key) is not str:  # json.dumps turns other keys into strings by its rules
                raise _Unsupported
            out.append(separator)
            out.append(encode_basestring(key))
            out.append(": ")
            _encode(value[key], inner, out)
            separator = "," + inner
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            out.append(separator)
            _encode(item, inner, out)
            separator = "," + inner
        out.append(newline + "]")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is bool:
        out.append("true" if value else "false")
    elif value is None:
        out.append("null")
    else:
        raise _Unsupported
