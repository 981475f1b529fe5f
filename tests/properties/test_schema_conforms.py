"""gpufleet.spec.schema.conforms agrees with jsonschema on damaged specs as the loader reads them (issue 16 item 4;
tests/unit/test_schema_conforms.py holds it for every spec of the repository): a yes where jsonschema finds an
error would let an invalid spec through."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.spec.load import load_text
from gpufleet.spec.schema import conforms
from gpufleet.spec.schema_errors import schema_issues
from tests.properties.mutations import SUBTLE_OPS, mutated_spec


@given(st.one_of(mutated_spec(), mutated_spec(most=2, ops=SUBTLE_OPS)))
def test_a_damaged_spec_gets_the_same_answer(text: str) -> None:
    loaded = load_text(text, "fleet.yaml")
    if not loaded.fatal:
        assert conforms(loaded.data) == (schema_issues(loaded.data, {}) == [])
