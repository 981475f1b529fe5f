"""The Helm values overlay (`helm.<component>.values`, issue 35 item 8): every key checked against the pinned chart's
default values (gpufleet.rules.helm_values), the values gpufleet guarantees refused with the reason
(gpufleet.facts.helm_guards), refused where a subchart's keys are not known, merged last into the release's values (so
the tree, diff and the model see it) and listed in plan.md. The chart keys ship with gpufleet, so none of this needs
the upstream files (tests/unit/test_chart_keys.py holds the shipped keys to them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpufleet.base.errors import SpecError
from gpufleet.cli import main
from gpufleet.commands.diff import diff_trees
from gpufleet.commands.synth import synth_tree
from gpufleet.facts import chart_values
from gpufleet.facts.helm_guards import GUARDED
from gpufleet.facts.versions import COMPONENTS, default_release
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.helm_values import overlay_issues
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.simulate.self_check import Contradictions
from gpufleet.tree.output import write_tree
from gpufleet.tree.read import read_tree

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = (ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text(encoding="utf-8")
RELEASE = "kubernetes:helm.sh/v3:Release"

# A small chart in a cache of its own, so the key rules are tested whatever the upstream cache holds.
VALUES = """\
daemonsets:
  labels: {}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
operator:
  priorityClassName: system-node-critical
  resources: {limits: {cpu: 500m}}
  annotations: null
  tolerations: []
psa: {enabled: false}
cdi: {enabled: true}
dcgm: {enabled: false, hostNetwork: false, resources: {}}
node-feature-discovery:
  worker: {tolerations: []}
"""
CHART = """\
apiVersion: v2
name: gpu-operator
version: v26.7.0
dependencies:
  - {name: node-feature-discovery, version: 0.19.0}
  - {name: missing-sub, alias: extra, version: 1.0.0}
"""
SUB_VALUES = "master: {replicaCount: 1}\ngc: {enable: true}\n"
SUB_SCHEMA = {
    "type": "object",
    "properties": {"master": {"type": "object", "properties": {"port": {"type": "integer"}}}},
}


def _cache(root: Path) -> Path:
    chart = root / "charts" / "gpu-operator" / "v26.7.0"
    (chart / "charts" / "node-feature-discovery").mkdir(parents=True)
    (chart / "values.yaml").write_text(VALUES)
    (chart / "Chart.yaml").write_text(CHART)
    (chart / "charts" / "node-feature-discovery" / "values.yaml").write_text(SUB_VALUES)
    (chart / "charts" / "node-feature-discovery" / "values.schema.json").write_text(json.dumps(SUB_SCHEMA))
    return root


def _issues(tmp_path: Path, overlay: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = chart_values.defaults_in(_cache(tmp_path), "gpu-operator", "v26.7.0")
    assert isinstance(found, chart_values.ChartDefaults)
    return [
        (".".join(map(str, i.path[3:])), i.message, i.hint)
        for i in overlay_issues("gpuOperator", "v26.7.0", overlay, found)
    ]


UNKNOWN = "unknown key {}: chart gpu-operator v26.7.0 has no such value"
GUARD = "{} is set by gpufleet and may not be overridden: {}"
TOLERATIONS = GUARDED["gpuOperator"][("daemonsets", "tolerations")]
CDI = GUARDED["gpuOperator"][("cdi",)]
DCGM = GUARDED["gpuOperator"][("dcgm", "hostNetwork")]

CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("a known key", {"operator": {"priorityClassName": "high"}}, []),
    ("a known map of known keys", {"dcgm": {"resources": {"limits": {"memory": "1Gi"}}}}, []),
    ("below an empty default map", {"daemonsets": {"labels": {"example.com/team": "infra"}}}, []),
    ("below a null default", {"operator": {"annotations": {"example.com/owner": "infra"}}}, []),
    ("below a value passed whole", {"operator": {"resources": {"requests": {"cpu": "1"}}}}, []),
    ("a subchart's default", {"node-feature-discovery": {"gc": {"enable": False}}}, []),
    ("a property of the subchart's values.schema.json", {"node-feature-discovery": {"master": {"port": 8080}}}, []),
    ("null drops the chart's default", {"psa": {"enabled": None}}, []),
    (
        "an unknown key, with the closest one",
        {"operater": {"priorityClassName": "high"}},
        [("operater", UNKNOWN.format("operater"), 'did you mean "operator"?')],
    ),
    (
        "an unknown nested key, with the closest one",
        {"operator": {"priorityClass": "high"}},
        [("operator.priorityClass", UNKNOWN.format("operator.priorityClass"), 'did you mean "operator.priorityClassName"?')],
    ),
    (
        "an unknown key nothing is close to: the keys there",
        {"psa": {"zzz": 1}},
        [("psa.zzz", UNKNOWN.format("psa.zzz"), "the keys at psa: enabled")],
    ),
    (
        "a map where the chart has a scalar",
        {"psa": {"enabled": {"on": True}}},
        [
            (
                "psa.enabled",
                "psa.enabled is a boolean in chart gpu-operator v26.7.0's default values, not a map",
                "give psa.enabled a boolean value, as its default is",
            )
        ],
    ),
    (
        "a string where the chart has a list (issue 47 item 3: synth exited 3)",
        {"daemonsets": {"labels": {}}, "operator": {"tolerations": "x"}},
        [
            (
                "operator.tolerations",
                "operator.tolerations is a list in chart gpu-operator v26.7.0's default values, not a string",
                "give operator.tolerations a list value, as its default is",
            )
        ],
    ),
    (
        "a list where the chart has a map, under a value passed whole",
        {"daemonsets": {"labels": ["a", "b"]}},
        [
            (
                "daemonsets.labels",
                "daemonsets.labels is a map in chart gpu-operator v26.7.0's default values, not a list",
                "give daemonsets.labels a map value, as its default is",
            )
        ],
    ),
    (
        "a string where the chart has a boolean (a template's if takes \"false\" as true)",
        {"psa": {"enabled": "false"}},
        [
            (
                "psa.enabled",
                "psa.enabled is a boolean in chart gpu-operator v26.7.0's default values, not a string",
                "give psa.enabled a boolean value, as its default is",
            )
        ],
    ),
    ("a string where the chart has a number renders the same", {"node-feature-discovery": {"master": {"replicaCount": "2"}}}, []),
    (
        "the values schema's type where it has one",
        {"node-feature-discovery": {"master": {"port": "8080"}}},
        [
            (
                "node-feature-discovery.master.port",
                "node-feature-discovery.master.port is a number in chart gpu-operator v26.7.0's values.schema.json,"
                " not a string",
                "give node-feature-discovery.master.port a number value, as values.schema.json says",
            )
        ],
    ),
    (
        "a subchart the chart does not vendor",
        {"extra": {"foo": 1}},
        [
            (
                "extra",
                "extra is a value of subchart extra of chart gpu-operator v26.7.0, which the chart takes from another"
                " repository: gpufleet does not have its keys, so it cannot check this value and refuses it",
                "remove helm.gpuOperator.values.extra",
            )
        ],
    ),
    (
        "a guarded path, with the reason",
        {"daemonsets": {"tolerations": []}},
        [("daemonsets.tolerations", GUARD.format("daemonsets.tolerations", TOLERATIONS), "remove helm.gpuOperator.values.daemonsets.tolerations")],
    ),
    (
        "below a guarded path",
        {"cdi": {"enabled": True}},
        [("cdi", GUARD.format("cdi", CDI), "remove helm.gpuOperator.values.cdi")],
    ),
    (
        "null over a map that holds a guarded path",
        {"dcgm": None},
        [("dcgm", GUARD.format("dcgm (it holds dcgm.enabled)", DCGM), "remove helm.gpuOperator.values.dcgm")],
    ),
    (
        "a map beside a guarded path is checked as any other",
        {"dcgm": {"resources": {"limits": {"cpu": "1"}}, "hostNetwork": False, "imag": "x"}},
        [
            ("dcgm.hostNetwork", GUARD.format("dcgm.hostNetwork", DCGM), "remove helm.gpuOperator.values.dcgm.hostNetwork"),
            ("dcgm.imag", UNKNOWN.format("dcgm.imag"), "the keys at dcgm: enabled, hostNetwork, resources"),
        ],
    ),
    (
        "the host engine's arguments, which could move it off port 5555",
        {"dcgm": {"args": ["--port", "6000"]}},
        [("dcgm.args", GUARD.format("dcgm.args", DCGM), "remove helm.gpuOperator.values.dcgm.args")],
    ),
    (
        "a guarded path that is also unknown is reported once, as guarded",
        {"dcgmExporter": {"env": []}},
        [("dcgmExporter.env", GUARD.format("dcgmExporter.env", GUARDED["gpuOperator"][("dcgmExporter", "env")]), "remove helm.gpuOperator.values.dcgmExporter.env")],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("case", "overlay", "expected"), CASES, ids=[c[0] for c in CASES])
def test_overlay_keys(tmp_path: Path, case: str, overlay: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert _issues(tmp_path, overlay) == expected


def test_the_shipped_keys_check_as_the_chart_files_do(tmp_path: Path) -> None:
    """The keys gpufleet ships (every value emptied to its kind) give the same issues as the chart's own files."""
    found = chart_values.defaults_in(_cache(tmp_path), "gpu-operator", "v26.7.0")
    assert isinstance(found, chart_values.ChartDefaults)
    document = json.loads(json.dumps(chart_values.keys_document("gpu-operator", "v26.7.0", found, [])))
    assert document["values"]["operator"] == {
        "priorityClassName": "",
        "resources": {"limits": {"cpu": ""}},
        "annotations": None,
        "tolerations": [],
    }
    assert document["values"]["node-feature-discovery"] == {
        "worker": {"tolerations": []},
        "master": {"replicaCount": 0},
        "gc": {"enable": False},
    }
    assert document["schema"] == {
        "properties": {
            "node-feature-discovery": {
                "type": "object",
                "properties": {"master": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            }
        }
    }
    assert document["missingSubcharts"] == [["extra"]]
    shipped = chart_values.ChartDefaults(
        values=document["values"],
        schema=document["schema"],
        missing_subcharts=frozenset(tuple(m) for m in document["missingSubcharts"]),
        files=(),
    )
    for _, overlay, expected in CASES:
        assert [
            (".".join(map(str, i.path[3:])), i.message, i.hint)
            for i in overlay_issues("gpuOperator", "v26.7.0", overlay, shipped)
        ] == expected


def _spec(overlay: str) -> str:
    return MINIMAL + overlay


OVERLAY = """\
helm:
  gpuOperator:
    values:
      operator: {priorityClassName: system-cluster-critical}
      daemonsets: {labels: {example.com/team: infra}}
"""


@pytest.mark.parametrize(
    ("file", "text", "error"),
    [
        ("values.yaml", "a: [1\n", "ParserError"),
        ("values.yaml", b"\xff", "UnicodeDecodeError"),
        ("Chart.yaml", "dependencies: [{version: 1.0.0}]\n", "ValueError"),
        ("charts/node-feature-discovery/values.schema.json", "{", "JSONDecodeError"),
    ],
)
def test_a_chart_that_cannot_be_read_is_named_with_the_error(
    tmp_path: Path, file: str, text: str | bytes, error: str
) -> None:
    """What the fetch tool reports where it cannot derive a chart's keys (tools/fetch_upstream.py --chart-keys)."""
    chart = _cache(tmp_path) / "charts" / "gpu-operator" / "v26.7.0"
    if isinstance(text, bytes):
        (chart / file).write_bytes(text)
    else:
        (chart / file).write_text(text)
    assert chart_values.defaults_in(tmp_path, "gpu-operator", "v26.7.0") == (
        f"cannot be read from the upstream cache ({chart}: {error})"
    )
    assert (
        chart_values.defaults_in(tmp_path, "gpu-operator", "v26.3.3") == f"are not in the upstream cache ({tmp_path})"
    )


def test_unknown_key_in_a_real_spec_is_positioned_with_a_hint() -> None:
    spec = _spec("helm:\n  gpuOperator:\n    values:\n      devicePlugin: {envv: []}\n")
    with pytest.raises(SpecError) as raised:
        load_fleet_text(spec)
    line = MINIMAL.count("\n") + 4
    assert raised.value.render() == (
        f"fleet.yaml:{line}:22: helm.gpuOperator.values.devicePlugin.envv: unknown key devicePlugin.envv: chart"
        " gpu-operator v26.7.0 has no such value\n"
        f"{line:>5} |       devicePlugin: {{envv: []}}\n"
        "      |                      ^\n"
        'hint: did you mean "devicePlugin.env"?\n'
        "fleet.yaml: 1 error(s)"
    )


def test_an_unknown_chart_and_one_the_fleet_does_not_install() -> None:
    spec = _spec("helm:\n  kueu: {values: {a: 1}}\n  karpenter: {values: {replicas: 1}}\n")
    with pytest.raises(SpecError) as raised:
        load_fleet_text(spec)
    assert [(i.path, i.message, i.hint) for i in raised.value.issues] == [
        (("helm", "kueu"), '"kueu" is not a chart gpufleet installs', 'did you mean "kueue"?'),
        (
            ("helm", "karpenter"),
            "no environment of the fleet installs Karpenter, so its values have no release",
            "remove helm.karpenter",
        ),
    ]


def test_an_environment_override_is_checked_and_null_removes_an_overlay_key() -> None:
    spec = _spec(OVERLAY).replace(
        "      through: admission\n",
        "      through: admission\n    overrides:\n      helm: {gpuOperator: {values: {operator: null, cdi: {enabled: true}}}}\n",
    )
    with pytest.raises(SpecError) as raised:
        load_fleet_text(spec)
    assert [(i.path, i.context) for i in raised.value.issues] == [
        (("helm", "gpuOperator", "values", "cdi"), "environment dev")
    ]
    valid = load_fleet_text(spec.replace(", cdi: {enabled: true}", ""))
    assert valid.environments["dev"].helm_values == {
        "gpuOperator": {"daemonsets": {"labels": {"example.com/team": "infra"}}}
    }


def _release(plan: Any, name: str) -> dict[str, Any]:
    return next(
        r.args for s in plan.stages for r in s.content.resources if r.type == RELEASE and r.args["name"] == name
    )


def test_the_overlay_is_merged_last_into_the_release_values() -> None:
    plan = build_plan(load_fleet_text(_spec(OVERLAY)).environments["dev"], "dev")
    without = build_plan(load_fleet_text(MINIMAL).environments["dev"], "dev")
    values, before = _release(plan, "gpu-operator")["values"], _release(without, "gpu-operator")["values"]
    assert values["operator"] == {"priorityClassName": "system-cluster-critical"}
    assert values["daemonsets"] == {**before["daemonsets"], "labels": {"example.com/team": "infra"}}
    assert {k: v for k, v in values.items() if k != "operator"} == {**before, "daemonsets": values["daemonsets"]}


def test_plan_md_lists_each_overlay_key_and_value() -> None:
    spec = _spec(OVERLAY + "  nodeProblemDetector: {values: {priorityClassName: system-node-critical}}\n").replace(
        "      through: admission\n", "      through: admission\n  prod:\n    rollout:\n      through: health\n"
    )
    md = plan_markdown(build_plan(load_fleet_text(spec).environments["dev"], "dev"))
    section = md.split("## Helm values overlays\n", 1)[1].split("\n## ", 1)[0]
    assert section.strip().splitlines()[-5:] == [
        "| component | chart | key | value |",
        "|---|---|---|---|",
        '| NVIDIA GPU Operator | gpu-operator v26.7.0 | `operator.priorityClassName` | `"system-cluster-critical"` |',
        '| NVIDIA GPU Operator | gpu-operator v26.7.0 | `daemonsets.labels.example\\.com/team` | `"infra"` |',
        '| Node Problem Detector | not in this environment | `priorityClassName` | `"system-node-critical"` |',
    ]
    assert "## Helm values overlays" not in plan_markdown(
        build_plan(load_fleet_text(MINIMAL).environments["dev"], "dev")
    )


def test_the_model_sees_the_merged_values() -> None:
    """A controller placement gpufleet leaves to the chart is the overlay's to set, and the model judges it: the GPU
    Operator's controller sent to a tainted GPU group would never run, so synth refuses the fleet."""
    spec = _spec("helm:\n  gpuOperator:\n    values:\n      operator: {nodeSelector: {gpufleet.io/node-group: l4}}\n")
    fleet = load_fleet_text(spec).environments["dev"]
    with pytest.raises(Contradictions) as raised:
        synth_tree(fleet, "dev")
    assert any("gpu-operator/gpu-operator would not run" in i.message for i in raised.value.issues), raised.value


def _refusal(overlay: str) -> tuple[Any, str, str | None]:
    fleet = load_fleet_text(_spec(f"helm:\n  kueue:\n    values:\n      controllerManager: {overlay}\n"))
    with pytest.raises(Contradictions) as raised:
        synth_tree(fleet.environments["dev"], "dev")
    (issue,) = raised.value.issues
    return issue.path, issue.message, issue.hint


def test_a_controller_the_overlay_sends_to_a_tainted_group_is_refused_at_the_overlay_key() -> None:
    """Issue 47 item 3: the refusal pointed at the node group the overlay names, with a hint for a team's job."""
    path, message, hint = _refusal("{nodeSelector: {gpufleet.io/node-group: l4}}")
    assert path == ("helm", "kueue", "values", "controllerManager", "nodeSelector")
    assert message.startswith(
        "gpufleet's own Deployment kueue-system/kueue-controller-manager would not run (scheduling): node(s) had"
        " untolerated taint {nvidia.com/gpu: true} on node group l4"
    )
    assert hint == (
        "remove helm.kueue.values.controllerManager.nodeSelector (gpufleet places the controller on the untainted"
        " system nodes), or tolerate nvidia.com/gpu in helm.kueue.values.controllerManager.tolerations"
    )


def test_a_controller_the_overlay_sends_to_no_group_is_refused_at_the_overlay_key() -> None:
    """It pointed at the document's root (`cluster` on a fleet with system nodes)."""
    path, message, hint = _refusal("{nodeSelector: {gpufleet.io/node-group: nosuch}}")
    assert path == ("helm", "kueue", "values", "controllerManager", "nodeSelector")
    assert "no node group matches gpufleet.io/node-group=nosuch" in message
    assert hint == (
        "select a node group that exists in helm.kueue.values.controllerManager.nodeSelector"
        " (gpufleet.io/node-group: one of system, l4), or remove it"
    )


PLACEMENT_CASES = [
    ('{tolerations: "x"}', "controllerManager.tolerations", "controllerManager.tolerations is a list in chart kueue 0.19.2's default values, not a string"),
    ("{nodeSelector: [a, b]}", "controllerManager.nodeSelector", "controllerManager.nodeSelector is a map in chart kueue 0.19.2's default values, not a list"),
    ('{tolerations: ["x"]}', "controllerManager.tolerations.0", "a toleration is a map (key, operator, value, effect), not a string"),
    ("{nodeSelector: {a: [1]}}", "controllerManager.nodeSelector.a", "a nodeSelector value is a string (a node label's value), not a list"),
    ("{tolerations: [{key: 1}]}", "controllerManager.tolerations.0.key", "key is a string, not a number"),
    ("{tolerations: [{operator: Exist}]}", "controllerManager.tolerations.0.operator", 'Unsupported value: "Exist": supported values: "Exists", "Equal"'),
    ("{tolerations: [{effect: NoSchedul}]}", "controllerManager.tolerations.0.effect", 'Unsupported value: "NoSchedul": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    ("{tolerations: [{tolerationSeconds: a}]}", "controllerManager.tolerations.0.tolerationSeconds", "tolerationSeconds is an integer, not a string"),
]  # fmt: skip


@pytest.mark.parametrize(("overlay", "where", "message"), PLACEMENT_CASES)
def test_an_overlay_of_the_wrong_shape_is_refused_by_validate(overlay: str, where: str, message: str) -> None:
    """Issue 47 item 3: validate accepted these and synth exited 3 (the model read a string as a list of maps)."""
    with pytest.raises(SpecError) as raised:
        load_fleet_text(_spec(f"helm:\n  kueue:\n    values:\n      controllerManager: {overlay}\n"))
    assert [(".".join(map(str, i.path[3:])), i.message) for i in raised.value.issues] == [(where, message)]


def test_a_changed_overlay_is_a_change_of_the_release_values_in_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trees = {}
    for name, spec in (("old", _spec(OVERLAY)), ("new", _spec(OVERLAY.replace("system-cluster-critical", "high")))):
        write_tree(synth_tree(load_fleet_text(spec).environments["dev"], "dev")[1], str(tmp_path / name))
        trees[name] = read_tree(tmp_path / name)
    report = diff_trees(trees["old"], trees["new"])
    assert [(c.id, c.action, c.paths) for c in report.changes] == [
        ("helm-gpu-operator", "update", ("values.operator.priorityClassName",))
    ]
    assert main(["diff", str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "stage foundation: 1 changed",
        "    ~ helm-gpu-operator (kubernetes:helm.sh/v3:Release)",
        "        values.operator.priorityClassName",
    ]


def _value_paths(values: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    out = {path}
    if isinstance(values, dict):
        for key, value in values.items():
            out |= _value_paths(value, path + (key,))
    return out


def test_every_guarded_path_is_a_value_of_the_pinned_chart_or_one_gpufleet_renders() -> None:
    """So the list cannot guard a key that does not exist (and give a reason for nothing)."""
    fleets = [load_fleet_text((ROOT / "fleet.yaml").read_text()).environments["prod"]]
    rendered: dict[str, set[tuple[str, ...]]] = {}
    for fleet in fleets:
        for stage in build_plan(fleet, "prod").stages:
            for r in stage.content.resources:
                if r.type == RELEASE:
                    key = next(k for k, c in COMPONENTS.items() if r.args["chart"].endswith(c.chart))
                    rendered.setdefault(key, set()).update(_value_paths(r.args["values"]))
    for component, paths in GUARDED.items():
        chart = COMPONENTS[component].chart
        shipped = chart_values.defaults(chart, default_release(component)).values
        known = _value_paths(shipped) | rendered.get(component, set())
        for path in paths:
            assert path in known, f"{component}: {'.'.join(path)} is neither in {chart}'s values nor rendered"


def test_no_issue_for_a_spec_without_overlays() -> None:
    assert not [i for i in load_fleet_text(MINIMAL).warnings if i.path[:1] == ("helm",)]
