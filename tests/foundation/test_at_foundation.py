"""Each later stage owns what it puts into the foundation stage (gpufleet.plan.parts.AtFoundation): the foundation
builder takes the sharing, telemetry and health objects from those stages' builders, never from their manifests,
and takes none of them for an environment whose rollout stops before the stage."""

from __future__ import annotations

import ast
from pathlib import Path

from gpufleet.plan.parts import BuildContext
from gpufleet.plan.stages import foundation
from gpufleet.rules.pipeline import load_fleet
from tests.syntax import syntax_tree

ROOT = Path(__file__).resolve().parents[2]


def test_the_foundation_builder_renders_no_later_stage_itself() -> None:
    tree = syntax_tree(ROOT / "gpufleet" / "plan" / "stages" / "foundation.py")
    imported = {
        f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module for a in n.names
    }
    owned = {f"gpufleet.plan.manifests.{m}" for m in ("sharing", "telemetry", "health")}
    assert imported & owned == set()
    assert [name for name, _ in foundation.AT_FOUNDATION] == ["telemetry", "sharing", "health"]


def test_only_the_deployed_stages_put_objects_into_the_foundation() -> None:
    fleet = load_fleet(str(ROOT / "fleet.yaml")).environments["prod"]
    for through, expected in (
        ("foundation", set()),
        ("telemetry", {"gpufleet-dcgm-metrics"}),
        ("cost", {"gpufleet-dcgm-metrics", "gpufleet-device-plugin-config", "gpufleet-mig-config"}),
    ):
        content = foundation.build(BuildContext(fleet=fleet, environment="prod", through=through))
        configmaps = {r.args["object"]["metadata"]["name"] for r in content.resources if r.type.endswith(":ConfigMap")}
        assert configmaps == expected, through
