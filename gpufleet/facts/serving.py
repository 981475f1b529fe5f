"""The inference servers gpufleet's serving signals are written for, and the Prometheus metrics each exports, named
exactly as the pinned release emits them (docs/inference.md).

Why, with sources: docs/inference.md, "Design notes", gpufleet/facts/serving.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    name: str  # as scraped (a histogram's family name; its series are <name>_bucket/_sum/_count)
    kind: str  # gauge | counter | histogram
    labels: tuple[str, ...]  # the labels the server sets itself (the scrape adds namespace, pod, ...)


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    title: str
    image: str  # the pinned release
    source: str  # where the metric names below are defined, at that release
    metrics_port: int  # the container port that serves /metrics by default
    queue_depth: Metric  # requests waiting for a batch slot
    queue_wait: tuple[Metric, ...]  # what the mean time a request waited is computed from
    batch: tuple[Metric, ...]  # what the batch size (requests per batch) is computed from
    # Requests waiting in a backend's own scheduler, which the server's queue_depth does not count, and the label
    # matcher that selects them (a backend that is not loaded exports nothing: the sum then counts queue_depth only).
    backend_queue: Metric | None = None
    backend_queue_selector: str = ""


# vLLM V1 engine, vllm/v1/metrics/loggers.py PrometheusStatLogger (vllm-project/vllm, read at commit 005a810b;
# the same names in the v0.10 line, the default engine since 0.8): labels model_name and engine on every family;
# vllm:num_requests_waiting and vllm:num_requests_running gauges, vllm:request_queue_time_seconds a histogram of the
# WAITING phase of each finished request, vllm:kv_cache_usage_perc the fraction (0-1) of KV-cache blocks in use.
# The OpenAI server serves /metrics on its API port (8000).
VLLM = Server(
    title="vLLM",
    image="vllm/vllm-openai:v0.10.2",
    source="vllm-project/vllm vllm/v1/metrics/loggers.py",
    metrics_port=8000,
    queue_depth=Metric(name="vllm:num_requests_waiting", kind="gauge", labels=("model_name", "engine")),
    queue_wait=(Metric(name="vllm:request_queue_time_seconds", kind="histogram", labels=("model_name", "engine")),),
    batch=(Metric(name="vllm:num_requests_running", kind="gauge", labels=("model_name", "engine")),),
)
VLLM_KV_CACHE = Metric(name="vllm:kv_cache_usage_perc", kind="gauge", labels=("model_name", "engine"))

# Triton Inference Server 25.08 (core r25.08): triton-inference-server/core src/metrics.cc registers the counters
# nv_inference_queue_duration_us (cumulative queuing time, microseconds), nv_inference_request_success,
# nv_inference_count (inferences) and nv_inference_exec_count (model executions: inferences per execution is the batch
# size the dynamic batcher formed), and the gauge nv_inference_pending_request_count (requests received and not yet
# executing); labels model and version (src/metric_model_reporter.cc).
# Sources: https://github.com/triton-inference-server/tensorrtllm_backend/blob/efb8a497eac3e16acf6f3ad250565465c80e6f0a/README.md
_TRITON_LABELS = ("model", "version")
TRTLLM_REQUESTS = Metric(name="nv_trt_llm_request_metrics", kind="gauge", labels=("model", "request_type", "version"))
TRITON = Server(
    title="Triton Inference Server",
    image="nvcr.io/nvidia/tritonserver:25.08-py3",
    source="triton-inference-server/core src/metrics.cc",
    metrics_port=8002,
    queue_depth=Metric(name="nv_inference_pending_request_count", kind="gauge", labels=_TRITON_LABELS),
    queue_wait=(
        Metric(name="nv_inference_queue_duration_us", kind="counter", labels=_TRITON_LABELS),
        Metric(name="nv_inference_request_success", kind="counter", labels=_TRITON_LABELS),
    ),
    batch=(
        Metric(name="nv_inference_count", kind="counter", labels=_TRITON_LABELS),
        Metric(name="nv_inference_exec_count", kind="counter", labels=_TRITON_LABELS),
    ),
    backend_queue=TRTLLM_REQUESTS,
    backend_queue_selector='request_type="waiting"',
)

# Text Generation Inference 3.x: the router's metrics (huggingface/text-generation-inference router/src/infer and
# backends' queue.rs: metrics::gauge!("tgi_queue_size"), tgi_batch_current_size; tgi_request_queue_duration a
# histogram, every `*duration` metric gets buckets in router/src/server.rs; docs/source/reference/metrics.md lists
# them). No labels of its own on these. Served on the router's port (80 in the image).
TGI = Server(
    title="Text Generation Inference",
    image="ghcr.io/huggingface/text-generation-inference:3.3.4",
    source="huggingface/text-generation-inference router/src (docs/source/reference/metrics.md)",
    metrics_port=80,
    queue_depth=Metric(name="tgi_queue_size", kind="gauge", labels=()),
    queue_wait=(Metric(name="tgi_request_queue_duration", kind="histogram", labels=()),),
    batch=(Metric(name="tgi_batch_current_size", kind="gauge", labels=()),),
)

SERVERS: Mapping[str, Server] = MappingProxyType({"vllm": VLLM, "triton": TRITON, "tgi": TGI})
