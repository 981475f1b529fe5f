"""The kubelet's Topology Manager at pod admission, for device-plugin resources and static-CPU-manager CPUs.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/topology_manager.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE = "none", "best-effort", "restricted", "single-numa-node"
POLICIES = (NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE)


@dataclass(frozen=True, slots=True)
class Hint:
    """TopologyHint: a NUMA affinity (None = any) and whether it is the narrowest possible."""

    affinity: int | None
    preferred: bool


def mask(*nodes: int) -> int:
    """bitmask.NewBitMask(nodes...)."""
    out = 0
    for n in nodes:
        out |= 1 << n
    return out


def count(bits: int) -> int:
    return bin(bits).count("1")


def nodes_of(bits: int) -> tuple[int, ...]:
    return tuple(i for i in range(bits.bit_length()) if bits >> i & 1)


def is_narrower_than(a: int, b: int) -> bool:
    """bitmask.IsNarrowerThan: fewer bits set, or as many and lower-numbered."""
    if count(a) == count(b) and a < b:
        return True
    return count(a) < count(b)


def iterate_masks(numa_nodes: Sequence[int]) -> Iterable[int]:
    """bitmask.IterateBitMasks: every non-empty subset, smallest first."""
    for size in range(1, len(numa_nodes) + 1):
        for combo in combinations(numa_nodes, size):
            yield mask(*combo)


def device_hints(per_numa: Mapping[int, int], request: int) -> list[Hint]:
    """generateDeviceTopologyHints for an idle node: `per_numa` free units by NUMA node."""
    numa_nodes = sorted(per_numa)
    min_size = len(numa_nodes)
    hints: list[Hint] = []
    for m in iterate_masks(numa_nodes):
        in_mask = sum(n for node, n in per_numa.items() if m >> node & 1)
        if in_mask >= request and count(m) < min_size:
            min_size = count(m)
        if in_mask < request:
            continue
        hints.append(Hint(m, False))
    return [Hint(h.affinity, h.affinity is not None and count(h.affinity) == min_size) for h in hints]


# A provider's answer: resource -> hints; a resource mapped to None has no NUMA preference; an empty list means
# no NUMA set can satisfy it. An empty mapping means the provider has no preference at all.
ProviderHints = Mapping[str, "list[Hint] | None"]


def filter_providers_hints(providers: Sequence[ProviderHints]) -> list[list[Hint]]:
    """policy.go filterProvidersHints."""
    out: list[list[Hint]] = []
    for hints in providers:
        if not hints:
            out.append([Hint(None, True)])
            continue
        for resource in hints:
            value = hints[resource]
            if value is None:
                out.append([Hint(None, True)])
            elif not value:
                out.append([Hint(None, False)])
            else:
                out.append(list(value))
    return out


def filter_single_numa_hints(all_hints: Sequence[Sequence[Hint]]) -> list[list[Hint]]:
    """policy_single_numa_node.go filterSingleNumaHints: only "don't care" and one-node preferred hints remain."""
    return [[h for h in hints if h.preferred and (h.affinity is None or count(h.affinity) == 1)] for hints in all_hints]


def _permutations(all_hints: Sequence[Sequence[Hint]]) -> Iterable[tuple[Hint, ...]]:
    if not all_hints:
        yield ()
        return
    for first in all_hints[0]:
        for rest in _permutations(all_hints[1:]):
            yield (first, *rest)


def merge_filtered_hints(numa_nodes: Sequence[int], filtered: Sequence[Sequence[Hint]]) -> Hint:
    """policy.go mergeFilteredHints with mergePermutation (bitwise AND, preferred only if all are)."""
    default = mask(*numa_nodes)
    best = Hint(default, False)
    for permutation in _permutations(filtered):
        merged_mask = default
        preferred = True
        for hint in permutation:
            merged_mask &= default if hint.affinity is None else hint.affinity
            preferred = preferred and hint.preferred
        if count(merged_mask) == 0:
            continue
        best_mask = default if best.affinity is None else best.affinity
        if preferred and not best.preferred:
            best = Hint(merged_mask, preferred)
            continue
        if not preferred and best.preferred:
            continue
        if not is_narrower_than(merged_mask, best_mask):
            continue
        best = Hint(merged_mask, preferred)
    return best


def merge(policy: str, numa_nodes: Sequence[int], providers: Sequence[ProviderHints]) -> tuple[Hint, bool]:
    """Policy.Merge: the best hint and whether the pod (or container) is admitted."""
    if policy == NONE:
        return Hint(None, True), True
    filtered = filter_providers_hints(providers)
    if policy == SINGLE_NUMA_NODE:
        best = merge_filtered_hints(numa_nodes, filter_single_numa_hints(filtered))
        if best.affinity == mask(*numa_nodes):
            best = Hint(None, best.preferred)
        return best, best.preferred
    best = merge_filtered_hints(numa_nodes, filtered)
    if policy == RESTRICTED:
        return best, best.preferred
    if policy == BEST_EFFORT:
        return best, True
    raise ValueError(f"unknown Topology Manager policy {policy!r}")
