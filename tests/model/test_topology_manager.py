"""Topology Manager vectors ported from kubernetes pkg/kubelet/cm/topologymanager and devicemanager tests."""

from __future__ import annotations

import pytest

from gpufleet.simulate import topology_manager as tm
from gpufleet.simulate.topology_manager import Hint, mask

TWO = (0, 1)


# policy_single_numa_node_test.go TestPolicySingleNumaNodeFilterHints
@pytest.mark.parametrize(
    "name, given, expected",
    [
        ("filter empty resources", [], []),
        ("filter hints with nil socket mask 1/2", [[Hint(None, False)], [Hint(None, True)]], [[], [Hint(None, True)]]),
        (
            "filter hints with nil socket mask 2/2",
            [[Hint(mask(0), True), Hint(None, False)], [Hint(mask(1), True), Hint(None, True)]],
            [[Hint(mask(0), True)], [Hint(mask(1), True), Hint(None, True)]],
        ),
        (
            "filter hints with empty resource socket mask",
            [[Hint(mask(1), True), Hint(mask(0), True), Hint(None, False)], []],
            [[Hint(mask(1), True), Hint(mask(0), True)], []],
        ),
        (
            "filter hints with wide sockemask",
            [
                [
                    Hint(mask(0), True),
                    Hint(mask(1), True),
                    Hint(mask(1, 2), False),
                    Hint(mask(0, 1, 2), False),
                    Hint(None, False),
                ],
                [Hint(mask(1, 2), False), Hint(mask(0, 1, 2), False), Hint(mask(0, 2), False), Hint(mask(3), False)],
                [Hint(mask(1, 2), False), Hint(mask(0, 1, 2), False), Hint(mask(0, 2), False)],
            ],
            [[Hint(mask(0), True), Hint(mask(1), True)], [], []],
        ),
    ],
)
def test_filter_single_numa_hints(name: str, given: list[list[Hint]], expected: list[list[Hint]]) -> None:
    assert tm.filter_single_numa_hints(given) == expected, name


def _p(**resources: list[Hint] | None) -> dict[str, list[Hint] | None]:
    return dict(resources)


# policy_single_numa_node_test.go mergeTestCases (numaNodes {0, 1})
@pytest.mark.parametrize(
    "name, providers, expected",
    [
        ("TopologyHint not set", [], Hint(None, True)),
        ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], Hint(None, True)),
        ("HintProvider returns -nil map[string][]TopologyHint from provider", [_p(resource=None)], Hint(None, True)),
        (
            "HintProvider returns empty non-nil map[string][]TopologyHint from provider",
            [_p(resource=[])],
            Hint(None, False),
        ),
        (
            "Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
            [_p(resource=[Hint(None, True)])],
            Hint(None, True),
        ),
        (
            "Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
            [_p(resource=[Hint(None, False)])],
            Hint(None, False),
        ),
        (
            "Two providers, 1 hint each, no common mask",
            [_p(resource1=[Hint(mask(0), True)]), _p(resource2=[Hint(mask(1), True)])],
            Hint(None, False),
        ),
        (
            "Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
            [_p(resource1=[Hint(mask(0), True)]), _p(resource2=[Hint(mask(0), False)])],
            Hint(None, False),
        ),
        (
            "Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
            [_p(resource1=[Hint(mask(1), True)]), _p(resource2=[Hint(mask(1), False)])],
            Hint(None, False),
        ),
        (
            "Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
            [_p(resource1=[Hint(mask(0), True), Hint(mask(1), True)]), _p(resource2=[Hint(mask(0, 1), False)])],
            Hint(None, False),
        ),
        (
            "Single NUMA hint generation",
            [
                _p(
                    resource1=[Hint(mask(0, 1), True)],
                    resource2=[Hint(mask(0), True), Hint(mask(1), True), Hint(mask(0, 1), False)],
                )
            ],
            Hint(None, False),
        ),
        (
            "One no-preference provider",
            [_p(resource1=[Hint(mask(0), True), Hint(mask(1), True), Hint(mask(0, 1), False)]), {}],
            Hint(mask(0), True),
        ),
    ],
)
def test_single_numa_node_merge(name: str, providers: list[dict[str, list[Hint] | None]], expected: Hint) -> None:
    hint, admit = tm.merge(tm.SINGLE_NUMA_NODE, TWO, providers)
    assert hint == expected, name
    assert admit is expected.preferred  # TestPolicySingleNumaNodeCanAdmitPodResult: admitted iff preferred


# policy_restricted_test.go TestPolicyRestrictedCanAdmitPodResult; policy_best_effort.go canAdmitPodResult is always
# true
@pytest.mark.parametrize("preferred", [False, True])
def test_restricted_admits_only_preferred_best_effort_always(preferred: bool) -> None:
    providers = [_p(resource=[Hint(None, preferred)])]
    assert tm.merge(tm.RESTRICTED, TWO, providers)[1] is preferred
    assert tm.merge(tm.BEST_EFFORT, TWO, providers)[1] is True


# devicemanager/topology_hints.go generateDeviceTopologyHints (topology_hints_test.go "2 device types, 1 NUMA each"
# style: two NUMA nodes with devices on each; preferred = the narrowest sets that satisfy the request)
@pytest.mark.parametrize(
    "per_numa, amount, expected",
    [
        ({0: 1, 1: 1}, 1, [Hint(mask(0), True), Hint(mask(1), True), Hint(mask(0, 1), False)]),
        ({0: 1, 1: 1}, 2, [Hint(mask(0, 1), True)]),
        ({0: 2, 1: 0}, 2, [Hint(mask(0), True), Hint(mask(0, 1), False)]),
        ({0: 4, 1: 4}, 8, [Hint(mask(0, 1), True)]),
        ({0: 4, 1: 4}, 9, []),
    ],
)
def test_device_hints(per_numa: dict[int, int], amount: int, expected: list[Hint]) -> None:
    assert tm.device_hints(per_numa, amount) == expected


def test_is_narrower_than() -> None:
    # bitmask_test.go TestIsNarrowerThan: fewer bits wins; equal count, lower-numbered wins
    assert tm.is_narrower_than(mask(0), mask(0, 1))
    assert not tm.is_narrower_than(mask(0, 1), mask(0))
    assert tm.is_narrower_than(mask(0), mask(1))
    assert not tm.is_narrower_than(mask(1), mask(0))


@pytest.mark.parametrize(
    "policy, admitted", [(tm.NONE, True), (tm.BEST_EFFORT, True), (tm.RESTRICTED, True), (tm.SINGLE_NUMA_NODE, False)]
)
def test_full_node_pod_on_two_numa_eight_gpu_node(policy: str, admitted: bool) -> None:
    """../shared/UPSTREAM.md: single-numa-node rejects an 8-GPU pod on a 2-NUMA, 4-GPU-per-node machine; restricted
    admits the narrowest set (both nodes)."""
    providers = [
        _p(**{"nvidia.com/gpu": tm.device_hints({0: 4, 1: 4}, 8)}),
        _p(cpu=tm.device_hints({0: 90, 1: 90}, 180)),
    ]
    assert tm.merge(policy, TWO, providers)[1] is admitted
