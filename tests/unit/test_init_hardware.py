"""Defaults and hints that fit the hardware (issue 35 item 6): `gpufleet init` gives an EFA-capable Training type
fabric EFA (its zone and one subnet, and with it the EFA resource in the team's queue), and a hint never suggests
a sharing mechanism the device lacks (MIG on an L4, L40S or A10G)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.base.errors import SpecError
from gpufleet.commands import init
from gpufleet.facts import catalog
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text

ROOT = Path(__file__).resolve().parents[2]
MINIMAL: dict[str, Any] = yaml.safe_load((ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text())


@pytest.mark.parametrize(
    ("instance_type", "fabric"),
    [("p5.48xlarge", "EFA"), ("p4d.24xlarge", "EFA"), ("g6e.xlarge", "None"), ("g6.xlarge", "None")],
)
def test_init_gives_efa_training_types_fabric_efa(instance_type: str, fabric: str) -> None:
    text = init.starter_spec(init.instance_types(instance_type))
    group = load_fleet_text(text).environments["prod"].node_groups[0]
    info = catalog.lookup(instance_type)
    assert info is not None
    assert str(group.fabric) == fabric and (fabric == "EFA") == (info.efa_supported and info.gpu_count >= 8)
    if fabric == "EFA":
        assert group.zone == "use1-az4" and group.subnet_ids == ("subnet-0123456789abcdef0",)


def test_the_efa_group_gets_the_efa_resource_in_its_quota() -> None:
    fleet = load_fleet_text(init.starter_spec(init.instance_types("p5.48xlarge"))).environments["prod"]
    plan = build_plan(fleet, "prod")
    objects = [r.args.get("object") or {} for s in plan.included() for r in s.content.resources]
    queue = next(o for o in objects if o.get("kind") == "ClusterQueue")
    assert "vpc.amazonaws.com/efa" in queue["spec"]["resourceGroups"][0]["coveredResources"]


def _hints(instance_type: str, sharing: dict[str, Any], workload_class: str = "Inference") -> list[str]:
    spec = yaml.safe_load(yaml.safe_dump(MINIMAL))
    spec["nodeGroups"][0].update(instanceType=instance_type, workloadClass=workload_class, sharing=sharing)
    spec["nodeGroups"][0]["ami"]["type"] = "AL2023_x86_64_NVIDIA"
    with pytest.raises(SpecError) as raised:
        load_fleet_text(yaml.safe_dump(spec))
    return [i.hint for i in raised.value.issues if i.path[:3] == ("nodeGroups", 0, "sharing")]


@pytest.mark.parametrize(
    ("instance_type", "sharing", "hint"),
    [
        (
            "g6e.xlarge",
            {"strategy": "TimeSlicing", "replicas": 2},
            "time-slicing is for notebooks, CI and bursty low-stakes work; use MPS (the L40S has no MIG), or set"
            " sharing.acknowledgeNoIsolation: true",
        ),
        (
            "p4d.24xlarge",
            {"strategy": "TimeSlicing", "replicas": 2},
            "time-slicing is for notebooks, CI and bursty low-stakes work; use MIG or MPS, or set"
            " sharing.acknowledgeNoIsolation: true",
        ),
        ("g5.xlarge", {"strategy": "Exclusive", "profile": "1g.5gb"}, "remove profile (the A10G has no MIG)"),
        ("p4d.24xlarge", {"strategy": "Exclusive", "profile": "1g.5gb"}, "remove profile, or set strategy: MIG"),
        (
            "g6e.xlarge",
            {"strategy": "MPS", "replicas": 2, "profile": "1g.5gb"},
            "remove profile: MPS shares whole GPUs (the L40S has no MIG)",
        ),
        ("g6e.xlarge", {"strategy": "Exclusive", "migStrategy": "Mixed"}, "remove migStrategy (the L40S has no MIG)"),
    ],
)
def test_a_hint_suggests_only_what_the_device_can_do(instance_type: str, sharing: dict[str, Any], hint: str) -> None:
    assert _hints(instance_type, sharing) == [hint]


def test_no_hint_suggests_mig_on_a_gpu_without_it() -> None:
    """Every sharing setting the checks above refuse, on every GPU of the catalog without MIG."""
    cases = [
        {"strategy": "TimeSlicing", "replicas": 2},
        {"strategy": "Exclusive", "profile": "1g.5gb"},
        {"strategy": "MPS", "replicas": 2, "profile": "1g.5gb"},
        {"strategy": "Exclusive", "migStrategy": "Mixed"},
    ]
    without = sorted({t.name for t in catalog.CATALOG.values() if not t.mig_capable and t.architecture == "x86_64"})
    for name in without[:: max(1, len(without) // 6)]:  # a spread of them: each GPU model's wording is the same
        for sharing in cases:
            assert not any("MIG" in h and "has no MIG" not in h for h in _hints(name, sharing)), (name, sharing)
