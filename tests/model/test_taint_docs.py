"""The docs spell the GPU taint exactly as node groups render it (issue 18: they showed it without its value)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpufleet.simulate.verdict import FleetModel

ROOT = Path(__file__).parents[2]


def test_docs_spell_the_rendered_gpu_taint(make_model: Callable[..., FleetModel]) -> None:
    gpu = make_model().nodes["h100"].taints[0]
    spelled = f"`{gpu['key']}={gpu['value']}:{gpu['effect']}`"
    assert spelled == "`nvidia.com/gpu=true:NoSchedule`"
    for doc in ("schemas/fleet.schema.json", "README.md", "docs/spec-reference.md"):
        text = (ROOT / doc).read_text()
        assert spelled in text, doc
        assert "`nvidia.com/gpu:NoSchedule`" not in text, doc
