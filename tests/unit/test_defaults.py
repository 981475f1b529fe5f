"""Computed defaults: what a fleet took is listed (plan.md "Defaulted values"), what it set is not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpufleet import defaults
from gpufleet.pipeline import load_fleet
from gpufleet.report import plan_markdown
from gpufleet.rollout import build_plan
from gpufleet.spec import Topology

EXAMPLE = Path(__file__).resolve().parents[2] / "fleet.yaml"


def test_a_defaulted_field_is_listed_with_its_value_and_reason() -> None:
    plan = build_plan(load_fleet(str(EXAMPLE), "prod").environments["prod"], "prod")
    page = plan_markdown(plan)
    assert "| `nodeGroups[l40s].topology.policy` | `restricted` |" in page
    assert f"- `{defaults.TOPOLOGY_POLICY.path}`: {defaults.TOPOLOGY_POLICY.rule}. Why: {defaults.TOPOLOGY_POLICY.reason}." in page


def test_a_field_the_spec_sets_is_not_listed() -> None:
    fleet = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    groups = tuple(dataclasses.replace(g, topology=Topology(policy="best-effort", scope="container", placement="None")) if g.name == "l40s" else g for g in fleet.node_groups)
    taken = [field for field, _, _ in defaults.applied(dataclasses.replace(fleet, node_groups=groups), ("foundation", "admission"))]
    assert not [f for f in taken if f.startswith("nodeGroups[l40s].topology")]
    assert "nodeGroups[notebooks].topology.policy" in taken


def test_gdrcopy_is_listed_until_the_spec_sets_it() -> None:
    # fleet.yaml: Preinstalled driver, so GDRCopy stays off although h100 is an EFA Training group.
    fleet = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    assert ("versions.driver.gdrCopy", "Disabled", defaults.GDRCOPY) in defaults.applied(fleet, ("foundation",))
    operator = dataclasses.replace(fleet, versions=dataclasses.replace(fleet.versions, driver_source="Operator", driver_version="595.91.07"))
    assert ("versions.driver.gdrCopy", "Enabled", defaults.GDRCOPY) in defaults.applied(operator, ("foundation",))
    pinned = dataclasses.replace(fleet, versions=dataclasses.replace(fleet.versions, gdrcopy="Disabled"))
    assert not [f for f, _, _ in defaults.applied(pinned, ("foundation",)) if f.startswith("versions.")]
