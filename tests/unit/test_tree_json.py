"""gpufleet.tree.json_text.dump_json writes exactly what json.dumps(indent=2, sort_keys=True, ensure_ascii=False) writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpufleet.tree.json_text import dump_json

ROOT = Path(__file__).resolve().parents[2]

TRICKY: list[Any] = [
    {},
    [],
    "",
    {"a": {}, "b": [], "c": [{}, [], [[]], {"d": {}}]},
    {'quote"s': "back\\slash", "ctl": "\x00\x1f\x7f\t\n\r", "sep": "\u2028\u2029\x85", "uni": "é€😀\ufeff"},
    {"z": 1, "a": -2, "m": 2**70, "t": True, "f": False, "n": None, "l": [True, 0, None, "0"]},
    {"tuple": ("a", ("b", []), {"c": ()})},
    [[["deep", {"x": [1, [2, [3]]]}]]],
    {"": "", " ": " ", "B": 1, "a": 2, "É": 3, "_": 4},
]
# json.dumps' own rules: floats, keys that are not strings (turned into strings, or refused when they do not sort).
LEFT_TO_JSON: list[Any] = [{"f": 1.5}, {"inf": float("inf")}, {1: "a", 2: "b"}, [{"x": [0.1]}]]


def _refuse(*args: Any, **kwargs: Any) -> str:
    raise AssertionError("left to json.dumps")


@pytest.mark.parametrize("index", range(len(TRICKY + LEFT_TO_JSON)))
def test_tricky_values_are_written_as_json_dumps_writes_them(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = (TRICKY + LEFT_TO_JSON)[index]
    expected = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if index < len(TRICKY):
        monkeypatch.setattr(json, "dumps", _refuse)  # written by dump_json itself
    assert dump_json(data) == expected


def test_every_json_file_of_the_golden_trees_is_written_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted((ROOT / "tests" / "golden" / "trees").glob("*/*/*.json"))
    assert len(files) > 10
    monkeypatch.setattr(json, "dumps", _refuse)
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert dump_json(json.loads(text)) == text, path
