"""LibYAML (PyYAML's C extension) reads specs; the pure-Python path must give the same data, positions and issues,
so that what a spec means never depends on whether the extension is there."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.spec import load

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not yaml.__with_libyaml__, reason="PyYAML without its C extension: only the pure-Python path runs"
)


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
    for text, a, b in zip(texts, with_c, pure, strict=True):
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
    for text, a, b in zip(texts, with_c, pure, strict=True):
        # Compared as pickles, which keep an alias a shared object: `==` walks the expansion, and the "billion
        # laughs" spec expands to hundreds of millions of values (11 s); the pickles are equal only if the data and
        # its sharing are. Data nested past the pure parser's stack is past pickle's too: it is not pickled.
        assert b is RecursionError or pickle.dumps(a) == pickle.dumps(b), text[:200]
    assert sum(isinstance(a, str) and a.startswith("error: ") for a in pure) >= 3  # errors in the pure parser's words


def test_the_libyaml_loader_is_taken_for_an_ordinary_document(monkeypatch: pytest.MonkeyPatch) -> None:
    used = _loaders_used(monkeypatch, "load")
    assert load.safe_load("a: [1, b]\n") == {"a": [1, "b"]} and load.safe_load("a: b?\n") == {"a": "b?"}
    assert used == [yaml.CSafeLoader, yaml.SafeLoader]
