"""The shipped spec schema is a valid JSON Schema 2020-12 document (gpufleet.spec.schema loads it without checking), and
an environment's merged spec gets the same schema issues when the sections it leaves unchanged are not validated
again (gpufleet.rules.pipeline validates them once, in the base spec)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from gpufleet.rules.pipeline import unchanged_sections
from gpufleet.spec.environments import merge_environment
from gpufleet.spec.load import load_file
from gpufleet.spec.schema import fleet_schema
from gpufleet.spec.schema_errors import schema_issues

ROOT = Path(__file__).resolve().parents[2]


def test_the_fleet_schema_is_valid_against_the_2020_12_metaschema() -> None:
    jsonschema.Draft202012Validator.check_schema(fleet_schema())


def test_the_metaschema_check_catches_a_broken_schema() -> None:
    broken = {**fleet_schema(), "required": "apiVersion"}  # must be an array of names
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(broken)


def test_an_environment_gets_the_same_schema_issues_without_its_unchanged_sections() -> None:
    specs = sorted((ROOT / "tests" / "specs").rglob("*.yaml")) + [ROOT / "fleet.yaml"]
    compared = with_issues = 0
    for spec in specs:
        loaded = load_file(str(spec))
        if loaded.fatal or not isinstance(loaded.data, dict) or not isinstance(loaded.data.get("environments"), dict):
            continue
        if schema_issues(loaded.data, loaded.source.plain):
            continue  # the pipeline trusts nothing of an environment whose base spec has schema issues
        for env in loaded.data["environments"]:
            data, view, _ = merge_environment(loaded.data, env, loaded.source)
            trusted = unchanged_sections(data, loaded.data)
            full = schema_issues(data, view.plain)
            assert schema_issues(data, view.plain, trusted) == full, (spec.name, env)
            compared += 1
            with_issues += bool(full)
    assert compared > 20 and with_issues >= 2  # environments whose overrides break the schema among them
