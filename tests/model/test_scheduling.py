"""Scheduler filter vectors ported from kubernetes: staging/src/k8s.io/api/core/v1/toleration_test.go
(TestTolerationToleratesTaint), pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go,
staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go and
plugin/pkg/admission/extendedresourcetoleration/admission_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.simulate import scheduling
from gpufleet.simulate.workload import Container, PodSpec

TAINT = {"key": "foo", "value": "bar", "effect": "NoSchedule"}


# toleration_test.go TestTolerationToleratesTaint
@pytest.mark.parametrize(
    "description, toleration, expected",
    [
        (
            (
                "toleration and taint have the same key and effect, and operator is Exists, and taint has no value,"
                " expect tolerated"
            ),
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
            True,
        ),
        (
            (
                "toleration and taint have the same key and effect, and operator is Exists, and taint has some value,"
                " expect tolerated"
            ),
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
            True,
        ),
        (
            (
                "toleration and taint have the same effect, toleration has empty key and operator is Exists, means"
                " match all taints, expect tolerated"
            ),
            {"key": "", "operator": "Exists", "effect": "NoSchedule"},
            True,
        ),
        (
            "toleration and taint have the same key, effect and value, and operator is Equal, expect tolerated",
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"},
            True,
        ),
        (
            (
                "toleration and taint have the same key and effect, but different values, and operator is Equal, expect"
                " not tolerated"
            ),
            {"key": "foo", "operator": "Equal", "value": "value1", "effect": "NoSchedule"},
            False,
        ),
        (
            (
                "toleration and taint have the same key and value, but different effects, and operator is Equal, expect"
                " not tolerated"
            ),
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute"},
            False,
        ),
        ("toleration with empty effect matches every effect", {"key": "foo", "operator": "Exists"}, True),
    ],
)
def test_tolerates(description: str, toleration: dict[str, Any], expected: bool) -> None:
    assert scheduling.tolerates(toleration, TAINT) is expected, description


def test_prefer_no_schedule_does_not_filter() -> None:
    # taint_toleration_test.go TestTaintTolerationFilter: "PreferNoSchedule taint ... can be scheduled"
    assert scheduling.untolerated([{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}], []) == []
    assert scheduling.untolerated([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}], []) != []


# nodeaffinity_test.go TestNodeSelectorMatch / TestRequiredNodeAffinity
LABELS = {"foo": "bar", "num": "5"}


@pytest.mark.parametrize(
    "name, term, expected",
    [
        ("In matches", {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "value2"]}]}, True),
        ("In does not match", {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["value1"]}]}, False),
        ("NotIn", {"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["value1"]}]}, True),
        ("Exists", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, True),
        ("DoesNotExist", {"matchExpressions": [{"key": "foo", "operator": "DoesNotExist"}]}, False),
        ("Gt", {"matchExpressions": [{"key": "num", "operator": "Gt", "values": ["4"]}]}, True),
        ("Lt", {"matchExpressions": [{"key": "num", "operator": "Lt", "values": ["4"]}]}, False),
        (
            "expressions are ANDed",
            {"matchExpressions": [{"key": "foo", "operator": "Exists"}, {"key": "bar", "operator": "Exists"}]},
            False,
        ),
        ("empty term matches nothing", {"matchExpressions": []}, False),
    ],
)
def test_node_selector_term(name: str, term: dict[str, Any], expected: bool) -> None:
    assert scheduling.matches_term(term, LABELS) is expected, name


def test_terms_are_ored_and_node_selector_must_all_match() -> None:
    container = (Container(name="c", requests={}, limits={}),)
    terms = (
        {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["nope"]}]},
        {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]},
    )
    assert scheduling.matches_node(PodSpec(containers=container, required_terms=terms), LABELS)
    assert not scheduling.matches_node(PodSpec(containers=container, node_selector={"foo": "bar", "x": "y"}), LABELS)


def test_extended_resource_toleration() -> None:
    # admission_test.go: a pod requesting extended resources tolerates taints keyed by them (Exists, NoSchedule);
    # native resources and hugepages add nothing
    pod = PodSpec(
        containers=(
            Container(
                name="c",
                requests={"nvidia.com/gpu": 1, "cpu": 1000, "hugepages-2Mi": 10, "vpc.amazonaws.com/efa": 1},
                limits={},
            ),
        )
    )
    assert scheduling.extended_resource_tolerations(pod) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "vpc.amazonaws.com/efa", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_insufficient() -> None:
    # noderesources/fit_test.go: "Insufficient <resource>" for every resource over allocatable; zero requests ignored
    assert scheduling.insufficient(
        {"cpu": 3000, "nvidia.com/gpu": 9, "example.com/x": 0}, {"cpu": 2000, "nvidia.com/gpu": 8}
    ) == ["cpu", "nvidia.com/gpu"]
