"""Fixtures: the example fleet and the existing-cluster case, planned once per session; the example's recording is
the session's (tests/synthesized.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from tests.synthesized import registrations_of

ROOT = Path(__file__).resolve().parents[2]
EXISTING = ROOT / "tests" / "golden" / "cases" / "existing-capacity-block" / "fleet.yaml"


def plan_for(spec: Path, env: str) -> RolloutPlan:
    return build_plan(load_fleet(str(spec), env).environments[env], env)


@pytest.fixture(scope="session")
def prod() -> RolloutPlan:
    return plan_for(ROOT / "fleet.yaml", "prod")


@pytest.fixture(scope="session")
def prod_sequential(tmp_path_factory: pytest.TempPathFactory) -> RolloutPlan:
    """The example with containerd's own pull on every group (imagePull.mode Default): its AL2023 groups pull their
    images from user data at boot, the RAID0 ones after nodeadm builds the array."""
    spec = yaml.safe_load((ROOT / "fleet.yaml").read_text(encoding="utf-8"))
    for group in spec["nodeGroups"]:
        group["imagePull"] = {"mode": "Default"}
    path = tmp_path_factory.mktemp("sequential") / "fleet.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return plan_for(path, "prod")


@pytest.fixture(scope="session")
def dev() -> RolloutPlan:
    return plan_for(ROOT / "fleet.yaml", "dev")


@pytest.fixture(scope="session")
def existing() -> RolloutPlan:
    return plan_for(EXISTING, "prod")


@pytest.fixture(scope="session")
def prod_registrations():  # type: ignore[no-untyped-def]
    return {r.name: r for r in registrations_of(ROOT / "fleet.yaml", "prod")}
