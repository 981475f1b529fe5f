"""The table of cross-field rules, `(fleet) -> Iterable[Issue]` registered by name, and what every rule
reads: the fleet's node groups with their paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from gpufleet.base.errors import Issue, Path
from gpufleet.spec.fleet import Fleet, NodeGroup

Rule = Callable[[Fleet], Iterable[Issue]]


RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn

    return register


def check(fleet: Fleet, skip: Iterable[str] = ()) -> list[Issue]:
    skipped = set(skip)
    return [issue for name, fn in RULES.items() if name not in skipped for issue in fn(fleet)]


def each_group(fleet: Fleet) -> Iterator[tuple[Path, NodeGroup]]:
    for i, group in enumerate(fleet.node_groups):
        yield ("nodeGroups", i), group
