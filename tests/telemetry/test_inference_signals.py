"""The serving signals (gpufleet.plan.manifests.inference) under the real promtool, fed series shaped as vLLM, Triton
and TGI export them (names, types and labels of gpufleet.facts.serving; a histogram as its _sum/_count series, the
scrape's namespace and pod labels added as the PodMonitor's honorLabels false makes them)."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.facts import serving
from gpufleet.plan.manifests import inference
from tests.promtool import ROOT, check_rules, run_rule_tests, series, stage_rule_groups

EXAMPLE = ROOT / "fleet.yaml"  # an Inference group (l40s)


@pytest.fixture(scope="module")
def groups() -> list[dict[str, Any]]:
    rendered = stage_rule_groups(EXAMPLE, "prod", "telemetry")
    return [g for g in rendered if g["name"] == "gpufleet-inference-signals"]


def _labels(metric: serving.Metric, ns: str, pod: str, **own: str) -> dict[str, str]:
    values = {"model_name": "llama", "engine": "0", "model": "resnet", "version": "1", "request_type": "waiting"}
    values.update(own)
    return {**{k: values[k] for k in metric.labels}, "namespace": ns, "pod": pod}


def _vllm(ns: str, pod: str, waiting: int, running: int, kv: float, queued_s_per_min: float) -> list[dict[str, str]]:
    (wait,), (batch,) = serving.VLLM.queue_wait, serving.VLLM.batch
    # 10 requests finish a minute, each having waited queued_s_per_min / 10 seconds.
    return [
        series(serving.VLLM.queue_depth.name, _labels(serving.VLLM.queue_depth, ns, pod), f"{waiting}x10"),
        series(batch.name, _labels(batch, ns, pod), f"{running}x10"),
        series(serving.VLLM_KV_CACHE.name, _labels(serving.VLLM_KV_CACHE, ns, pod), f"{kv}x10"),
        series(f"{wait.name}_sum", _labels(wait, ns, pod), f"0+{queued_s_per_min}x10"),
        series(f"{wait.name}_count", _labels(wait, ns, pod), "0+10x10"),
    ]


def _triton(ns: str, pod: str) -> list[dict[str, str]]:
    (wait, success), (count, execs) = serving.TRITON.queue_wait, serving.TRITON.batch
    # 60 requests a minute, 30 s of queuing in all (0.5 s each), 240 inferences in 30 executions (batches of 8).
    return [
        series(serving.TRITON.queue_depth.name, _labels(serving.TRITON.queue_depth, ns, pod), "5x10"),
        series(wait.name, _labels(wait, ns, pod), "0+30000000x10"),
        series(success.name, _labels(success, ns, pod), "0+60x10"),
        series(count.name, _labels(count, ns, pod), "0+240x10"),
        series(execs.name, _labels(execs, ns, pod), "0+30x10"),
    ]


def _tgi(ns: str, pod: str, queue: int, batch: int) -> list[dict[str, str]]:
    (wait,), (size,) = serving.TGI.queue_wait, serving.TGI.batch
    return [
        series(serving.TGI.queue_depth.name, _labels(serving.TGI.queue_depth, ns, pod), f"{queue}x10"),
        series(size.name, _labels(size, ns, pod), f"{batch}x10"),
        series(f"{wait.name}_sum", _labels(wait, ns, pod), "0+3x10"),  # 3 s over 30 requests a minute
        series(f"{wait.name}_count", _labels(wait, ns, pod), "0+30x10"),
    ]


def test_the_example_fleet_renders_the_signals_and_promtool_accepts_them(
    groups: list[dict[str, Any]], tmp_path: Any
) -> None:
    assert groups, "the telemetry stage of a fleet with an Inference group renders the serving signals"
    check_rules(tmp_path, groups)


def test_a_fleet_without_an_inference_group_renders_no_signals_and_no_keda() -> None:
    import dataclasses

    from gpufleet.plan.rollout import build_plan
    from gpufleet.rules.pipeline import load_fleet
    from gpufleet.spec.fleet import WorkloadClass

    fleet = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    stage = next(s for s in build_plan(fleet, "prod").stages if s.name == "telemetry")
    assert {"helm-keda", "prometheusrule-monitoring-gpufleet-inference"} <= {r.id for r in stage.content.resources}
    batch = tuple(
        dataclasses.replace(g, workload_class=WorkloadClass.BATCH) if g.workload_class == WorkloadClass.INFERENCE else g
        for g in fleet.node_groups
    )
    fleet = dataclasses.replace(fleet, node_groups=batch)
    stage = next(s for s in build_plan(fleet, "prod").stages if s.name == "telemetry")
    ids = {r.id for r in stage.content.resources}
    assert "helm-keda" not in ids and not any("inference" in i for i in ids)


def test_signals_per_namespace_from_each_server(groups: list[dict[str, Any]], tmp_path: Any) -> None:
    at = "5m"
    input_series = [
        # chat: two vLLM replicas (3 + 1 waiting, 6 s and 4 s of queuing a minute over 10 requests each)
        *_vllm("chat", "chat-0", 3, 8, 0.9, 6),
        *_vllm("chat", "chat-1", 1, 4, 0.5, 4),
        # vision: one Triton replica
        *_triton("vision", "triton-0"),
        # search: one TGI replica and one vLLM replica, one namespace
        *_tgi("search", "tgi-0", queue=6, batch=12),
        *_vllm("search", "vllm-0", 2, 4, 0.25, 20),
    ]

    def per_server(record: str, rows: list[tuple[str, str, float]]) -> dict[str, Any]:
        name = f"namespace_server:{record.split(':', 1)[1]}"
        return {
            "expr": f"round({name}, 0.001)",  # rates of floats: compared to a thousandth
            "eval_time": at,
            "exp_samples": [{"labels": f'{{namespace="{ns}",server="{s}"}}', "value": v} for ns, s, v in rows],
        }

    def total(record: str, rows: list[tuple[str, float]]) -> dict[str, Any]:
        return {
            "expr": f"round({record}, 0.001)",
            "eval_time": at,
            "exp_samples": [{"labels": f'{{namespace="{ns}"}}', "value": v} for ns, v in rows],
        }

    tests = [
        {
            "interval": "1m",
            "input_series": input_series,
            "promql_expr_test": [
                per_server(
                    inference.QUEUE_DEPTH,
                    [("chat", "vllm", 4), ("search", "vllm", 2), ("vision", "triton", 5), ("search", "tgi", 6)],
                ),
                total(inference.QUEUE_DEPTH, [("chat", 4), ("search", 8), ("vision", 5)]),
                # chat: 10 s over 20 requests; vision: 30 s over 60; search: tgi 3/30, vllm 20/10
                per_server(
                    inference.QUEUE_WAIT,
                    [("chat", "vllm", 0.5), ("search", "vllm", 2), ("vision", "triton", 0.5), ("search", "tgi", 0.1)],
                ),
                total(inference.QUEUE_WAIT, [("chat", 0.5), ("search", 2), ("vision", 0.5)]),
                per_server(
                    inference.BATCH_SIZE,
                    [("chat", "vllm", 6), ("search", "vllm", 4), ("vision", "triton", 8), ("search", "tgi", 12)],
                ),
                total(inference.BATCH_SIZE, [("chat", 6), ("search", 8), ("vision", 8)]),
                total(inference.KV_CACHE, [("chat", 0.7), ("search", 0.25)]),
            ],
        }
    ]
    run_rule_tests(tmp_path, groups, tests)


def test_a_tensorrt_llm_models_batch_manager_queue_counts_as_waiting(
    groups: list[dict[str, Any]], tmp_path: Any
) -> None:
    """Issue 41 item 11: a Triton replica serving a TensorRT-LLM model (the docs example's `ensemble` over
    `tensorrt_llm`) hands every request to the backend at once: the core's pending count stays 0 while the batch
    manager holds 7 waiting; the series as the backend exports them (every request_type beside "waiting")."""
    trt = serving.TRTLLM_REQUESTS
    pending = serving.TRITON.queue_depth
    served = [
        *(
            series(pending.name, _labels(pending, "language", "llm-0", model=m), "0x10")
            for m in ("ensemble", "tensorrt_llm")
        ),
        *(
            series(trt.name, _labels(trt, "language", "llm-0", model="tensorrt_llm", request_type=kind), f"{n}x10")
            for kind, n in (("waiting", 7), ("context", 2), ("scheduled", 30), ("max", 64), ("active", 32))
        ),
        # a plain Triton model next to it: its core queue still counts
        series(pending.name, _labels(pending, "language", "resnet-0"), "3x10"),
    ]
    record = f"namespace_server:{inference.QUEUE_DEPTH.split(':', 1)[1]}"
    tests = [
        {
            "interval": "1m",
            "input_series": served,
            "promql_expr_test": [
                {
                    "expr": f"round({record})",
                    "eval_time": "5m",
                    "exp_samples": [{"labels": '{namespace="language",server="triton"}', "value": 10}],
                }
            ],
        }
    ]
    run_rule_tests(tmp_path, groups, tests)


def test_an_idle_namespace_has_no_queue_wait_rather_than_nan(groups: list[dict[str, Any]], tmp_path: Any) -> None:
    (wait,) = serving.VLLM.queue_wait
    idle = [
        series(f"{wait.name}_sum", _labels(wait, "chat", "chat-0"), "7x10"),
        series(f"{wait.name}_count", _labels(wait, "chat", "chat-0"), "5x10"),
    ]
    tests = [
        {
            "interval": "1m",
            "input_series": idle,
            "promql_expr_test": [{"expr": inference.QUEUE_WAIT, "eval_time": "5m", "exp_samples": []}],
        }
    ]
    run_rule_tests(tmp_path, groups, tests)
