"""Every error at once (issue 35 item 9): the cross-field rules that read no failing section run in the same pass as
the schema, so fixing the schema errors does not reveal a second round. A rule that reads a section that does not
conform reports nothing (what it would read there is a stand-in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.base.errors import Issue, SpecError
from gpufleet.rules import cross_field, pipeline
from gpufleet.rules.pipeline import FLEET_SECTIONS, load_fleet, load_fleet_text
from gpufleet.spec.fleet import Fleet

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = (ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text()


def _errors(spec: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as raised:
        load_fleet_text(yaml.safe_dump(spec, sort_keys=False))
    return [(".".join(map(str, i.path)), i.message) for i in raised.value.issues if i.severity == "error"]


def _spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(MINIMAL)
    spec["teams"][0]["quotas"][0]["borrowingLimit"] = 2  # limits-need-cohort: reads teams only
    spec["cluster"]["systemNodes"].update(minSize=3, maxSize=2)  # system-nodes: reads the cluster only
    return spec


def test_rule_errors_come_with_the_schema_errors() -> None:
    spec = _spec()
    spec["nodeGroups"][0]["scaling"]["maxSize"] = "four"  # the schema: nodeGroups fails
    spec["teams"][0]["quotas"][0]["gpus"] = 40  # quota-fits reads nodeGroups: not judged against a stand-in
    assert _errors(spec) == [
        ("cluster.systemNodes.minSize", "minSize 3 is larger than maxSize 2"),
        ("nodeGroups.0.scaling.maxSize", 'expected integer, got string "four"'),
        ("teams.0.quotas.0.borrowingLimit", 'borrowingLimit needs a cohort, but team "vision" has none'),
    ]


def test_without_schema_errors_the_same_rules_report() -> None:
    """The same rule errors, found by the ordinary pass once the schema error is fixed: nothing more, nothing less
    (apart from the quota the nodeGroups rules could not judge before)."""
    spec = _spec()
    assert _errors(spec) == [
        ("cluster.systemNodes.minSize", "minSize 3 is larger than maxSize 2"),
        ("teams.0.quotas.0.borrowingLimit", 'borrowingLimit needs a cohort, but team "vision" has none'),
    ]


@pytest.mark.parametrize(
    ("section", "value"),
    [("environments", []), ("cluster", {"name": "mini"}), ("teams", [{"name": "Vision!"}]), ("admission", 3)],
)
def test_a_failing_section_silences_exactly_the_rules_that_read_it(section: str, value: Any) -> None:
    spec = _spec()
    spec[section] = value
    errors = _errors(spec)
    assert all(not path.startswith(section) or path == section or "stand-in" not in text for path, text in errors)
    assert not any("stand-in" in text for _, text in errors)
    cohort = ("teams.0.quotas.0.borrowingLimit", 'borrowingLimit needs a cohort, but team "vision" has none')
    system = ("cluster.systemNodes.minSize", "minSize 3 is larger than maxSize 2")
    assert (cohort in errors) == (section != "teams")
    assert (system in errors) == (section != "cluster")


def test_nothing_but_stand_ins_reports_nothing() -> None:
    bad = [Issue(path=("apiVersion",), message="wrong")]
    assert pipeline.rules_beside_schema_errors({"apiVersion": 3}, bad) == []  # every required section missing
    assert pipeline.rules_beside_schema_errors("not a mapping", bad) == []


def test_every_attribute_a_rule_reads_is_mapped_to_its_sections() -> None:
    """A rule that reads an attribute FLEET_SECTIONS does not know is never trusted beside a schema error; here
    every attribute of the model is known, so no rule is left out for that reason."""
    fields = set(Fleet.__dataclass_fields__) | {"node_group", "environment", "queued"}
    assert set(FLEET_SECTIONS) == fields
    fleet = load_fleet(str(ROOT / "fleet.yaml")).base
    for rule in cross_field.RULES.values():
        reads = pipeline._Reads(fleet)
        list(rule(reads))  # type: ignore[arg-type]
        assert pipeline._sections_read(reads.read) is not None
