"""Every object of docs/examples, submitted by a member of the team whose namespace it names, is one the team may
create (issue 41 item 7): AmazonEKSEditPolicy's built-in kinds, else a rule of the team Role for its group and
plural, as plan.md's access table says. The examples' ScaledObjects had no rule (EKS access policies cover built-in
kinds only), so a member could write the Deployment docs/inference.md shows and not its autoscaler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.access_table import access_values
from gpufleet.plan.manifests import tenancy
from gpufleet.rules.pipeline import load_fleet
from gpufleet.simulate.authorization import EDIT_POLICY_KINDS, may_create
from tests.documented import documented

ROOT = Path(__file__).resolve().parents[2]
# Built-in kinds beside the workloads that AmazonEKSEditPolicy grants (EKS user guide, access-policy-permissions).
EDIT_POLICY_OBJECTS = frozenset({"Service", "ConfigMap", "Secret"})
FLEET = load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"]
# The examples and the recipes of the docs' YAML blocks (issue 41 item 10: a recipe is tested as an example is).
OBJECTS = documented()


def _allows(rules: list[dict[str, Any]], group: str, plural: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and plural in r["resources"] and verb in r["verbs"] for r in rules)


@pytest.mark.parametrize("name, obj", OBJECTS, ids=[f"{n}:{o['kind']}" for n, o in OBJECTS])
def test_a_team_member_may_create_every_documented_object(name: str, obj: dict[str, Any]) -> None:
    namespace = obj["metadata"]["namespace"]
    team = next(t for t in FLEET.teams if t.namespace == namespace)
    member = team.members[0].principal_arn
    kind, api_version = obj["kind"], obj["apiVersion"]
    decision = may_create(FLEET, "cost", member, kind, namespace)
    assert decision.refusal is None, (name, decision.refusal)
    if kind not in EDIT_POLICY_KINDS | EDIT_POLICY_OBJECTS:
        group = api_version.split("/")[0]
        assert _allows(tenancy.team_role(FLEET, team)["rules"], group, kind.lower() + "s", "create"), (name, kind)


def test_the_access_table_says_members_write_scaled_objects() -> None:
    assert "KEDA ScaledObjects (scaledobjects.keda.sh)" in access_values(FLEET, "cost")["team_edit"]
