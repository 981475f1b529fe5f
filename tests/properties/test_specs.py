"""Properties of validate, plan and synth over damaged specs (issue 14 item 7): whatever the spec holds, gpufleet
exits 0, 1 or 2 with a message, never 3, never a traceback, and writes nothing when it does not exit 0."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.properties.cli import run, scratch
from tests.properties.mutations import SMALL_SEEDS, SUBTLE_OPS, environments, mutated_spec, yaml_document

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
