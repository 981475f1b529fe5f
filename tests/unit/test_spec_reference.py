"""docs/spec-reference.md is generated from the schema and must not drift from it."""

from tools.spec_reference import OUT, render


def test_spec_reference_is_current() -> None:
    assert OUT.exists(), "run python tools/spec_reference.py"
    assert OUT.read_text() == render(), "the schema changed: run python tools/spec_reference.py"


def test_every_schema_field_is_documented() -> None:
    for line in render().splitlines()[7:]:
        description = line.rstrip(" |").rsplit("|", 1)[-1].strip()
        assert description, f"field without a description: {line}"
