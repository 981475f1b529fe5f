"""Every recording rule of the telemetry and cost stages under the real promtool, on the example fleet (prod), with
series shaped as kube-state-metrics and dcgm-exporter emit them (tests/series.py):

- h100 (exclusive, $6.88/GPU-hour): namespace `vision` holds 8 GPUs for 6 minutes (20..25), then stops.
- notebooks (g5.xlarge, one A10G time-sliced 4 ways, $1.01/GPU-hour): 3 `vision` pods and 1 `speech` pod share
  the GPU, all idle; the exporter (KUBERNETES_VIRTUAL_GPUS) gives each pod a copy of the GPU's series.
- a100-mig (p4d.24xlarge, 1g.5gb: 7 slices per A100, $4.10/GPU-hour): 7 `speech` pods hold the 7 slices of one
  A100; one slice works, six idle.

Each figure of issue 13 is reproduced with the expression the rules used before and checked against the rule now:
6 minutes of 8 GPUs recorded 8 GPU-hours (now 0.8); the seven slices of one A100 cost $28.70 an hour (now $4.10,
the A100's hour); four notebook pods on one A10G $4.04 an hour (now $1.01, the whole g5.xlarge).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.promtool import ROOT, run_rule_tests, stage_rule_groups
from tests.series import dcgm, ksm_node, ksm_pod

SPEC = ROOT / "fleet.yaml"
MINUTES = 150
WHOLE = f"x{MINUTES}"
TRAIN = "_x20 Nx5 stale"  # present at minutes 20..25
SHARED = [("vision", "nb-a"), ("vision", "nb-b"), ("vision", "nb-c"), ("speech", "nb-d")]
MIG = [("speech", f"mig-{i}") for i in range(7)]
GPU = "nvidia_com_gpu"


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    # The serving signals' group has its own promtool tests (tests/telemetry/test_inference_signals.py).
    telemetry = [g for g in stage_rule_groups(SPEC, "prod", "telemetry") if g["name"] != "gpufleet-inference-signals"]
    return telemetry + stage_rule_groups(SPEC, "prod", "cost")


def _dcgm_sm_active() -> list[dict[str, str]]:
    out = [dcgm("DCGM_FI_PROF_SM_ACTIVE", "h1", gpu, "_x20 0.9x5 stale", pod=("vision", "train")) for gpu in range(8)]
    out += [dcgm("DCGM_FI_PROF_SM_ACTIVE", "nb1", 0, f"0{WHOLE}", pod=pod, vgpu=str(i)) for i, pod in enumerate(SHARED)]
    out += [
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "m1", 0, f"{0.5 if i == 0 else 0}{WHOLE}", pod=pod, mig=("1g.5gb", 7 + i))
        for i, pod in enumerate(MIG)
    ]
    return out


def _inputs() -> list[dict[str, str]]:
    inputs = (
        ksm_node("h1", "h100", 8, WHOLE)
        + ksm_node("nb1", "notebooks", 4, WHOLE)
        + ksm_node("m1", "a100-mig", 56, WHOLE)
    )
    inputs += ksm_pod("vision", "train", "h1", 8, TRAIN)
    for ns, pod in SHARED:
        inputs += ksm_pod(ns, pod, "nb1", 1, f"N{WHOLE}")
    for ns, pod in MIG:
        inputs += ksm_pod(ns, pod, "m1", 1, f"N{WHOLE}")
    return inputs + _dcgm_sm_active()


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _expect(
    expr: str, at: str, samples: list[tuple[dict[str, str], float]], *, name: str | None = None
) -> dict[str, Any]:
    prefix = expr if name is None else name
    return {
        "expr": expr,
        "eval_time": at,
        "exp_samples": [{"labels": prefix + _labels(labels), "value": value} for labels, value in samples],
    }


def _ng(**labels: str) -> dict[str, str]:
    return dict(labels)


IDLE_MIG = 6 / 7
# Every recording rule at minute 22 (vision's training pod running) and the hourly ones at minute 70.
TELEMETRY_AT_22: dict[str, list[tuple[dict[str, str], float]]] = {
    "gpufleet:devices_per_gpu": [
        (_ng(node_group="a100-mig", resource=GPU, GPU_I_PROFILE="1g.5gb"), 7),
        (_ng(node_group="h100", resource=GPU), 1),
        (_ng(node_group="l40s", resource=GPU), 1),
        (_ng(node_group="notebooks", resource=GPU), 4),
    ],
    # Groups of whole GPUs on multi-GPU nodes, where fragmentation can block a whole-node pod.
    "gpufleet:whole_gpu_node_group:info": [(_ng(node_group="h100"), 1), (_ng(node_group="l40s"), 1)],
    "gpufleet:node_group:info": [
        (_ng(node="h1", node_group="h100"), 1),
        (_ng(node="nb1", node_group="notebooks"), 1),
        (_ng(node="m1", node_group="a100-mig"), 1),
    ],
    "gpufleet:node_gpus_allocatable:sum": [
        (_ng(node="h1", node_group="h100"), 8),
        (_ng(node="nb1", node_group="notebooks"), 4),
        (_ng(node="m1", node_group="a100-mig"), 56),
    ],
    "gpufleet:pod_gpus_requested:sum": (
        [(_ng(namespace="vision", pod="train", node="h1", resource=GPU), 8)]
        + [(_ng(namespace=ns, pod=pod, node="nb1", resource=GPU), 1) for ns, pod in SHARED]
        + [(_ng(namespace=ns, pod=pod, node="m1", resource=GPU), 1) for ns, pod in MIG]
    ),
    "gpufleet:node_gpus_allocated:sum": [
        (_ng(node="h1", node_group="h100"), 8),
        (_ng(node="nb1", node_group="notebooks"), 4),
        (_ng(node="m1", node_group="a100-mig"), 7),
    ],
    # Physical GPUs: 4 replicas of one A10G, 7 slices of one A100.
    "namespace_node_group:gpufleet_gpus_allocated:sum": [
        (_ng(namespace="vision", node_group="h100"), 8),
        (_ng(namespace="vision", node_group="notebooks"), 0.75),
        (_ng(namespace="speech", node_group="notebooks"), 0.25),
        (_ng(namespace="speech", node_group="a100-mig"), 1),
    ],
    "gpufleet:node_gpus_free:sum": [
        (_ng(node="h1", node_group="h100"), 0),
        (_ng(node="nb1", node_group="notebooks"), 0),
        (_ng(node="m1", node_group="a100-mig"), 49),
    ],
    "node_group:gpufleet_gpus_allocatable:sum": [
        (_ng(node_group="h100"), 8),
        (_ng(node_group="notebooks"), 4),
        (_ng(node_group="a100-mig"), 56),
    ],
    "node_group:gpufleet_gpus_allocated:sum": [
        (_ng(node_group="h100"), 8),
        (_ng(node_group="notebooks"), 4),
        (_ng(node_group="a100-mig"), 7),
    ],
    "node_group:gpufleet_gpus_free:sum": [
        (_ng(node_group="h100"), 0),
        (_ng(node_group="notebooks"), 0),
        (_ng(node_group="a100-mig"), 49),
    ],
    "node_group:gpufleet_largest_free_block:max": [
        (_ng(node_group="h100"), 0),
        (_ng(node_group="notebooks"), 0),
        (_ng(node_group="a100-mig"), 49),
    ],
    "node_group:gpufleet_gpus_per_node:max": [
        (_ng(node_group="h100"), 8),
        (_ng(node_group="notebooks"), 4),
        (_ng(node_group="a100-mig"), 56),
    ],
    # Physical GPUs: a shared GPU counts once, however many pods hold a copy of its series; the one working 1g.5gb
    # slice is 1/7 of an A100.
    "node_group:gpufleet_gpus_busy:sum": [
        (_ng(node_group="h100"), 8),
        (_ng(node_group="notebooks"), 0),
        (_ng(node_group="a100-mig"), 1 / 7),
    ],
    # Physical GPUs held (node_group:gpufleet_gpus_allocated:sum above is devices: 4 replicas, 7 slices).
    "node_group:gpufleet_gpus_held:sum": [
        (_ng(node_group="h100"), 8),
        (_ng(node_group="notebooks"), 1),
        (_ng(node_group="a100-mig"), 1),
    ],
    # The idle shared A10G is split between the four pods holding it: 3/4 to vision, 1/4 to speech.
    "namespace_node_group:gpufleet_gpus_idle:sum": [
        (_ng(namespace="vision", node_group="h100"), 0),
        (_ng(namespace="vision", node_group="notebooks"), 0.75),
        (_ng(namespace="speech", node_group="notebooks"), 0.25),
        (_ng(namespace="speech", node_group="a100-mig"), IDLE_MIG),
    ],
    "node_group:gpufleet_gpus_allocated_idle:sum": [
        (_ng(node_group="h100"), 0),
        (_ng(node_group="notebooks"), 1),
        (_ng(node_group="a100-mig"), IDLE_MIG),
    ],
    "namespace:gpufleet_gpus_allocated:sum": [(_ng(namespace="vision"), 8.75), (_ng(namespace="speech"), 1.25)],
    "namespace:gpufleet_gpus_idle:sum": [(_ng(namespace="vision"), 0.75), (_ng(namespace="speech"), 0.25 + IDLE_MIG)],
}

PRICE = {"h100": 6.88, "l40s": 2.35, "a100-mig": 4.10, "notebooks": 1.01}
VISION_ALLOCATED = {"h100": 0.8, "notebooks": 0.75}  # 6 minutes of 8 GPUs; 3 of 4 replicas for the hour
SPEECH_ALLOCATED = {"notebooks": 0.25, "a100-mig": 1.0}
VISION_IDLE = {"h100": 0.0, "notebooks": 0.75}
SPEECH_IDLE = {"notebooks": 0.25, "a100-mig": IDLE_MIG}


def _cost(hours: dict[str, float]) -> float:
    return sum(h * PRICE[g] for g, h in hours.items())


COST_AT_70: dict[str, list[tuple[dict[str, str], float]]] = {
    "gpufleet:gpu_hour_price_usd": [(_ng(node_group=g), p) for g, p in PRICE.items()],
    "gpufleet:team_namespace:info": [(_ng(namespace=t, team=t), 1) for t in ("language", "speech", "vision")],
    "namespace_node_group:gpufleet_gpu_hours_allocated:1h": (
        [(_ng(namespace="vision", node_group=g), h) for g, h in VISION_ALLOCATED.items()]
        + [(_ng(namespace="speech", node_group=g), h) for g, h in SPEECH_ALLOCATED.items()]
    ),
    "namespace_node_group:gpufleet_gpu_hours_idle:1h": (
        [(_ng(namespace="vision", node_group=g), h) for g, h in VISION_IDLE.items()]
        + [(_ng(namespace="speech", node_group=g), h) for g, h in SPEECH_IDLE.items()]
    ),
}
for _kind, _vision, _speech in (("allocated", VISION_ALLOCATED, SPEECH_ALLOCATED), ("idle", VISION_IDLE, SPEECH_IDLE)):
    for _level in ("namespace", "team"):
        COST_AT_70[f"{_level}:gpufleet_gpu_hours_{_kind}:1h"] = [
            (_ng(**{_level: "vision"}), sum(_vision.values())),
            (_ng(**{_level: "speech"}), sum(_speech.values())),
        ]
        COST_AT_70[f"{_level}:gpufleet_gpu_cost_{_kind}_usd:1h"] = [
            (_ng(**{_level: "vision"}), _cost(_vision)),
            (_ng(**{_level: "speech"}), _cost(_speech)),
        ]


def _sm_active_expected() -> list[tuple[dict[str, str], float]]:
    """gpufleet:gpu_sm_active:avg5m: every exporter series at 22 minutes (its labels, with its node group)."""
    groups = {"h1": "h100", "nb1": "notebooks", "m1": "a100-mig"}
    out = []
    for s in _dcgm_sm_active():
        inner = s["series"][s["series"].index("{") + 1 : -1]
        labels = dict(part.split("=", 1) for part in inner.split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        value = {"h1": 0.9, "nb1": 0.0}.get(labels["node"], 0.5 if labels.get("GPU_I_ID") == "7" else 0.0)
        out.append(({**labels, "node_group": groups[labels["node"]]}, value))
    return out


def test_every_recording_rule_has_an_expected_figure(groups: list[dict[str, Any]]) -> None:
    recorded = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    assert recorded == set(TELEMETRY_AT_22) | set(COST_AT_70) | {"gpufleet:gpu_sm_active:avg5m"}


def test_every_recording_rule_on_exporter_shaped_series(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    tests = [_expect(name, "22m", samples) for name, samples in TELEMETRY_AT_22.items()]
    tests.append(_expect("gpufleet:gpu_sm_active:avg5m", "22m", _sm_active_expected()))
    tests += [_expect(name, "70m", samples) for name, samples in COST_AT_70.items()]
    run_rule_tests(tmp_path, groups, [{"interval": "1m", "input_series": _inputs(), "promql_expr_test": tests}])


def test_issue_figures_before_and_after(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    requested = 'sum by (namespace) (gpufleet:pod_gpus_requested:sum{{node="{node}"}})'
    tests = [
        # Before: the hourly average of the GPUs a namespace holds, over the samples that exist: 8 GPU-hours.
        _expect(
            'avg_over_time(namespace_node_group:gpufleet_gpus_allocated:sum{node_group="h100"}[1h])',
            "70m",
            [(_ng(namespace="vision", node_group="h100"), 8)],
            name="",
        ),
        _expect(
            'namespace_node_group:gpufleet_gpu_hours_allocated:1h{node_group="h100"}',
            "70m",
            [(_ng(namespace="vision", node_group="h100"), 0.8)],
            name="namespace_node_group:gpufleet_gpu_hours_allocated:1h",
        ),
        # Before: price per physical GPU times requested devices: 7 slices x $4.10, 4 replicas x $1.01.
        _expect(
            requested.format(node="m1") + ' * on () group_left () gpufleet:gpu_hour_price_usd{node_group="a100-mig"}',
            "70m",
            [(_ng(namespace="speech"), 7 * 4.10)],
            name="",
        ),
        _expect(
            'sum(namespace_node_group:gpufleet_gpu_hours_allocated:1h{node_group="a100-mig"} * on (node_group)'
            " group_left () gpufleet:gpu_hour_price_usd)",
            "70m",
            [({}, 4.10)],
            name="",
        ),
        _expect("sum(" + requested.format(node="nb1") + ") * 1.01", "70m", [({}, 4 * 1.01)], name=""),
        _expect(
            'sum(namespace_node_group:gpufleet_gpu_hours_allocated:1h{node_group="notebooks"} * on (node_group)'
            " group_left () gpufleet:gpu_hour_price_usd)",
            "70m",
            [({}, 1.01)],
            name="",
        ),
        # A namespace that stopped: its hours fall out of the hourly window, then its series goes.
        _expect(
            'namespace_node_group:gpufleet_gpu_hours_allocated:1h{node_group="h100"}',
            "85m",
            [],
            name="namespace_node_group:gpufleet_gpu_hours_allocated:1h",
        ),
        _expect(
            'namespace:gpufleet_gpus_allocated:sum{namespace="vision"}',
            "60m",
            [(_ng(namespace="vision"), 0.75)],
            name="namespace:gpufleet_gpus_allocated:sum",
        ),
    ]
    run_rule_tests(tmp_path, groups, [{"interval": "1m", "input_series": _inputs(), "promql_expr_test": tests}])


def test_a_mixed_mig_layout_counts_each_slice_as_its_share(tmp_path: Path) -> None:
    """a100-mig as `migStrategy: Mixed` (4 GPUs of 1g.5gb, 4 of 3g.20gb): `speech` holds the seven 1g.5gb slices of
    one A100 (one busy) and one idle 3g.20gb slice, half of another A100: 1.5 GPUs held, 6/7 + 1/2 of a GPU idle."""
    spec = tmp_path / "fleet.yaml"
    layout = "{strategy: MIG, migStrategy: Mixed, layout: [{gpus: 4, profile: 1g.5gb}, {gpus: 4, profile: 3g.20gb}]}"
    text = SPEC.read_text()
    assert "sharing: {strategy: MIG, profile: 1g.5gb}" in text
    spec.write_text(text.replace("sharing: {strategy: MIG, profile: 1g.5gb}", f"sharing: {layout}"))
    groups = stage_rule_groups(spec, "prod", "telemetry")
    inputs = ksm_node("m1", "a100-mig", 36, WHOLE)
    for ns, pod in MIG:
        inputs += ksm_pod(ns, pod, "m1", 1, f"N{WHOLE}", resource="nvidia_com_mig_1g_5gb")
    inputs += ksm_pod("speech", "big", "m1", 1, f"N{WHOLE}", resource="nvidia_com_mig_3g_20gb")
    inputs += [
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "m1", 0, f"{0.5 if i == 0 else 0}{WHOLE}", pod=pod, mig=("1g.5gb", 7 + i))
        for i, pod in enumerate(MIG)
    ]
    inputs.append(dcgm("DCGM_FI_PROF_SM_ACTIVE", "m1", 4, f"0{WHOLE}", pod=("speech", "big"), mig=("3g.20gb", 1)))
    tests = [
        _expect(
            'gpufleet:devices_per_gpu{node_group="a100-mig"}',
            "22m",
            [
                (_ng(node_group="a100-mig", resource="nvidia_com_mig_1g_5gb", GPU_I_PROFILE="1g.5gb"), 7),
                (_ng(node_group="a100-mig", resource="nvidia_com_mig_3g_20gb", GPU_I_PROFILE="3g.20gb"), 2),
            ],
            name="gpufleet:devices_per_gpu",
        ),
        _expect(
            "namespace_node_group:gpufleet_gpus_allocated:sum",
            "22m",
            [(_ng(namespace="speech", node_group="a100-mig"), 1.5)],
        ),
        _expect(
            "namespace_node_group:gpufleet_gpus_idle:sum",
            "22m",
            [(_ng(namespace="speech", node_group="a100-mig"), 6 / 7 + 0.5)],
        ),
    ]
    run_rule_tests(tmp_path, groups, [{"interval": "1m", "input_series": inputs, "promql_expr_test": tests}])


def test_idle_gpu_hours_of_short_jobs_are_bounded_by_allocation(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    """Two idle 20-minute jobs on h1 (minutes 10..29): `nb`, whose exporter series ends with the pod, and `lag`,
    whose exporter series outlives the pod by 3 minutes (the exporter's pod mapping lags the pod). Before: the 5-minute
    average kept an ended series idle for up to 5 more minutes, and nothing tied idle to allocation: nb showed
    25/20 = 125% of its allocated GPU-hours idle, lag 28/20. Now idle = allocated = 20 minutes of one GPU."""
    life = "_x10 Nx19 stale"
    inputs = ksm_node("h1", "h100", 8, WHOLE)
    inputs += ksm_pod("nb", "notebook", "h1", 1, life) + ksm_pod("lag", "job", "h1", 1, life)
    inputs += [
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "h1", 0, "_x10 0x19 stale", pod=("nb", "notebook")),
        dcgm("DCGM_FI_PROF_SM_ACTIVE", "h1", 1, "_x10 0x22 stale", pod=("lag", "job")),
    ]
    third = 20 / 60
    tests = [
        _expect(
            f"namespace_node_group:gpufleet_gpu_hours_{kind}:1h",
            "65m",
            [(_ng(namespace=ns, node_group="h100"), third) for ns in ("nb", "lag")],
        )
        for kind in ("allocated", "idle")
    ]
    # What the idle record was before, summed the same way: 25 and 28 idle minutes.
    before = (
        'sum by (namespace) (label_replace(avg_over_time(DCGM_FI_PROF_SM_ACTIVE{exported_pod!=""}[5m]) < bool 0.1,'
        ' "namespace", "$1", "exported_namespace", "(.+)"))'
    )
    tests.append(
        _expect(
            f"sum_over_time(({before})[59m59s:1m]) / 60",
            "65m",
            [(_ng(namespace="nb"), 25 / 60), (_ng(namespace="lag"), 28 / 60)],
            name="",
        )
    )
    run_rule_tests(tmp_path, groups, [{"interval": "1m", "input_series": inputs, "promql_expr_test": tests}])


def test_the_allocated_versus_working_panel_plots_one_unit(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    """Both queries of the panel in physical GPUs. Before: allocated devices (4 time-sliced replicas of one A10G, 7
    slices of one A100) beside working devices (the shared A10G once, one slice): 4 vs 0 and 7 vs 1 on one axis."""
    import json

    from gpufleet.plan.manifests import dashboards

    panel = next(
        p for p in json.loads(dashboards.telemetry_dashboard())["panels"] if p["title"].startswith("Allocated versus")
    )
    assert panel["title"] == "Allocated versus working GPUs per node group (physical GPUs)"
    allocated, working = (t["expr"] for t in panel["targets"])
    tests = [
        _expect(
            allocated,
            "22m",
            [(_ng(node_group=g), n) for g, n in (("h100", 8), ("notebooks", 1), ("a100-mig", 1))],
            name=allocated,
        ),
        _expect(
            working,
            "22m",
            [(_ng(node_group=g), n) for g, n in (("h100", 8), ("notebooks", 0), ("a100-mig", 1 / 7))],
            name=working,
        ),
    ]
    run_rule_tests(tmp_path, groups, [{"interval": "1m", "input_series": _inputs(), "promql_expr_test": tests}])
