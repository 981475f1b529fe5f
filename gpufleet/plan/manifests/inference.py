"""Inference as its own tenant (telemetry stage, where the fleet has an Inference group): KEDA's values, the
PodMonitor that scrapes serving pods, and the recording rules that turn what vLLM, Triton and TGI export into three
per-namespace signals a ScaledObject scales on (docs/inference.md):

Why, with sources: docs/inference.md, "Design notes", gpufleet/plan/manifests/inference.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.facts import serving
from gpufleet.plan.manifests.rules_promql import API_VERSION, MONITORING_LABEL
from gpufleet.spec.fleet import Fleet, WorkloadClass
from gpufleet.spec.names import LABEL_MANAGED_BY

KEDA_RELEASE = "keda"
NS_KEDA = "keda"
# The label a serving pod carries to be scraped, and the name of its container port that serves /metrics.
SERVING_METRICS_LABEL = "gpufleet.io/serving-metrics"
SERVING_METRICS_PORT = "metrics"
WAIT_WINDOW = "2m"

QUEUE_DEPTH = "namespace:inference_queue_depth:sum"
QUEUE_WAIT = "namespace:inference_queue_wait_seconds:mean2m"
BATCH_SIZE = "namespace:inference_batch_size:avg"
KV_CACHE = "namespace:vllm_kv_cache_usage:avg"


def inference_groups(fleet: Fleet) -> list[str]:
    return [g.name for g in fleet.node_groups if g.workload_class == WorkloadClass.INFERENCE]


def keda_values() -> dict[str, Any]:
    """Values for the KEDA chart 2.20.2 (kedacore/charts keda/values.yaml; keys checked against it by the golden
    trees' test).

    Why: docs/inference.md, "Design notes", inference.keda_values."""
    monitor = {"enabled": True, "additionalLabels": {**LABEL_MANAGED_BY, **MONITORING_LABEL}}
    return {
        "crds": {"install": True},
        "prometheus": {
            "metricServer": {"enabled": True, "serviceMonitor": dict(monitor)},
            "operator": {"enabled": True, "serviceMonitor": dict(monitor)},
        },
    }


def serving_pod_monitor(fleet: Fleet, namespace: str) -> dict[str, Any]:
    """Scrapes every serving pod labelled gpufleet.io/serving-metrics=true on its container port named `metrics`,
    in the team namespaces (every namespace when no team is declared).

    Why: docs/inference.md, "Design notes", inference.serving_pod_monitor."""
    namespaces = sorted({team.namespace for team in fleet.teams})
    selector: dict[str, Any] = {"matchNames": namespaces} if namespaces else {"any": True}
    return {
        "apiVersion": API_VERSION,
        "kind": "PodMonitor",
        "metadata": {
            "name": "gpufleet-inference-serving",
            "namespace": namespace,
            "labels": {**LABEL_MANAGED_BY, **MONITORING_LABEL},
        },
        "spec": {
            "selector": {"matchLabels": {SERVING_METRICS_LABEL: "true"}},
            "namespaceSelector": selector,
            "podMetricsEndpoints": [
                {"port": SERVING_METRICS_PORT, "path": "/metrics", "interval": "15s", "honorLabels": False}
            ],
        },
    }


def _per_server(record: str, server: str, expr: str) -> dict[str, Any]:
    return {"record": f"namespace_server:{record.split(':', 1)[1]}", "expr": expr, "labels": {"server": server}}


def _ratio(num: str, den: str, scale: str = "") -> str:
    """A ratio of two rates per namespace; `> -1` drops the NaN of 0/0 (a namespace that served nothing in the window
    has no figure, rather than one KEDA reads as an error)."""
    by = "sum by (namespace)"
    return f"{by} (rate({num}[{WAIT_WINDOW}])){scale} / {by} (rate({den}[{WAIT_WINDOW}])) > -1"


def _queued(server: serving.Server) -> str:
    """The server's waiting requests with its backend's (Triton's with TensorRT-LLM's batch manager queue).

    Why: docs/inference.md, "Design notes", inference._queued."""
    if server.backend_queue is None:
        return server.queue_depth.name
    return f"{server.queue_depth.name} or {server.backend_queue.name}{{{server.backend_queue_selector}}}"


def serving_groups() -> list[dict[str, Any]]:
    """The serving signals, per namespace: per server first, then the namespace's figure over every server."""
    v, t, g = serving.VLLM, serving.TRITON, serving.TGI
    (t_wait, t_success), (t_count, t_exec) = t.queue_wait, t.batch
    (v_wait,), (g_wait,) = v.queue_wait, g.queue_wait
    rules: list[dict[str, Any]] = [
        _per_server(QUEUE_DEPTH, "vllm", f"sum by (namespace) ({v.queue_depth.name})"),
        _per_server(QUEUE_DEPTH, "triton", f"sum by (namespace) ({_queued(t)})"),
        _per_server(QUEUE_DEPTH, "tgi", f"sum by (namespace) ({g.queue_depth.name})"),
        # A histogram's _sum over its _count is the mean of what it observed; Triton's cumulative microseconds of
        # queuing over its successful requests is the same mean (metrics.cc counts both per request).
        _per_server(QUEUE_WAIT, "vllm", _ratio(f"{v_wait.name}_sum", f"{v_wait.name}_count")),
        _per_server(QUEUE_WAIT, "triton", _ratio(t_wait.name, t_success.name, " / 1e6")),
        _per_server(QUEUE_WAIT, "tgi", _ratio(f"{g_wait.name}_sum", f"{g_wait.name}_count")),
        # vLLM's running requests are its batch; Triton's inferences per model execution are the batches its
        # dynamic batcher formed; TGI's current batch size is a gauge.
        _per_server(BATCH_SIZE, "vllm", f"avg by (namespace) ({v.batch[0].name})"),
        _per_server(BATCH_SIZE, "triton", _ratio(t_count.name, t_exec.name)),
        _per_server(BATCH_SIZE, "tgi", f"avg by (namespace) ({g.batch[0].name})"),
        {"record": KV_CACHE, "expr": f"avg by (namespace) ({serving.VLLM_KV_CACHE.name})"},
        {"record": QUEUE_DEPTH, "expr": f"sum by (namespace) (namespace_server:{QUEUE_DEPTH.split(':', 1)[1]})"},
        {"record": QUEUE_WAIT, "expr": f"max by (namespace) (namespace_server:{QUEUE_WAIT.split(':', 1)[1]})"},
        {"record": BATCH_SIZE, "expr": f"avg by (namespace) (namespace_server:{BATCH_SIZE.split(':', 1)[1]})"},
    ]
    return [{"name": "gpufleet-inference-signals", "interval": "15s", "rules": rules}]
