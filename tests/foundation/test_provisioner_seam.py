"""Adding a provisioner is one module (tests/foundation/static_capacity.py, a test double) and its registry lines:
gpufleet.plan.builders.provisioners.PROVISIONERS for the plan, gpufleet.spec.provisioning.PROVISIONING for the
facts the rules and the plan share. Nothing else in the plan names a provisioner: its stage-1 resources and
controller, plan.md's node-group row, note, access row and "Before you deploy" item, and the cost estimate's Spot
range all come from the module. (The schema's enum and the Provisioner Literal take its name too; mypy then lists
every `match` on the value, such as the rule karpenter's, that needs a case.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import cast

import pytest

from gpufleet.plan.builders import provisioners
from gpufleet.plan.report import node_group_rows, plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.plan.stages import cost
from gpufleet.rules.pipeline import load_fleet
from gpufleet.spec import names, provisioning
from gpufleet.spec.fleet import Fleet
from tests.foundation import static_capacity

ROOT = Path(__file__).resolve().parents[2]
MIXED = ROOT / "tests" / "golden" / "cases" / "karpenter-mixed" / "fleet.yaml"


@pytest.fixture
def static_fleet(monkeypatch: pytest.MonkeyPatch) -> Fleet:
    double = static_capacity.StaticCapacity()
    monkeypatch.setitem(cast(dict[str, object], provisioners.PROVISIONERS), static_capacity.NAME, double)
    monkeypatch.setitem(
        cast(dict[str, object], provisioning.PROVISIONING), static_capacity.NAME, static_capacity.STATIC
    )
    fleet = load_fleet(str(MIXED), "prod").environments["prod"]
    groups = tuple(
        dataclasses.replace(g, provisioner=static_capacity.NAME) if g.name == "h100" else g  # type: ignore[arg-type]
        for g in fleet.node_groups
    )
    return dataclasses.replace(fleet, node_groups=groups)


def test_stage_one_takes_the_groups_resources_and_the_controller_from_the_module(static_fleet: Fleet) -> None:
    plan = build_plan(static_fleet, "prod")
    ids = [r.id for r in plan.stages[0].content.resources]
    assert [i for i in ids if i.startswith("static-h100-")] == [f"static-h100-{i}" for i in range(16)]
    assert static_capacity.CONTROLLER in ids
    # The managed node group and launch template of h100 are gone; the Karpenter pool l40s keeps its own.
    h100 = static_fleet.node_group("h100")
    assert names.node_group_id(h100) not in ids and names.launch_template_id(h100) not in ids
    assert "karpenter-interruption-queue" in ids


def test_plan_md_and_the_cost_estimate_take_its_words(static_fleet: Fleet) -> None:
    plan = build_plan(static_fleet, "prod")
    rows = {row[0]: row for row in node_group_rows(plan)}
    assert rows["h100"][1:6] == (
        "static capacity `h100`",
        "p5.48xlarge",
        "always 16",
        "OnDemand; static",
        "every node, always",
    )
    text = plan_markdown(plan)
    assert static_capacity.NOTE in text
    assert "| `kube-system/static` (EKS Pod Identity, the static capacity controller) | nothing at all | AWS |" in text
    assert "The static instances' capacity is reserved." in text
    assert cost.spot_capacity(static_fleet.node_group("h100")) is None


def test_every_provisioner_of_the_model_has_its_plan_side() -> None:
    assert set(provisioners.PROVISIONERS) == set(provisioning.PROVISIONING)
