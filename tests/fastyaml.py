"""Test helper: PyYAML's safe loading through LibYAML (its C extension) where PyYAML has it.

The pure-Python parser takes about eight times as long, and the suite parses megabytes of upstream CRDs, chart
values and golden trees. Both loaders build the same data from these files (checked over every file under
../shared/crds, ../shared/charts and tests/golden/trees when this helper was written); gpufleet's own reader is
held to the same equality by tests/unit/test_yaml_c.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


def load(text: str) -> Any:
    return yaml.load(text, Loader=LOADER)


def load_all(text: str) -> Iterator[Any]:
    return yaml.load_all(text, Loader=LOADER)
