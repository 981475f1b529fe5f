"""What each documented ScaledObject (tests/documented.py: docs/examples and the recipes in docs/) asks the HPA for,
computed as the HPA computes it, and what it scales (issue 41 item 10: docs/inference.md's recipe summed an average
over replicas and divided it by a per-replica threshold, so its batch trigger never asked for more than
ceil(max-num-seqs / threshold) = 2 replicas and let busy replicas go whenever the queue emptied; and it targeted the
Triton Deployment while querying vLLM).

KEDA hands each prometheus trigger's query value to the HPA as an external metric, an AverageValue target unless the
trigger says `metricType: Value` (kedacore/keda v2.20.2 pkg/scalers/prometheus_scaler.go GetMetricSpecForScaling,
via GetMetricTargetType). The HPA then (kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go):
- AverageValue, GetExternalPerPodMetricReplicas: ceil(value / target), unless value / (target x current) is within
  the 0.1 tolerance of 1 (then current);
- Value, GetExternalMetricReplicas: ceil(current x value / target), the same tolerance;
and takes the largest proposal over the triggers, within [minReplicaCount, maxReplicaCount] (KEDA's defaults 0 and
100). So an AverageValue query must be a total over the target's replicas of a per-replica figure: these queries are
`sum(<server metric>{matchers})`, evaluated here over series as each pod of the target exports them."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pytest

from gpufleet.facts import serving
from tests.documented import documented

TOLERANCE = 0.1
OBJECTS = dict(documented())
SCALERS = {where: obj for where, obj in OBJECTS.items() if obj["kind"] == "ScaledObject"}
_SUM = re.compile(r"sum\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}\s*\)")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"\s*,?')
# Each server's per-replica gauges, by what a replica does: requests waiting and requests in its running batch.
_WAITING = {s.queue_depth.name: key for key, s in serving.SERVERS.items()}
_RUNNING = {s.batch[0].name: key for key, s in serving.SERVERS.items() if s.batch[0].kind == "gauge"}


def _target(where: str, scaler: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = scaler["spec"]["scaleTargetRef"]
    kind, namespace = ref.get("kind", "Deployment"), scaler["metadata"]["namespace"]
    found = [
        o
        for o in OBJECTS.values()
        if (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) == (kind, namespace, ref["name"])
    ]
    assert len(found) == 1, f"{where}: scaleTargetRef {kind} {namespace}/{ref['name']} is no documented object"
    return found[0]


def _pods(target: Mapping[str, Any], replicas: int) -> list[str]:
    """The names the controllers give the pods that serve (a Deployment's <name>-<template hash>-<5 chars>, a
    LeaderWorkerSet's leaders <name>-<group>: only the leader runs the API server)."""
    name = target["metadata"]["name"]
    if target["kind"] == "LeaderWorkerSet":
        return [f"{name}-{i}" for i in range(replicas)]
    return [f"{name}-5d8f7c9b4-{i:05d}"[: len(name) + 16] for i in range(replicas)]


def _images(target: Mapping[str, Any]) -> set[str]:
    spec = target["spec"]
    templates = [spec.get("template")] if "template" in spec else []
    templates += [spec.get("leaderWorkerTemplate", {}).get(k) for k in ("leaderTemplate", "workerTemplate")]
    return {c["image"].split(":")[0] for t in templates if t for c in t["spec"]["containers"]}


def _value(query: str, series: list[tuple[str, Mapping[str, str], float]]) -> float:
    match = _SUM.fullmatch(query.strip())
    assert match, f"{query!r}: an AverageValue query must be sum(<metric>{{...}}), a total over the target's pods"
    name, matchers = match.group(1), _MATCHER.findall(match.group(2))
    assert name in _WAITING or name in _RUNNING, (
        f"{query!r}: {name} is no per-replica gauge of a server (an AverageValue target divides a total of them;"
        " a recorded per-namespace series is already summed or averaged)"
    )

    def selected(labels: Mapping[str, str]) -> bool:
        for label, op, value in matchers:
            have = labels.get(label, "")
            ok = {"=": have == value, "!=": have != value}.get(op, bool(re.fullmatch(value, have)))
            if (op == "!~" and ok) or (op != "!~" and not ok):
                return False
        return True

    return sum(v for n, labels, v in series if n == name and selected(labels))


def desired(scaler: Mapping[str, Any], current: int, series: list[tuple[str, Mapping[str, str], float]]) -> int:
    spec = scaler["spec"]
    proposals = []
    for trigger in spec["triggers"]:
        target = float(trigger["metadata"]["threshold"])
        value = _value(trigger["metadata"]["query"], series)
        if trigger.get("metricType", "AverageValue") == "AverageValue":
            ratio = value / (target * current)
            proposals.append(current if abs(1 - ratio) <= TOLERANCE else math.ceil(value / target))
        else:
            ratio = value / target
            proposals.append(current if abs(1 - ratio) <= TOLERANCE else math.ceil(current * ratio))
    return max(spec.get("minReplicaCount", 0), min(spec.get("maxReplicaCount", 100), max(proposals)))


def _served(scaler: Mapping[str, Any], current: int, waiting: float, running: float) -> list[Any]:
    """The series `current` replicas of the target export, each with `waiting` queued and `running` in its batch."""
    target = _target("", scaler)
    namespace = scaler["metadata"]["namespace"]
    names = {m for t in scaler["spec"]["triggers"] for m in _SUM.findall(t["metadata"]["query"])}
    out = []
    for pod in _pods(target, current):
        labels = {"namespace": namespace, "pod": pod}
        for name in {n for n, _ in names}:
            if name in _WAITING:
                out.append((name, labels, waiting))
            elif name in _RUNNING:
                out.append((name, labels, running))
    return out


def _batch(where: str, scaler: Mapping[str, Any]) -> Mapping[str, Any]:
    """The trigger on the replicas' running batches."""
    found = [
        t for t in scaler["spec"]["triggers"] if any(n in _RUNNING for n, _ in _SUM.findall(t["metadata"]["query"]))
    ]
    assert len(found) == 1, f"{where}: no trigger sums a server's running batch over the replicas"
    return found[0]


def test_the_recipe_and_both_examples_are_here() -> None:
    assert {w.split("#")[0].split(":")[0] for w in SCALERS} == {
        "docs/examples/vllm.yaml",
        "docs/examples/lws-inference.yaml",
        "docs/inference.md",
    }


@pytest.mark.parametrize("where", sorted(SCALERS))
def test_it_targets_a_documented_server_whose_metrics_it_queries(where: str) -> None:
    scaler = SCALERS[where]
    target = _target(where, scaler)
    for trigger in scaler["spec"]["triggers"]:
        (name,) = {n for n, _ in _SUM.findall(trigger["metadata"]["query"])}
        server = _WAITING.get(name) or _RUNNING.get(name)
        assert server is not None, f"{where}: {name} is no serving metric gpufleet knows"
        assert serving.SERVERS[server].image.split(":")[0] in _images(target), (where, name, _images(target))


@pytest.mark.parametrize("where", sorted(SCALERS))
def test_busy_replicas_stay_when_the_queue_empties(where: str) -> None:
    """Every replica's batch above the per-replica threshold, nothing waiting: no replica goes, however many."""
    scaler = SCALERS[where]
    full = float(_batch(where, scaler)["metadata"]["threshold"]) * 1.25
    for current in range(max(1, scaler["spec"].get("minReplicaCount", 0)), scaler["spec"]["maxReplicaCount"] + 1):
        assert desired(scaler, current, _served(scaler, current, waiting=0, running=full)) >= current, current


@pytest.mark.parametrize("where", sorted(SCALERS))
def test_a_long_queue_asks_for_every_replica_it_may(where: str) -> None:
    scaler = SCALERS[where]
    top = scaler["spec"]["maxReplicaCount"]
    assert desired(scaler, 1, _served(scaler, 1, waiting=8 * top, running=0)) == top
    # and full batches with nothing waiting grow it too: 2 replicas at 1.5 x the threshold each ask for 3
    over = float(_batch(where, scaler)["metadata"]["threshold"]) * 1.5
    assert desired(scaler, 2, _served(scaler, 2, waiting=0, running=over)) == min(top, 3)


@pytest.mark.parametrize("where", sorted(SCALERS))
def test_an_idle_service_scales_to_its_minimum(where: str) -> None:
    scaler = SCALERS[where]
    assert desired(scaler, 4, _served(scaler, 4, waiting=0, running=0)) == scaler["spec"].get("minReplicaCount", 0)
