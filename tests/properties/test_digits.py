"""Digits of other scripts (issue 47 item 9): where a value means an AWS or Kubernetes value, only ASCII digits are
digits. Python's `\\d` and str.isdigit() hold for "٣" (Arabic-Indic), "３" (fullwidth), "²" and "①": the schema's
patterns let such values through to a deploy AWS refuses, and int() of "²" raised (exit 3)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.spec.schema import fleet_schema, whole_string
from tests.properties.cli import run, scratch
from tests.properties.digits import translated
from tests.properties.mutations import SEED_DATA, _walk


def _patterns(node: Any) -> set[str]:
    found: set[str] = set()
    for _, value in _walk(node):
        if isinstance(value, dict) and isinstance(value.get("pattern"), str):
            found.add(value["pattern"])
    return found


PATTERNS = sorted(_patterns(fleet_schema()))


@pytest.mark.parametrize("pattern", [p for p in PATTERNS if "0-9" in p or "\\d" in p])
@given(st.data())
def test_no_schema_pattern_accepts_another_scripts_digit(pattern: str, data: st.DataObject) -> None:
    """Every pattern that takes digits, over values it accepts with some digits in another script: none matches
    (the patterns of an endpoint CIDR, a region, a zone ID, an add-on version and a release used to)."""
    ascii_only = st.characters(codec="ascii")
    value = data.draw(st.from_regex(pattern.replace("$", r"\Z"), fullmatch=True, alphabet=ascii_only))
    if any(c in "0123456789" for c in value):
        assert not whole_string(pattern).search(data.draw(translated(value)))


def _digit_strings(data: Any) -> list[tuple[Any, ...]]:
    """Paths of the strings with digits in a spec, outside helm values (chart values may hold any text)."""
    return [
        path
        for path, value in _walk(data)
        if isinstance(value, str) and any(c in "0123456789" for c in value) and path[:1] != ("helm",)
    ]


SPECS = {name: data for name, data in SEED_DATA.items() if isinstance(data, dict) and _digit_strings(data)}


@given(st.data())
def test_a_spec_value_in_another_scripts_digits_is_refused(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SPECS)))
    spec = copy.deepcopy(SPECS[name])
    path = data.draw(st.sampled_from(_digit_strings(spec)))
    parent = spec
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = data.draw(translated(parent[path[-1]]))
    with scratch() as root:
        (root / "fleet.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
        result = run(["validate", "fleet.yaml"], root)
        assert result.code == 1, f"{'.'.join(map(str, path))} = {parent[path[-1]]!r} validated"
        assert "fleet.yaml:" in result.stderr
