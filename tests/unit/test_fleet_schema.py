"""The shipped spec schema is a valid JSON Schema 2020-12 document (gpufleet.schema loads it without checking)."""

from __future__ import annotations

import jsonschema
import pytest

from gpufleet.schema import fleet_schema


def test_the_fleet_schema_is_valid_against_the_2020_12_metaschema() -> None:
    jsonschema.Draft202012Validator.check_schema(fleet_schema())


def test_the_metaschema_check_catches_a_broken_schema() -> None:
    broken = {**fleet_schema(), "required": "apiVersion"}  # must be an array of names
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(broken)
