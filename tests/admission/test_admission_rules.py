"""Cross-field rules of the admission and sharing stages: each with a passing and a failing case and the
exact message."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.base.errors import Issue
from gpufleet.rules import cross_field
from gpufleet.rules.pipeline import fleet_from
from tests.admission.conftest import BASE

Edit = Callable[[dict[str, Any]], None]


def issues(rule: str, *edits: Edit) -> list[tuple[tuple[Any, ...], str]]:
    data = copy.deepcopy(BASE)
    for edit in edits:
        edit(data)
    fleet = fleet_from(data)
    found: list[Issue] = list(cross_field.RULES[rule](fleet))
    return [(i.path, i.message) for i in found]


def test_base_fleet_passes() -> None:
    assert issues("admission") == []
    assert issues("sharing-names") == []


def test_borrowing_preemption_needs_reclaim() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["admission"]["preemption"]["reclaimWithinCohort"] = "Never"

    assert issues("admission", edit) == [
        (
            ("admission", "preemption", "borrowWithinCohort"),
            (
                "borrowWithinCohort LowerPriority needs reclaimWithinCohort other than Never (Kueue rejects the"
                " ClusterQueue otherwise)"
            ),
        )
    ]


def test_preemptible_class_may_not_rank_above_a_protected_one() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["admission"]["priorities"] = [
            {"name": "serving", "value": 500, "preemptible": False},
            {"name": "training", "value": 1000},
        ]

    assert issues("admission", edit) == [
        (
            ("admission", "priorities", 1, "value"),
            'preemptible class "training" (1000) ranks at or above non-preemptible "serving": it could preempt it',
        )
    ]


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-operator", "default", "kube-custom"])
def test_team_may_not_take_a_system_namespace(namespace: str) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["teams"][2]["namespace"] = namespace

    assert issues("admission", edit) == [
        (("teams", 2, "namespace"), f'team namespace "{namespace}" is a system namespace')
    ]


def test_explicit_placement_needs_topology_labels() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["nodeGroups"][1]["topology"] = {"placement": "Required"}

    assert issues("admission", edit) == [
        (
            ("nodeGroups", 1, "topology", "placement"),
            (
                "topology-aware placement needs the EKS network topology labels, which g5.xlarge nodes do not get"
                " (Kueue would find no capacity)"
            ),
        )
    ]


def test_admission_rules_wait_for_an_environment_that_deploys_admission() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["environments"] = {"dev": {"rollout": {"through": "telemetry"}}}
        d["teams"][2]["namespace"] = "kube-system"

    assert issues("admission", edit) == []


@pytest.mark.parametrize(
    ("name", "sharing", "reserved"),
    [
        ("default", {"strategy": "TimeSlicing", "replicas": 2}, "default"),
        ("default", {"strategy": "MPS", "replicas": 2}, "default"),
    ],
)
def test_shared_group_may_not_take_the_default_entry(name: str, sharing: dict[str, Any], reserved: str) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["nodeGroups"][1]["name"] = name
        d["nodeGroups"][1]["sharing"] = sharing

    assert issues("sharing-names", edit) == [
        (
            ("nodeGroups", 1, "name"),
            (
                f"{'an' if sharing['strategy'] == 'MPS' else 'a'} {sharing['strategy']} group cannot be named"
                f' "{reserved}": that config entry is the one for groups without sharing'
            ),
        )
    ]


def test_mig_group_may_not_be_named_all_disabled_but_an_exclusive_one_may() -> None:
    def mig(d: dict[str, Any]) -> None:
        d["nodeGroups"][0]["name"] = "all-disabled"
        d["nodeGroups"][0]["sharing"] = {"strategy": "MIG", "profile": "1g.10gb"}

    assert issues("sharing-names", mig) == [
        (
            ("nodeGroups", 0, "name"),
            'a MIG group cannot be named "all-disabled": that config entry is the one for groups without sharing',
        )
    ]

    def exclusive(d: dict[str, Any]) -> None:
        d["nodeGroups"][0]["name"] = "default"

    assert issues("sharing-names", exclusive) == []
