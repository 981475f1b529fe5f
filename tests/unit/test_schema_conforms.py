"""gpufleet.spec.schema.conforms, the check that spares a valid spec the import of jsonschema (issue 16 item 4), says yes
exactly where jsonschema, configured as gpufleet.spec.schema_errors configures it, finds no error: over every spec of the
repository and each environment's merged spec, with and without the sections the pipeline trusts (damaged specs:
tests/properties/test_schema_conforms.py). A yes where jsonschema finds an error would let an invalid spec through;
a no for a valid spec only costs time, but every valid spec here must get its yes, or validate loads jsonschema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpufleet.rules.pipeline import unchanged_sections
from gpufleet.spec.environments import merge_environment
from gpufleet.spec.load import load_file
from gpufleet.spec.schema import conforms, fleet_schema
from gpufleet.spec.schema_errors import schema_issues

ROOT = Path(__file__).resolve().parents[2]
SPECS = (
    sorted((ROOT / "tests" / "specs").rglob("*.yaml"))
    + sorted((ROOT / "tests" / "golden" / "cases").glob("*/fleet.yaml"))
    + [ROOT / "fleet.yaml"]
)
VALID = [p for p in SPECS if "invalid" not in p.parts]


def _agree(data: Any, trusted: frozenset[str] = frozenset()) -> bool:
    """conforms and jsonschema agree on `data`; returns whether it conforms."""
    verdict = conforms(data, trusted)
    assert verdict == (schema_issues(data, {}, trusted) == []), (verdict, schema_issues(data, {}, trusted))
    return verdict


def test_every_spec_and_environment_of_the_repository() -> None:
    conforming = not_conforming = 0
    for spec in SPECS:
        loaded = load_file(str(spec))
        if loaded.fatal or not isinstance(loaded.data, dict):
            continue
        base = _agree(loaded.data)
        conforming += base
        not_conforming += not base
        environments = loaded.data.get("environments")
        for env in environments if isinstance(environments, dict) else []:
            data, _, merge_issues = merge_environment(loaded.data, env, loaded.source)
            if merge_issues:
                continue
            _agree(data)
            if base:
                _agree(data, unchanged_sections(data, loaded.data))
    assert conforming > 50 and not_conforming > 25  # both answers are exercised


def test_every_valid_spec_conforms_without_jsonschema() -> None:
    assert [p.relative_to(ROOT).as_posix() for p in VALID if not conforms(load_file(str(p)).data)] == []


def test_a_keyword_the_check_does_not_know_leaves_the_answer_to_jsonschema() -> None:
    # Were the schema to gain a keyword conforms does not implement, a spec would not be let through unchecked.
    data = load_file(str(ROOT / "fleet.yaml")).data
    schema = fleet_schema()
    assert conforms(data)
    schema["properties"]["metadata"]["dependentRequired"] = {"name": ["labels"]}
    try:
        assert not conforms(data)
    finally:
        del schema["properties"]["metadata"]["dependentRequired"]
