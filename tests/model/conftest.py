"""Fleets for the model tests: the example fleet.yaml as data, changed per test, planned for one environment."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.model.explain import FleetModel, fleet_model
from gpufleet.pipeline import load_fleet_text
from gpufleet.rollout import build_plan

EXAMPLE: dict[str, Any] = yaml.safe_load((Path(__file__).parents[2] / "fleet.yaml").read_text())

Edit = Callable[[dict[str, Any]], None]


def group(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in data["nodeGroups"] if g["name"] == name)


def model_of(edit: Edit | None = None, env: str = "prod") -> FleetModel:
    data = copy.deepcopy(EXAMPLE)
    if edit:
        edit(data)
    fleet = load_fleet_text(yaml.safe_dump(data), env=env).environments[env]
    return fleet_model(build_plan(fleet, env))


@pytest.fixture
def make_model() -> Callable[..., FleetModel]:
    return model_of
