"""The spec layer's fact of who launches and who scales a group's nodes (gpufleet.spec.provisioning)."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from gpufleet.spec.fleet import Provisioner
from gpufleet.spec.provisioning import PROVISIONING, provisionings, scaled_by
from tests.rules.fleets import ROOT, add_group, at, build, group


def test_every_provisioner_of_the_model_and_the_schema_has_its_facts() -> None:
    schema = json.loads((ROOT / "schemas" / "fleet.schema.json").read_text())
    [enum] = [
        node["enum"]
        for node in _walk(schema)
        if isinstance(node, dict) and "ManagedNodeGroup" in (node.get("enum") or [])
    ]
    assert set(PROVISIONING) == set(get_args(Provisioner)) == set(enum)


def _walk(node: object) -> list[object]:
    if isinstance(node, dict):
        return [node, *(n for v in node.values() for n in _walk(v))]
    if isinstance(node, list):
        return [n for v in node for n in _walk(v)]
    return []


@pytest.mark.parametrize(
    ("provisioner", "autoscaler", "scaler"),
    [
        ("ManagedNodeGroup", "Install", "ClusterAutoscaler"),
        ("ManagedNodeGroup", "None", None),
        ("Karpenter", "None", "Karpenter"),
        ("Karpenter", "Install", "Karpenter"),
    ],
)
def test_who_scales_a_group(provisioner: str, autoscaler: str, scaler: str | None) -> None:
    fleet = build(group(provisioner=provisioner), at("cluster", "autoscaler", value=autoscaler))
    assert scaled_by(fleet, fleet.node_groups[0]) == scaler


def test_the_provisioners_a_fleet_uses_in_the_order_of_their_first_group() -> None:
    fleet = build(group(provisioner="Karpenter"), add_group(name="b", instanceType="g6.xlarge"))
    assert [p.name for p in provisionings(fleet)] == ["Karpenter", "ManagedNodeGroup"]
