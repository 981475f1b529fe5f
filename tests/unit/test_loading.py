"""Unit tests of the loading pipeline's parts: error rendering, the YAML loader, environment merging, and version
pinning (the rules' tables are tests/rules)."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.base.errors import (
    Issue,
    Position,
    SourceFile,
    SpecError,
    did_you_mean,
    format_path,
    render_issue,
    sort_issues,
)
from gpufleet.facts.versions import image_is_pinned, is_pinned
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.environments import merge_environment
from gpufleet.spec.load import load_text
from tests.rules.fleets import MINIMAL_TEXT

# ---------------------------------------------------------------------------------------------------------------
# errors.py: paths, positions, rendering, did-you-mean


def test_format_path() -> None:
    assert format_path(()) == "(root)"
    assert format_path(("nodeGroups", 1, "taints", 0, "effect")) == "nodeGroups[1].taints[0].effect"
    assert format_path(("cost", "gpuHourUsd", "h100")) == "cost.gpuHourUsd.h100"


SOURCE_TEXT = "cluster:\n  name: research\n  network:\n    subnetIds: [a, b]\n"


def _source() -> SourceFile:
    return load_text(SOURCE_TEXT, "fleet.yaml").source


def test_render_puts_the_caret_under_the_value() -> None:
    text = render_issue(_source(), Issue(path=("cluster", "name"), message="bad name", hint="rename it"))
    assert (
        text == "fleet.yaml:2:9: cluster.name: bad name\n    2 |   name: research\n      |         ^\nhint: rename it"
    )


def test_render_at_key_and_in_flow_sequences() -> None:
    source = _source()
    assert (
        render_issue(source, Issue(path=("cluster", "name"), at_key=True, message="m")).splitlines()[2] == "      |   ^"
    )
    assert (
        render_issue(source, Issue(path=("cluster", "network", "subnetIds", 1), message="m")).splitlines()[0]
        == "fleet.yaml:4:20: cluster.network.subnetIds[1]: m"
    )


def test_render_falls_back_to_the_nearest_parent_with_a_position() -> None:
    source = _source()
    # cluster.region is not in the file: the issue is shown at cluster's value (its first key)
    assert source.position(("cluster", "region")) == Position(2, 3)
    assert source.position(("cluster", "region"), at_key=True) == Position(1, 1)
    assert source.position(("cluster", "network", "vpcId")) == Position(4, 5)
    assert source.position(("nowhere", 3, "x")) == Position(1, 1)
    assert render_issue(source, Issue(path=("cluster", "region"), message="missing")).startswith(
        "fleet.yaml:2:3: cluster.region: missing\n"
    )


def test_render_without_hint_context_and_warning() -> None:
    source = _source()
    assert not render_issue(source, Issue(path=("cluster",), message="m")).endswith("hint: ")
    assert (
        render_issue(source, Issue(path=("cluster",), message="m", context="environment dev")).splitlines()[0]
        == "fleet.yaml:2:3: cluster: m (environment dev)"
    )
    assert (
        render_issue(source, Issue(path=("cluster",), message="m", severity="warning")).splitlines()[0]
        == "fleet.yaml:2:3: warning: cluster: m"
    )


def test_render_line_numbers_align_in_the_gutter() -> None:
    text = "\n" * 11 + "key: value\n"
    source = load_text(text, "f.yaml").source
    lines = render_issue(source, Issue(path=("key",), message="m")).splitlines()
    assert lines[1:] == ["   12 | key: value", "      |      ^"]


def test_sort_issues_orders_by_position_and_removes_duplicates() -> None:
    source = _source()
    issues = [
        Issue(path=("cluster", "network", "subnetIds", 0), message="c"),
        Issue(path=("cluster", "name"), message="b"),
        Issue(path=("cluster", "name"), message="b"),
        Issue(path=("cluster",), at_key=True, message="a"),
    ]
    assert [i.message for i in sort_issues(source, issues)] == ["a", "b", "c"]


def test_spec_error_counts_errors() -> None:
    error = SpecError(_source(), [Issue(path=("cluster",), message="m"), Issue(path=("cluster", "name"), message="n")])
    assert error.render().splitlines()[-1] == "fleet.yaml: 2 error(s)"


@pytest.mark.parametrize(
    ("value", "choices", "hint"),
    [
        ("workloadclass", ["workloadClass", "warmPool"], 'did you mean "workloadClass"?'),
        ("mps", ["Exclusive", "MIG", "MPS", "TimeSlicing"], 'did you mean "MPS"?'),
        ("Trainig", ["Training", "Inference"], 'did you mean "Training"?'),
        ("zzz", ["b", "a"], "allowed: a, b"),
        ("zzz", [f"choice{i}" for i in range(20)], ""),
        (True, ["Enabled", "Disabled"], "allowed: Disabled, Enabled"),
        ("x", [], ""),
    ],
)
def test_did_you_mean(value: object, choices: list[str], hint: str) -> None:
    assert did_you_mean(value, choices) == hint


# ---------------------------------------------------------------------------------------------------------------
# load.py: positions, duplicate keys, YAML 1.1, merge keys


def _load(text: str) -> tuple[Any, list[tuple[str, str, int, int]]]:
    loaded = load_text(text, "f.yaml")
    issues = [
        (format_path(i.path), i.message, *(lambda p: (p.line, p.column))(loaded.source.locate(i)))
        for i in loaded.issues
    ]
    return loaded.data, issues


def test_load_records_key_and_value_positions() -> None:
    loaded = load_text("a:\n  b: [1, {c: x}]\n", "f.yaml")
    assert loaded.source.keys[("a", "b")] == Position(2, 3)
    assert loaded.source.values[("a", "b")] == Position(2, 6)
    assert loaded.source.values[("a", "b", 1, "c")] == Position(2, 14)
    assert loaded.data == {"a": {"b": [1, {"c": "x"}]}}


def test_duplicate_keys_are_errors_at_the_second_key() -> None:
    data, issues = _load("a: 1\nb: 2\na: 3\na: 4\n")
    assert issues == [
        ("a", 'duplicate key "a" (first defined at line 1)', 3, 1),
        ("a", 'duplicate key "a" (first defined at line 1)', 4, 1),
    ]
    assert data == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("key", "reading"),
    [
        ("on", "the boolean true"),
        ("no", "the boolean false"),
        ("Yes", "the boolean true"),
        ("1.30", "the number 1.3"),
        ("~", "null"),
        ("2026-07-24", "a date"),
    ],
)
def test_yaml11_keys_are_errors(key: str, reading: str) -> None:
    data, issues = _load(f"x:\n  {key}: 1\n")
    assert issues == [(f"x.{key}", f'key "{key}" is read by YAML 1.1 as {reading}, not a string', 2, 3)]
    assert data == {"x": {key: 1}}


def test_quoted_yaml11_keys_are_strings() -> None:
    assert _load("\"on\": 1\n'no': 2\n") == ({"on": 1, "no": 2}, [])


@pytest.mark.parametrize(
    ("text", "value", "raw"),
    [
        ("v: on\n", True, "on"),
        ("v: no\n", False, "no"),
        ("v: 1.30\n", 1.3, "1.30"),
        ("v: 1e3\n", "1e3", None),
        ("v: 2026-07-24\n", None, "2026-07-24"),
        ('v: "on"\n', "on", None),
        ("v: !!str 1.30\n", "1.30", None),
    ],
)
def test_yaml11_values_are_kept_and_recorded(text: str, value: Any, raw: str | None) -> None:
    loaded = load_text(text, "f.yaml")
    assert loaded.issues == []
    if value is not None:
        assert loaded.data["v"] == value
    assert loaded.source.plain.get(("v",)) == raw


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("v: 10:00\n", "10:00 is read by YAML 1.1 as the base-60 number 600"),
        ("v: 010\n", "010 is read by YAML 1.1 as the octal number 8"),
        (
            "v: 2026-13-45\n",
            "2026-13-45 is read by YAML 1.1 as a timestamp, but it is not a valid one (month must be in 1..12)",
        ),
        ("v: !foo 4\n", "unknown YAML tag !foo"),
        # Found by tests/properties: an explicit tag on text its constructor cannot read made validate exit 3.
        ("v: !!int\n", "an empty value tagged !!int is not a valid int"),
        ("v: !!int +\n", "+ is read by YAML 1.1 as an int, but it is not a valid one"),
        ("v: !!float\n", "an empty value tagged !!float is not a valid float"),
        ("v: !!bool x\n", "x is read by YAML 1.1 as a bool, but it is not a valid one"),
        ("v: !!timestamp 1\n", "1 is read by YAML 1.1 as a timestamp, but it is not a valid one"),
    ],
)
def test_surprising_scalars_are_errors(text: str, message: str) -> None:
    assert _load(text)[1] == [("v", message, 1, 4)]


def test_plain_numbers_are_not_surprising() -> None:
    assert _load("a: 0\nb: 10\nc: 0x1f\nd: 1.5\n") == ({"a": 0, "b": 10, "c": 31, "d": 1.5}, [])


def test_merge_keys_written_keys_win_and_are_not_duplicates() -> None:
    text = "base: &b {x: 1, y: 2}\nother: &o {y: 9, z: 3}\nm:\n  <<: [*b, *o]\n  x: 5\n"
    data, issues = _load(text)
    assert issues == []
    assert data["m"] == {"x": 5, "y": 2, "z": 3}


def test_merged_keys_keep_the_position_of_the_anchor() -> None:
    loaded = load_text("base: &b {x: 1}\nm:\n  <<: *b\n", "f.yaml")
    assert loaded.source.values[("m", "x")] == Position(1, 14)


def test_merge_of_a_scalar_is_an_error() -> None:
    assert _load("m:\n  <<: 5\n  a: 1\n") == (
        {"m": {"a": 1}},
        [("m", "a merge key (<<) needs a mapping or a list of mappings", 2, 7)],
    )


def test_recursive_alias_is_an_error() -> None:
    data, issues = _load("a: &x [1, *x]\n")
    # PyYAML gives an alias the node it refers to, so the position is the anchored list's
    assert issues == [("a[1]", "an alias refers to a mapping or list that contains it (a cycle)", 1, 4)]
    assert data == {"a": [1, None]}


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "the file is empty", 1),
        ("# only a comment\n", "the file is empty", 1),
        ("---\n---\n", "the file is empty", 1),
        ("a: 1\n---\nb: 2\n", "expected one YAML document, found 2", 3),
        ("- a\n", "the spec must be a mapping (apiVersion, kind, metadata, ...), not a list", 1),
        ("~\n", "the spec must be a mapping (apiVersion, kind, metadata, ...), not null", 1),
        (
            "a: [1, 2\n",
            "invalid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at line 1)",
            2,
        ),
        ("a: b: c\n", "invalid YAML: mapping values are not allowed here", 1),
    ],
)
def test_fatal_load_errors(text: str, message: str, line: int) -> None:
    loaded = load_text(text, "f.yaml")
    assert loaded.fatal
    assert [(i.message, loaded.source.locate(i).line) for i in loaded.issues] == [(message, line)]


def test_load_and_schema_errors_are_reported_together() -> None:
    text = MINIMAL_TEXT.replace(
        "    workloadClass: Batch\n", "    workloadClass: Batch\n    workloadClass: Batch\n"
    ).replace("gpus: 4", "gpus: four")
    with pytest.raises(SpecError) as caught:
        load_fleet_text(text)
    assert [format_path(i.path) for i in caught.value.issues] == [
        "nodeGroups[0].workloadClass",
        "teams[0].quotas[0].gpus",
    ]


def test_a_yaml11_key_is_not_reported_again_as_unknown_field() -> None:
    text = MINIMAL_TEXT.replace("    workloadClass: Batch\n", "    workloadClass: Batch\n    labels: {on: demand}\n")
    with pytest.raises(SpecError) as caught:
        load_fleet_text(text)
    assert [i.message for i in caught.value.issues] == [
        'key "on" is read by YAML 1.1 as the boolean true, not a string'
    ]


# ---------------------------------------------------------------------------------------------------------------
# environments.py: merging and the positions it carries

ENV_TEXT = MINIMAL_TEXT.replace(
    "      through: admission\n",
    "      through: admission\n"
    "    overrides:\n"
    "      nodeGroups:\n"
    "        l4:\n"
    "          scaling: {maxSize: 2}\n"
    "      teams:\n"
    "        vision:\n"
    "          quotas: [{nodeGroup: l4, gpus: 2}]\n"
    "      admission: {podsReadyTimeoutSeconds: 1200}\n",
)


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_override_merges_maps_and_addresses_named_items() -> None:
    loaded = load_text(ENV_TEXT, "f.yaml")
    data, _, issues = merge_environment(loaded.data, "dev", loaded.source)
    assert issues == []
    assert data["nodeGroups"][0]["scaling"] == {"maxSize": 2}
    assert data["nodeGroups"][0]["instanceType"] == "g6.xlarge"
    assert data["teams"][0]["quotas"] == [{"nodeGroup": "l4", "gpus": 2}]  # other lists are replaced whole
    assert data["admission"] == {"podsReadyTimeoutSeconds": 1200}
    assert loaded.data["nodeGroups"][0]["scaling"] == {"maxSize": 4}  # the base is not changed


def test_override_positions_point_at_the_override_line() -> None:
    loaded = load_text(ENV_TEXT, "f.yaml")
    _, view, _ = merge_environment(loaded.data, "dev", loaded.source)
    assert view.position(("nodeGroups", 0, "scaling", "maxSize")).line == _line_of(ENV_TEXT, "scaling: {maxSize: 2}")
    assert view.position(("teams", 0, "quotas", 0, "gpus")).line == _line_of(
        ENV_TEXT, "quotas: [{nodeGroup: l4, gpus: 2}]"
    )
    assert view.position(("nodeGroups", 0, "instanceType")).line == _line_of(
        ENV_TEXT, "instanceType: g6.xlarge"
    )  # not overridden
    assert loaded.source.position(("nodeGroups", 0, "scaling", "maxSize")).line == _line_of(ENV_TEXT, "maxSize: 4")


@pytest.mark.parametrize(
    ("section", "name", "message"),
    [
        ("nodeGroups", "l40s", 'overrides a node group "l40s" that does not exist in nodeGroups'),
        ("teams", "visoin", 'overrides a team "visoin" that does not exist in teams'),
    ],
)
def test_override_of_an_unknown_named_item(section: str, name: str, message: str) -> None:
    text = MINIMAL_TEXT.replace(
        "      through: admission\n",
        f"      through: admission\n    overrides:\n      {section}:\n        {name}: {{}}\n",
    )
    loaded = load_text(text, "f.yaml")
    _, _, issues = merge_environment(loaded.data, "dev", loaded.source)
    assert [(format_path(i.path), i.message, i.at_key) for i in issues] == [
        (f"environments.dev.overrides.{section}.{name}", message, True)
    ]
    assert loaded.source.position(issues[0].path, at_key=True).line == _line_of(text, f"{name}: {{}}")


def test_environment_errors_carry_the_environment_and_the_override_position() -> None:
    text = ENV_TEXT.replace("scaling: {maxSize: 2}", "scaling: {maxSize: 2}\n          warmPool: {minSize: 3}")
    with pytest.raises(SpecError) as caught:
        load_fleet_text(text)
    [issue] = caught.value.issues
    assert (format_path(issue.path), issue.context) == ("nodeGroups[0].warmPool.minSize", "environment dev")
    assert caught.value.source.locate(issue).line == _line_of(text, "warmPool: {minSize: 3}")


def test_base_errors_are_not_repeated_per_environment() -> None:
    text = ENV_TEXT.replace(
        "      - nodeGroup: l4\n        gpus: 4", "      - nodeGroup: l40s\n        gpus: 4"
    ).replace("quotas: [{nodeGroup: l4, gpus: 2}]", "cohort: research")
    with pytest.raises(SpecError) as caught:
        load_fleet_text(text)
    assert [(i.message, i.context) for i in caught.value.issues] == [('unknown node group "l40s"', "")]


def test_one_environment_only() -> None:
    text = (
        MINIMAL_TEXT
        + "  prod:\n    rollout: {through: admission}\n    overrides:\n      nodeGroups: {l4: {scaling: {maxSize:"
        " 1}}}\n"
    )
    assert sorted(load_fleet_text(text, env="dev").environments) == ["dev"]
    with pytest.raises(SpecError):
        load_fleet_text(text, env="prod")


# ---------------------------------------------------------------------------------------------------------------
# versions.py


@pytest.mark.parametrize(
    ("version", "pinned"),
    [
        ("v26.7.0", True),
        ("0.19.2", True),
        ("595.91.07", True),
        ("v26.7.0-rc.1", True),
        ("1.2.3+build.5", True),
        ("v1.0.0-linux", True),  # an "x" inside a word is not a wildcard
        ("v1.0.0-mainline", True),  # nor is "main" inside a word a branch
        ("", False),
        ("latest", False),
        ("stable", False),
        ("main", False),
        ("0.19", False),
        ("v1", False),
        ("0.19.x", False),
        ("1.2.X", False),
        ("1.*", False),
        ("~0.19.2", False),
        ("^1.2.3", False),
        (">=1.0.0", False),
        ("1.2.3, 1.2.4", False),
        ("1.2.3 ", False),
        ("v4.3.0-snapshot", False),
        ("v4.3.0-latest", False),
    ],
)
def test_is_pinned(version: str, pinned: bool) -> None:
    assert is_pinned(version) is pinned


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        ("nvcr.io/nvidia/pytorch:25.08-py3", True),
        ("localhost:5000/team/img:1.0", True),
        ("img@sha256:" + "a" * 64, True),
        ("ghcr.io/a/b:v1@sha256:" + "b" * 64, True),
        ("nvcr.io/nvidia/pytorch", False),
        ("localhost:5000/team/img", False),  # the registry port is not a tag
        ("img:latest", False),
        ("img:LATEST", False),
        ("img:", False),
        ("img@sha256:", False),
        ("img@sha256:xyz", False),
    ],
)
def test_image_is_pinned(image: str, pinned: bool) -> None:
    assert image_is_pinned(image) is pinned
