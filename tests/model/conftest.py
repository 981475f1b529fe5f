"""Fleets for the model tests: the example fleet.yaml as data, changed per test, planned for one environment."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.simulate.verdict import FleetModel, fleet_model
from gpufleet.simulate.workload import KINDS

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


def serving_every_kind(model: FleetModel) -> FleetModel:
    """The model with every kind the reader knows served at the apiVersions the tests use, as if the fleet installed
    the job APIs (today it installs none: JobSet, PyTorchJob, MPIJob and TrainJob stop at stage api)."""
    versions = {
        "JobSet": ("jobset.x-k8s.io/v1alpha2",),
        "PyTorchJob": ("kubeflow.org/v1",),
        "MPIJob": ("kubeflow.org/v2beta1",),
        "TrainJob": ("trainer.kubeflow.org/v1alpha1",),
    }
    return dataclasses.replace(model, served={**model.served, **{k: versions[k] for k in KINDS if k in versions}})


@pytest.fixture
def make_model() -> Callable[..., FleetModel]:
    return model_of
