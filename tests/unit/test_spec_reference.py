"""docs/spec-reference.md is generated from the schema and gpufleet.spec.defaults and must not drift from them."""

from gpufleet.spec.defaults import COMPUTED
from tools.spec_reference import OUT, render


def test_spec_reference_is_current() -> None:
    assert OUT.exists(), "run python -m tools.spec_reference"
    assert OUT.read_text() == render(), (
        "the schema or gpufleet.spec.defaults changed: run python -m tools.spec_reference"
    )


def test_every_schema_field_is_documented() -> None:
    fields = render().split("\n## Computed defaults")[0]
    for line in fields.splitlines()[7:]:
        description = line.rstrip(" |").rsplit("|", 1)[-1].strip()
        assert description, f"field without a description: {line}"


def test_every_computed_default_names_a_documented_field_and_says_why() -> None:
    text = render()
    for default in COMPUTED:
        for field in default.fields or (default.path,):
            assert f"| `{field}` |" in text.split("\n## Computed defaults")[0], field
        assert f"| `{default.path}` | {default.rule} | {default.reason} |" in text
