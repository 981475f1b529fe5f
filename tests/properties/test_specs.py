"""Properties of validate, plan and synth over damaged specs (issue 14 item 7): whatever the spec holds, gpufleet
exits 0, 1 or 2 with a message, never 3, never a traceback, and writes nothing when it does not exit 0."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.facts import chart_values
from gpufleet.facts.versions import COMPONENTS, default_release
from tests.properties.cli import run, scratch
from tests.properties.mutations import SEED_DATA, SMALL_SEEDS, SUBTLE_OPS, environments, mutated_spec, yaml_document

MINIMAL = (Path(__file__).resolve().parents[2] / "tests/specs/valid/minimal.yaml").read_text(encoding="utf-8")
# synth records the Pulumi program under mocks (about half a second each): a fifth of the examples
_SYNTH = settings(max_examples=max(4, settings.default.max_examples // 5))


def _validate_and_plan(text: str | bytes) -> None:
    with scratch() as root:
        spec = root / "fleet.yaml"
        spec.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        validated = run(["validate", "fleet.yaml"], root)
        for env in environments(spec.read_text("utf-8", "replace")):
            planned = run(["plan", "fleet.yaml", "--env", env], root)
            if validated.code == 0:
                assert planned.code in (0, 2), planned.stderr  # 2: an --env the spec does not declare


@given(mutated_spec())
def test_a_mutated_spec_never_crashes(text: str) -> None:
    _validate_and_plan(text)


@given(mutated_spec(most=2, ops=SUBTLE_OPS))
def test_a_subtly_mutated_spec_never_crashes(text: str) -> None:
    _validate_and_plan(text)


@given(yaml_document())
def test_any_yaml_document_never_crashes(text: str) -> None:
    _validate_and_plan(text)


@given(st.binary(max_size=200))
def test_any_bytes_never_crash(data: bytes) -> None:
    _validate_and_plan(data)


@_SYNTH
@given(
    mutated_spec(most=1, ops=SUBTLE_OPS, seeds=SMALL_SEEDS),
    st.sampled_from(["out", "fleet.yaml", ".", "out/nested/deeper", ""]),
)
def test_synth_of_a_mutated_spec_never_crashes_and_writes_only_its_tree(text: str, out: str) -> None:
    with scratch() as root:
        (root / "fleet.yaml").write_text(text, encoding="utf-8")
        (root / "notes.txt").write_text("mine\n")
        env = environments(text)[0]
        result = run(["synth", "fleet.yaml", "--env", env, "--out", out], root)
        assert (root / "fleet.yaml").read_text(encoding="utf-8") == text and (
            root / "notes.txt"
        ).read_text() == "mine\n"
        if result.code == 0:
            assert out not in ("fleet.yaml", ".", "")
            assert (root / out / "plan.json").is_file()
            assert {p.name for p in root.iterdir()} == {"fleet.yaml", "notes.txt", out.split("/")[0]}


_ACCOUNT = "arn:aws:iam::111122223333:"
# IAM names differ in characters a resource id drops or folds ('.', '_', '+', '@', '/', case): issue 26 item 2
_principal = st.builds(
    lambda kind, path, name: {"principalArn": f"{_ACCOUNT}{kind}/{path}{name}"},
    st.sampled_from(["role", "user"]),
    st.sampled_from(["", "teams/", "a/b/"]),
    st.text(alphabet="aB._+@-", min_size=1, max_size=6).filter(lambda n: n[0].isalnum() or n[0] in "+@"),
)
_GROUP_NAMES = ["l4", "system", "system-node", "l4-node", "a", "a-launch", "a-node-group"]


@st.composite
def named_spec(draw: st.DrawFn) -> str:
    """The minimal spec with drawn admins, team members and node group names: things that name resources."""
    data = copy.deepcopy(SEED_DATA["tests/specs/valid/minimal.yaml"])
    data["cluster"]["admins"] = draw(st.lists(_principal, min_size=1, max_size=3))
    data["teams"][0]["members"] = draw(st.lists(_principal, max_size=3))
    group_names = draw(st.lists(st.sampled_from(_GROUP_NAMES), min_size=1, max_size=3, unique=True))
    data["nodeGroups"] = [{**data["nodeGroups"][0], "name": name} for name in group_names]
    data["teams"][0]["quotas"] = [{"nodeGroup": group_names[0], "gpus": 4}]
    return yaml.safe_dump(data, sort_keys=False)


@given(named_spec())
def test_every_spec_that_validates_plans(text: str) -> None:
    """A spec validate accepts is one plan can build: no two things get one resource id (issue 26 item 2)."""
    with scratch() as root:
        (root / "fleet.yaml").write_text(text, encoding="utf-8")
        validated = run(["validate", "fleet.yaml"], root)
        planned = run(["plan", "fleet.yaml", "--env", "dev"], root)
        assert validated.code != 0 or planned.code == 0, planned.stderr


def _value_paths(values: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(values, dict):
        return [path] if path else []
    out = [path] if path else []
    for key, value in values.items():
        out += _value_paths(value, (*path, key)) if len(path) < 3 else [(*path, key)]
    return out


# The charts the minimal spec's dev environment installs, with every values path of the shipped chart keys.
_OVERLAID = {
    component: _value_paths(chart_values.defaults(COMPONENTS[component].chart, version).values)
    for component, version in (("kueue", default_release("kueue")), ("gpuOperator", default_release("gpuOperator")))
}
_any_value = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab:", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["key", "operator", "a"]), inner, max_size=2)
    ),
    max_leaves=4,
)


@_SYNTH
@given(
    st.sampled_from(sorted(_OVERLAID)).flatmap(lambda c: st.tuples(st.just(c), st.sampled_from(_OVERLAID[c]))),
    _any_value,
)
def test_an_overlay_value_of_any_kind_never_crashes_validate_or_synth(
    where: tuple[str, tuple[str, ...]], value: object
) -> None:
    """Issue 47 item 3: a value of another kind than the chart's default (a string for a list, a list for a map)
    validated and made synth exit 3."""
    component, path = where
    overlay: object = value
    for key in reversed(path):
        overlay = {key: overlay}
    spec = MINIMAL + yaml.safe_dump({"helm": {component: {"values": overlay}}})
    with scratch() as root:
        (root / "fleet.yaml").write_text(spec, encoding="utf-8")
        if run(["validate", "fleet.yaml"], root).code == 0:
            run(["synth", "fleet.yaml", "--env", "dev", "--out", "out"], root)
