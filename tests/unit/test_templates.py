"""The templates in gpufleet/templates/: every one is used, every value it names is required (StrictUndefined), and
every value a shell template interpolates goes through a quoting filter. Byte-identical output is the golden trees'
job (tests/golden: scripts and plan.md) and tests/diff (the pull request comment)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
import pytest
import yaml

from gpufleet.base.render import ENV, markdown_cell, render, shell_quote, shell_word
from gpufleet.commands import init
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.review import summary
from gpufleet.rules.pipeline import load_fleet, load_fleet_text
from gpufleet.simulate.self_check import canonical_rows, will_it_run
from gpufleet.simulate.verdict import fleet_model
from tests.diff.test_comment import EVERY_SECTION

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted(ENV.list_templates())


def _render_everything(spec: Path) -> None:
    """Everything gpufleet renders from templates: the plans and plan.md of every environment of `spec`, and a diff
    comment."""
    for env, fleet in load_fleet(str(spec)).environments.items():
        plan = build_plan(fleet, env)
        plan_markdown(plan, will_it_run(canonical_rows(fleet_model(plan))))
    summary.markdown(EVERY_SECTION, "a", "b")
    text = init.starter_spec(init.instance_types(init.DEFAULT_INSTANCE_TYPES))
    init.repository(text, load_fleet_text(text))  # the README of `gpufleet init --pulumi`


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], list[tuple[str, dict[str, Any]]]]:
    """(every template loaded, including by {% include %}; (template, values) of every top-level render), on the
    example fleet with one more environment that stops before the admission stage, and containerd's own pull on
    the RAID0 groups as well, so the boot-time pre-pull renders both its branches (parallel pull has none)."""
    spec = yaml.safe_load((ROOT / "fleet.yaml").read_text())
    spec["environments"]["early"] = {"rollout": {"through": "telemetry"}}
    for group in spec["nodeGroups"]:
        group["imagePull"] = {"mode": "Default"}
    path = tmp_path_factory.mktemp("templates") / "fleet.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    loaded: set[str] = set()
    calls: list[tuple[str, dict[str, Any]]] = []
    loader = ENV.loader
    assert loader is not None
    get_source = loader.get_source
    template_render = jinja2.Template.render

    def recording_source(environment: jinja2.Environment, name: str) -> Any:
        loaded.add(name)
        return get_source(environment, name)

    def recording_render(self: jinja2.Template, *args: Any, **kwargs: Any) -> str:
        assert self.name is not None
        calls.append((self.name, dict(*args, **kwargs)))
        return template_render(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ENV, "cache", None)  # every get_template goes to the loader
        patch.setattr(loader, "get_source", recording_source)
        patch.setattr(jinja2.Template, "render", recording_render)
        _render_everything(path)
    return loaded, calls


def test_the_package_has_templates() -> None:
    assert "nccl-gate.sh.j2" in TEMPLATES and all(t.endswith(".j2") for t in TEMPLATES)


def test_every_template_is_used(rendered: tuple[set[str], list[tuple[str, dict[str, Any]]]]) -> None:
    loaded, _ = rendered
    assert sorted(set(TEMPLATES) - loaded) == []


def test_every_value_a_template_names_is_required(rendered: tuple[set[str], list[tuple[str, dict[str, Any]]]]) -> None:
    """Leaving out any one value of a real render fails (StrictUndefined), for every value of every template."""
    _, calls = rendered
    optional = []
    for template in sorted({name for name, _ in calls}):
        contexts = [values for name, values in calls if name == template]
        for key in sorted({k for values in contexts for k in values}):
            failed = False
            for values in contexts:
                try:
                    render(template, **{k: v for k, v in values.items() if k != key})
                except jinja2.UndefinedError:
                    failed = True
                    break
            if not failed:
                optional.append(f"{template}: {key}")
    assert optional == []


def test_an_undefined_value_fails_rendering() -> None:
    with pytest.raises(jinja2.UndefinedError, match="'region' is undefined"):
        render("prepull.sh.j2", parameter="/p", raid0=False, unit="x.service")


def _quoted(node: jinja2.nodes.Node) -> bool:
    """`x | q`, `x | word`, or `xs | map("q") | join(" ")`."""
    if not isinstance(node, jinja2.nodes.Filter):
        return False
    if node.name in ("q", "word"):
        return True
    inner = node.node
    return (
        node.name == "join"
        and isinstance(inner, jinja2.nodes.Filter)
        and inner.name == "map"
        and [a.value for a in inner.args if isinstance(a, jinja2.nodes.Const)] == ["q"]
    )


@pytest.mark.parametrize("template", [t for t in TEMPLATES if t.endswith(".sh.j2")])
def test_every_shell_value_is_quoted(template: str) -> None:
    assert ENV.loader is not None
    source, _, _ = ENV.loader.get_source(ENV, template)
    unquoted = [
        f"{template}:{node.lineno}"
        for output in ENV.parse(source).find_all(jinja2.nodes.Output)
        for node in output.nodes
        if not isinstance(node, jinja2.nodes.TemplateData) and not _quoted(node)
    ]
    assert unquoted == []


@pytest.mark.parametrize(
    ("value", "quoted"),
    [("nvcr.io/nvidia/pytorch:25.08-py3", "nvcr.io/nvidia/pytorch:25.08-py3"), ("it's", "'it'\"'\"'s'"), (8, "8")],
)
def test_q_quotes_a_whole_word(value: Any, quoted: str) -> None:
    assert shell_quote(value) == quoted


def test_cell_keeps_a_markdown_table_row_whole() -> None:
    assert markdown_cell("a | b\nc") == "a \\| b c"


def test_word_refuses_a_value_that_needs_quoting() -> None:
    assert shell_word("nccl-gate-h100-1.nccl-gate-h100") == "nccl-gate-h100-1.nccl-gate-h100"
    with pytest.raises(
        ValueError,
        match=(
            r"^'a b' needs shell quoting and cannot be spliced into a word; pass it through the q filter as a word of"
            r" its own$"
        ),
    ):
        shell_word("a b")
