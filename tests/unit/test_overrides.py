"""Overrides that remove, and quotas that follow a smaller environment (issue 35 item 7): `null` in an environment
override removes the field (its default applies; the schema judges the merged spec), and
`environments.<env>.quotaScaling: MaxSize` scales team quotas with the environment's group sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.base.errors import SpecError
from gpufleet.rules.pipeline import Validated, load_fleet_text

ROOT = Path(__file__).resolve().parents[2]
MINIMAL: dict[str, Any] = yaml.safe_load((ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text())
RESERVATION = {"id": "cr-0123456789abcdef0", "instanceCount": 4}


def _spec(dev: dict[str, Any], **group: Any) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(yaml.safe_dump(MINIMAL))
    spec["nodeGroups"][0].update(group)
    spec["environments"] = {
        "dev": {"rollout": {"through": "admission"}, **dev},
        "prod": {"rollout": {"through": "admission"}},
    }
    return spec


def _load(spec: dict[str, Any]) -> Validated:
    return load_fleet_text(yaml.safe_dump(spec, sort_keys=False))


def _errors(spec: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as raised:
        _load(spec)
    return [i.message + (f" ({i.context})" if i.context else "") for i in raised.value.issues if i.severity == "error"]


def test_null_removes_a_field_in_one_environment() -> None:
    capacity = {"type": "OnDemand", "reservation": RESERVATION}
    spec = _spec({"overrides": {"nodeGroups": {"l4": {"capacity": {"reservation": None}}}}}, capacity=capacity)
    spec["nodeGroups"][0]["scaling"]["minSize"] = 4  # runs the reserved instances (no warning)
    fleet = _load(spec)
    assert fleet.environments["prod"].node_groups[0].reservation is not None
    assert fleet.environments["dev"].node_groups[0].reservation is None
    assert (
        fleet.environments["dev"].node_groups[0].capacity_type
        == fleet.environments["prod"].node_groups[0].capacity_type
    )


def test_before_this_null_was_a_type_error_and_is_one_outside_overrides() -> None:
    spec = _spec({}, capacity={"type": "OnDemand", "reservation": None})
    assert _errors(spec) == ["expected mapping, got null"]


def test_null_removes_a_field_and_its_default_applies() -> None:
    spec = _spec({"overrides": {"nodeGroups": {"l4": {"scaling": {"minSize": None}}}}})
    spec["nodeGroups"][0]["scaling"]["minSize"] = 1
    fleet = _load(spec)
    assert (fleet.environments["dev"].node_groups[0].min_size, fleet.environments["prod"].node_groups[0].min_size) == (
        0,
        1,
    )


def test_null_removes_an_optional_section() -> None:
    spec = _spec({"overrides": {"checkpoints": None}})
    spec["checkpoints"] = {"bucket": "mini-checkpoints", "modelParameters": 10**9, "meanTimeBetweenFailuresHours": 6}
    fleet = _load(spec)
    assert fleet.environments["prod"].checkpoints is not None and fleet.environments["dev"].checkpoints is None


def test_the_schema_judges_the_merged_spec() -> None:
    """Removing a required field is the merged spec's error, named with its environment."""
    spec = _spec({"overrides": {"nodeGroups": {"l4": {"scaling": {"maxSize": None}}}}})
    assert _errors(spec) == ['missing required field "maxSize" (environment dev)']
    spec = _spec({"overrides": {"nodeGroups": {"l4": None}}})  # a node group is not removed by null
    assert _errors(spec) == ["expected mapping, got null"]


QUOTAS = [{"nodeGroup": "l4", "gpus": 4}]


@pytest.mark.parametrize(
    ("scaling", "team_override", "expected"),
    [
        ("MaxSize", None, {"gpus": 2, "borrowingLimit": 1, "lendingLimit": 1}),  # maxSize 4 -> 2: half, rounded down
        (None, {"quotas": [{"nodeGroup": "l4", "gpus": 1}]}, {"gpus": 1}),  # quotas written for dev win
        ("MaxSize", {"quotas": [{"nodeGroup": "l4", "gpus": 1}]}, {"gpus": 1}),
        ("Fixed", {"quotas": [{"nodeGroup": "l4", "gpus": 2}]}, {"gpus": 2}),
    ],
)
def test_quotas_scale_with_the_group_where_asked(
    scaling: str | None, team_override: dict[str, Any] | None, expected: dict[str, int]
) -> None:
    overrides: dict[str, Any] = {"nodeGroups": {"l4": {"scaling": {"maxSize": 2}}}}
    if team_override:
        overrides["teams"] = {"vision": team_override}
    spec = _spec({"overrides": overrides} | ({"quotaScaling": scaling} if scaling else {}))
    spec["teams"][0]["cohort"] = "research"
    spec["teams"][0]["quotas"] = [{"nodeGroup": "l4", "gpus": 4, "borrowingLimit": 3, "lendingLimit": 2}]
    fleet = _load(spec)
    quota = fleet.environments["dev"].teams[0].quotas[0]
    got = {"gpus": quota.gpus, "borrowingLimit": quota.borrowing_limit, "lendingLimit": quota.lending_limit}
    assert {k: v for k, v in got.items() if v is not None} == expected
    assert fleet.environments["prod"].teams[0].quotas[0].gpus == 4


def test_without_quota_scaling_a_smaller_group_needs_its_quotas_rewritten() -> None:
    spec = _spec({"overrides": {"nodeGroups": {"l4": {"scaling": {"maxSize": 2}}}}})
    assert _errors(spec) == [
        '4 GPUs is more than node group "l4" can ever hold (maxSize 2 x 1 GPU(s) per g6.xlarge = 2) (environment dev)'
    ]
    spec["environments"]["dev"]["quotaScaling"] = "MaxSize"
    assert _load(spec).environments["dev"].teams[0].quotas[0].gpus == 2
