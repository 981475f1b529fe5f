"""The plan already holds what the engine is sent: every registered plan resource's args equal the inputs its golden
tree records (the recording is what the Pulumi engine received), at every level, so registering a plan resource
needs no translation of names or values. Refs and Concats are compared as synth shows them (`<ref:id.attr>`).

Two differences are how the tree is written or how a provider's configuration travels, not translations the plan
should do: a launch template's user data is shown decoded in its file, and a provider's configuration values other
than strings cross the engine as JSON text (the SDKs' Provider classes send `pulumi.runtime.to_json` of them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.parts import Resource
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.tree.write import decode_user_data
from tests.golden.test_golden import cases, golden_dir
from tests.trees import as_recorded, resources


def expected_inputs(res: Resource) -> dict[str, Any]:
    """What the tree must record for `res` if its args are in the engine's form."""
    args: dict[str, Any] = as_recorded(dict(res.args["object"] if "object" in res.args else res.args))
    if res.type.startswith("pulumi:providers:"):
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}
    if isinstance(args.get("userData"), str):
        args["userData"] = decode_user_data(args["userData"])
    return args


@pytest.mark.parametrize(("case", "spec", "env"), cases(), ids=lambda v: str(v) if not isinstance(v, Path) else "")
def test_plan_args_are_the_recorded_inputs(case: str, spec: Path, env: str) -> None:
    plan = build_plan(load_fleet(str(spec), env).environments[env], env)
    recorded = {entry["name"]: entry for entry in resources(golden_dir(case, env))}
    registered = [res for stage in plan.included() for res in stage.content.resources if not res.lookup]
    assert registered
    for res in registered:
        entry = recorded[res.id]
        assert entry["type"] == res.type
        assert entry["inputs"] == expected_inputs(res), f"{res.id}: plan args differ from the inputs the tree records"


def test_a_python_name_in_the_plan_is_caught() -> None:
    """The comparison sees a nested key in the Python SDK's spelling (the form the plan held before)."""
    spec, env = next((s, e) for c, s, e in cases() if c == "example")
    plan = build_plan(load_fleet(str(spec), env).environments[env], env)
    group = next(r for s in plan.included() for r in s.content.resources if r.type == "aws:eks/nodeGroup:NodeGroup")
    scaling = dict(group.args["scalingConfig"])
    scaling["min_size"] = scaling.pop("minSize")
    entry = next(e for e in resources(golden_dir("example", env)) if e["name"] == group.id)
    assert entry["inputs"] != expected_inputs(
        Resource(id=group.id, type=group.type, args={**group.args, "scalingConfig": scaling})
    )
