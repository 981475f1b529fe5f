"""LibYAML (PyYAML's C extension) writes what gpufleet.tree.yaml_text.YamlWriter leaves to PyYAML of the synth tree
(and tells it how scalars are written), and reads specs; the pure-Python path must give the same
text, and the same data, positions and issues, so that the output never depends on whether the extension is there."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.spec import load
from gpufleet.tree import yaml_text as tree_yaml
from gpufleet.tree.yaml_text import DUMPER, PURE_DUMPER, pyyaml_dump
from tests.trees import golden_documents

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not yaml.__with_libyaml__, reason="PyYAML without its C extension: only the pure-Python path runs"
)

# Strings where emitters make choices: quoting of YAML 1.1 look-alikes, indicators, blanks at either end, line
# breaks of every kind, non-ASCII, and lines longer than the width.
AWKWARD = [
    "",
    " ",
    "yes",
    "No",
    "on",
    "null",
    "~",
    "1.30",
    "010",
    "10:00",
    "0x1f",
    ".inf",
    "-",
    "- a",
    "a: b",
    "a #b",
    "#c",
    "@x",
    "`x",
    "!t",
    "&a",
    "*a",
    "%p",
    "'q'",
    '"d"',
    "x\n",
    "x\ny",
    "\nx",
    "x\n\n",
    "  lead\nx",
    "trail  \nx",
    "x\n  ",
    "tab\there",
    "\t\n",
    "cr\rlf",
    "crlf\r\nx",
    "nel\x85x",
    "ls\u2028x",
    "é€😀",
    "nbsp\u00a0x",
    "bom\ufeffx",
    "x" * 130,
    ("word " * 40).strip(),
    "a\n" + "y" * 130 + "\n",
    "{a: 1}",
    "[1, 2]",
    "<ref:cluster.endpoint>",
]


def _documents() -> list[Any]:
    """Every distinct document of the golden trees, from their inventories, and the awkward strings."""
    awkward = [{s: [s, {"k": s}]} if s else {"k": [s]} for s in AWKWARD] + [{"k": [s, {}], "z": 1} for s in AWKWARD]
    scalars = {"numbers": [0, -1, 2**70, 1.5, 1e-9, float("inf"), True, None], "empty": [{}, [], ""]}
    return [*golden_documents(), *awkward, scalars]


def _random_strings(count: int) -> list[str]:
    """Strings from YAML's indicators, blanks, breaks and non-ASCII, some repeated past the line width."""
    rng = random.Random(16)
    alphabet = list("abc xyz:-#?&*!|>'\"%@`{}[],\n.019eE+_~\\/=\t\ré") + [
        ": ",
        " #",
        "- ",
        "yes",
        "1.30",
        "\n ",
        " \n",
        "ab cd ef",
        "😀",
        "\x85",
        "\u2028",
        "\xa0",
        "ü",
    ]
    out = []
    for _ in range(count):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        out.append(s * rng.randint(2, 25) if rng.random() < 0.3 else s)
    return out


def test_libyaml_writes_exactly_what_the_pure_emitter_writes() -> None:
    docs = (
        _documents()
        + [{"k": s, "l": [s, {"m": {"n": s}}]} for s in _random_strings(1000)]
        + [{s: 1} for s in _random_strings(1000) if s]
    )
    for doc in docs:
        assert pyyaml_dump(doc) == pyyaml_dump(doc, PURE_DUMPER), doc


def test_libyaml_writes_nearly_every_document_of_a_tree() -> None:
    """The speed is real: only documents with a string the two emitters would write differently go the slow way."""
    docs = _documents()
    assert len(docs) > 400 and DUMPER is not PURE_DUMPER
    assert sum(not tree_yaml._alike(d) for d in docs) <= len(AWKWARD)  # two documents of each awkward string


def _spec_texts() -> list[str]:
    files = (
        sorted((ROOT / "tests" / "specs").rglob("*.yaml"))
        + sorted((ROOT / "tests" / "golden" / "cases").glob("*/fleet.yaml"))
        + [ROOT / "fleet.yaml"]
    )
    texts = [f.read_bytes().decode("utf-8", "replace") for f in files]
    # Where LibYAML and PyYAML disagree (load._PURE_ONLY), and other corners of the reader.
    texts += [
        "a:\t1\n",
        "a: [b?c]\n",
        "a: |# x\n  b\n",
        "a: 1\n\ufeffb: 2\n",
        "\ufeffa: 1\n",
        "a: \x07\n",
        "a: 1\r\nb:\r\n  - x\r\n",
        "{é: 1, b: 2}\n",
        "a: 😀 b\nc: [d, e]\n",
        'a: "x\\\n  y"\nb: 1\n',
        "a: !!str 1\nb: !foo x\n",
        "k: &x {a: 1}\nm:\n  <<: *x\n  b: 2\n",
        "a: 1\n---\nb: 2\n",
        "",
        "# only\n",
        "- a\n",
        "a: [1, 2\n",
        "a: b: c\n",
        "a: 'x\n",
        "on: 1\nyes: [010, 10:00, 1.30]\n",
    ]
    return texts


def _as_data(loaded: load.Loaded) -> Any:
    src = loaded.source
    return (loaded.data, loaded.fatal, loaded.issues, src.values, src.keys, src.plain)


def test_libyaml_reads_every_spec_as_the_pure_parser_does(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _spec_texts()
    with_c = [_as_data(load.load_text(t, "f.yaml")) for t in texts]
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    pure = [_as_data(load.load_text(t, "f.yaml")) for t in texts]
    for text, a, b in zip(texts, with_c, pure):
        assert a == b, text[:200]


def _loaders_used(monkeypatch: pytest.MonkeyPatch, function: str) -> list[type]:
    """From now on, the Loader of each call of yaml.<function>, in order."""
    used: list[type] = []
    original = getattr(yaml, function)

    def spy(text: str, Loader: type) -> Any:
        used.append(Loader)
        return original(text, Loader=Loader)

    monkeypatch.setattr(yaml, function, spy)
    return used


def test_the_libyaml_path_is_taken_for_an_ordinary_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    used = _loaders_used(monkeypatch, "parse")
    load.load_text((ROOT / "fleet.yaml").read_text(), "fleet.yaml")
    load.load_text("a:\t1\n", "tab.yaml")
    assert used == [yaml.CSafeLoader, yaml.SafeLoader]


def _safe_load(text: str) -> Any:
    try:
        return load.safe_load(text)
    except yaml.YAMLError as exc:
        return f"error: {exc}"
    except RecursionError:  # nested past Python's stack: the pure parser recurses, LibYAML does not
        return RecursionError


def test_libyaml_loads_data_as_the_pure_parser_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpufleet.spec.load.safe_load (the model reads the Kueue configuration the plan deploys with it)."""
    texts = _spec_texts()
    with_c = [_safe_load(t) for t in texts]
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    pure = [_safe_load(t) for t in texts]
    for text, a, b in zip(texts, with_c, pure):
        # Compared as pickles, which keep an alias a shared object: `==` walks the expansion, and the "billion
        # laughs" spec expands to hundreds of millions of values (11 s); the pickles are equal only if the data and
        # its sharing are. Data nested past the pure parser's stack is past pickle's too: it is not pickled.
        assert b is RecursionError or pickle.dumps(a) == pickle.dumps(b), text[:200]
    assert sum(isinstance(a, str) and a.startswith("error: ") for a in pure) >= 3  # errors in the pure parser's words


def test_the_libyaml_loader_is_taken_for_an_ordinary_document(monkeypatch: pytest.MonkeyPatch) -> None:
    used = _loaders_used(monkeypatch, "load")
    assert load.safe_load("a: [1, b]\n") == {"a": [1, "b"]} and load.safe_load("a: b?\n") == {"a": "b?"}
    assert used == [yaml.CSafeLoader, yaml.SafeLoader]
