"""gpufleet.tree.yaml_text.YamlWriter writes a tree's YAML itself: its text must be exactly what PyYAML's pure-Python
emitter writes (sorted keys, block style, width 120, Unicode, `|` for multi-line strings), for every document
it writes, and it must write nearly all of them (else the tree is slow again)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpufleet.tree.yaml_text import PURE_DUMPER, YamlWriter, pyyaml_dump
from tests.trees import golden_documents

# Strings where emitters make choices, each with what PyYAML writes for it as a value after `k:`.
TABLE = [
    ("plain", "plain"),
    ("", "''"),
    (" ", "' '"),
    ("yes", "'yes'"),  # booleans, nulls and numbers as strings are quoted
    ("No", "'No'"),
    ("on", "'on'"),
    ("true", "'true'"),
    ("null", "'null'"),
    ("~", "'~'"),
    ("1.30", "'1.30'"),
    ("010", "'010'"),
    ("123", "'123'"),
    ("1e3", "1e3"),
    ("0x1f", "'0x1f'"),
    ("10:00", "'10:00'"),
    ("2024-01-01", "'2024-01-01'"),
    (".inf", "'.inf'"),
    ("=", "'='"),
    ("<<", "'<<'"),
    ("-", "'-'"),
    ("- a", "'- a'"),
    ("a: b", "'a: b'"),
    ("a:b", "a:b"),
    ("a:", "'a:'"),
    ("a #b", "'a #b'"),
    ("a#b", "a#b"),
    ("#c", "'#c'"),
    ("@x", "'@x'"),
    ("!t", "'!t'"),
    ("&a", "'&a'"),
    ("*a", "'*a'"),
    ("%p", "'%p'"),
    ("'q'", "'''q'''"),
    ('"d"', "'\"d\"'"),
    ("---", "'---'"),
    ("...x", "'...x'"),
    ("{a: 1}", "'{a: 1}'"),
    ("[1, 2]", "'[1, 2]'"),
    ("trailing ", "'trailing '"),
    (" leading", "' leading'"),
    ("tab\there", '"tab\\there"'),
    ("cr\rlf", '"cr\\rlf"'),
    ("é€😀", "é€😀"),
    ("bom\ufeffx", '"bom\\uFEFFx"'),
    ("nbsp\u00a0x", "nbsp\u00a0x"),
    ("<ref:cluster.endpoint>", "<ref:cluster.endpoint>"),
    ("arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy", "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"),
    ("x\n", "|\n  x"),
    ("x\ny", "|-\n  x\n  y"),
    ("x\n\ny\n", "|\n  x\n\n  y"),
    ("  lead\nx", "|2-\n    lead\n  x"),
    ("\nx", "|2-\n\n  x"),
    ("x\n\n", "|+\n  x\n\n..."),  # a block ending in blank lines: PyYAML ends the document with "..."
    ("trail  \nx", '"trail  \\nx"'),
    ("ls\u2028x", "'ls\u2028  x'"),  # a line separator is a line break inside single quotes
    ("x" * 130, "x" * 130),
    (" " + "w " * 60, None),  # quoted for its blanks at both ends, which are never folded
    ("a " * 58 + " b", None),  # a double blank is never folded
    ("x" * 125 + " ", None),
    (("word " * 30).strip(), ("word " * 24).strip() + "\n  " + ("word " * 6).strip()),  # folded past the width
    ("it's " + "word " * 30, "'it''s " + ("word " * 23).strip() + "\n  " + "word " * 7 + "'"),
]


@pytest.mark.parametrize(("value", "expected"), TABLE, ids=[repr(v)[:30] for v, _ in TABLE])
def test_a_string_value_is_written_as_pyyaml_writes_it(value: str, expected: str | None) -> None:
    doc = {"k": value}
    if expected is not None:
        assert pyyaml_dump(doc, PURE_DUMPER) == f"k: {expected}\n"
    assert YamlWriter().dump(doc) == pyyaml_dump(doc, PURE_DUMPER)
    # Written by the writer itself, except a kept block (`|+`) and other line breaks (left to PyYAML).
    assert (YamlWriter().text(doc) is None) == (value in ("x\n\n", "ls\u2028x"))


def _placements(value: Any) -> list[Any]:
    """`value` as a key, a value, a sequence item, in nested sequences and mappings, and deep enough to reach the width."""
    deep: Any = value
    for i in range(12):
        deep = {f"level{i}": deep} if i % 3 else [deep, i]
    return [
        {"k": value},
        {"k": [value, value], "m": {"n": [value]}},
        {"k": [[value, [value]], {"a": value, "b": [{"c": value}]}]},
        {"s": [{"x": value, "y": 1}, [], {}, [{}], [[]]]},
        {"deep": deep},
        *([{value: [value], "k": {value: value}}] if value else []),
    ]


def test_the_writer_writes_nearly_every_document_of_a_tree_as_pyyaml_does() -> None:
    """The speed is real. (tests/golden holds the trees to their files; LibYAML here is held to the pure emitter
    by test_yaml_c, and is several times faster.)"""
    docs = golden_documents()
    written = [(doc, text) for doc in docs if (text := YamlWriter().text(doc)) is not None]
    assert len(docs) > 400 and len(written) >= len(docs) - 2  # the empty values of a chart without any
    for doc, text in written:
        assert text == pyyaml_dump(doc), doc


def test_every_placement_of_a_tricky_string_is_written_as_pyyaml_writes_it() -> None:
    writer = YamlWriter()  # one writer for all: what it remembers of a string holds in every place
    scalars = [v for v, _ in TABLE] + [0, -1, 2**70, True, False, None]
    written = 0
    for value in scalars:
        for doc in _placements(value):
            expected = pyyaml_dump(doc, PURE_DUMPER)
            text = writer.text(doc)
            written += text is not None
            assert writer.dump(doc) == expected, doc
    assert written >= 0.9 * len(scalars) * 5


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth < 5 and roll < 0.25:
        return {_random_key(rng): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 5 and roll < 0.45:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.55:
        return rng.choice([0, 7, -3, True, False, None])
    return _random_string(rng)


def _random_key(rng: random.Random) -> str:
    """A key PyYAML writes as `key:` (multi-line and long keys are in `_placements`)."""
    return _random_string(rng).replace("\n", "")[:40]


def _random_string(rng: random.Random) -> str:
    # Without the characters only double quotes can hold (tabs, other line breaks; in TABLE): a document with one
    # goes to PyYAML whole, and the writer would write too few of these.
    alphabet = list("abcxyz019-_./:<>@=+~ #'\"!&*|{}[],?%\né") + [
        "yes",
        "1.30",
        ": ",
        " #",
        "- ",
        "\n ",
        " \n",
        "word ",
        "😀",
    ]
    s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
    return s * rng.randint(2, 20) if rng.random() < 0.2 else s


def test_random_documents_are_written_as_pyyaml_writes_them() -> None:
    rng = random.Random(16)
    writer = YamlWriter()
    written = 0
    for _ in range(300):
        doc = {_random_key(rng): _random_value(rng, 0) for _ in range(rng.randint(1, 5))}
        written += writer.text(doc) is not None
        assert writer.dump(doc) == pyyaml_dump(doc, PURE_DUMPER), doc
    assert written >= 150


def test_what_the_writer_leaves_to_pyyaml() -> None:
    shared = {"a": 1}
    writer = YamlWriter()
    # A container met twice is an anchor and an alias to PyYAML; floats and other types are its representation.
    assert writer.text({"x": shared, "y": shared}) is None
    assert writer.dump({"x": shared, "y": shared}) == "x: &id001\n  a: 1\ny: *id001\n"
    assert writer.text({"f": 1.5}) is None and writer.dump({"f": 1.5}) == "f: 1.5\n"
    assert writer.text({}) is None and writer.dump({}) == "{}\n"
    assert writer.text(["a"]) is None and writer.dump(["a"]) == "- a\n"
