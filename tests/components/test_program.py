"""`pulumi up` runs __main__.py; synth records `deploy(plan)`. Prove they register the same resources."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path

import pulumi
import pytest

from gpufleet.components.recording import RecordingMocks, record
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet

ROOT = Path(__file__).resolve().parents[2]


def test_main_registers_exactly_what_synth_records(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = build_plan(load_fleet(str(ROOT / "fleet.yaml"), "dev").environments["dev"], "dev")
    expected = sorted((r.name, r.type) for r in record(plan))

    mocks = RecordingMocks(plan)
    monkeypatch.chdir(ROOT)
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.settings.reset_options()
    pulumi.runtime.set_mocks(mocks, project="gpufleet", stack="dev", preview=False)
    pulumi.runtime.set_all_config({"gpufleet:spec": "fleet.yaml"})

    @pulumi.runtime.test
    def program() -> None:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")

    program()
    pulumi.runtime.set_all_config({})
    registered = sorted((name, typ) for name, (typ, _) in mocks.inputs.items())
    assert registered == expected
