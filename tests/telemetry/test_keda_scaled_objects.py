"""Every KEDA ScaledObject gpufleet renders (none today: the telemetry stage installs KEDA, the teams write their own)
or documents (docs/examples/*.yaml, the YAML blocks of docs/ and README) against what KEDA 2.20.2 accepts and reads:

- the ScaledObject CRD of chart keda 2.20.2 (the chart gpufleet installs, with crds.install), closed: an unknown or
  misspelt field is refused, where the API server would prune it silently (tests/upstream.py);
- the CRD's CEL rule the schema check cannot run (minReplicaCount <= maxReplicaCount);
- each trigger's metadata, a map[string]string the CRD cannot check, against the keys the prometheus scaler reads:
  KEDA ignores any other key (its check for unexpected keys is off by default), so a misspelt one is lost;
- the scale target serves the /scale subresource KEDA scales it through.

The CRD is not in ../shared (KEDA's CRDs are templates of its chart): these tests read it from the cache
`python tools/fetch_upstream.py` fills and skip, with the suite's one summary line, where it is not there."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests import fastyaml
from tests.documented import documented
from tests.upstream import KEDA_SCALEDOBJECT_CRD, crd_version, require_shared, upstream_file, validate_object

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TREES = ROOT / "tests" / "golden" / "trees"

# kedacore/keda v2.20.2 (68a5b5028f35b22d50597c69819ab32c4e92f21a) pkg/scalers/prometheus_scaler.go, the struct
# prometheusMetadata: each field's `keda:"name=..., order=triggerMetadata..."` tag is a key the scaler reads from the
# trigger's metadata; a field without `optional` or `default=` is required (pkg/scalers/scalersconfig/
# typed_config.go: "missing required parameter"). True: required.
PROMETHEUS_METADATA: Mapping[str, bool] = {
    "serverAddress": True,
    "query": True,
    "queryParameters": False,
    "threshold": True,
    "activationThreshold": False,
    "namespace": False,
    "customHeaders": False,
    "ignoreNullValues": False,  # default=true
    "unsafeSsl": False,
    "awsRegion": False,
    "timeout": False,
    "identityOwner": False,
    # Its PrometheusAuth is an authentication.Config (pkg/scalers/authentication/authentication_types.go): of its
    # keys only these are read from the trigger metadata (order=triggerMetadata;authParams), the rest from a
    # TriggerAuthentication. No prometheus key is read from the environment, so no `<key>FromEnv` is read either.
    "authModes": False,
    "authMode": False,
    "apiKey": False,
    "method": False,
    "keyParamName": False,
}
# threshold and activationThreshold are float64 fields: a decimal number, as a string (the CRD's metadata values are
# strings; an unquoted YAML number is refused by the CRD check).
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# The CRD's trigger metricType (KEDA's MetricTargetType: "Value", "AverageValue" or "Utilization"; its description,
# no enum in the schema).
METRIC_TYPES = ("AverageValue", "Value", "Utilization")
# Built-in kinds whose API serves /scale (kubernetes/kubernetes pkg/registry/apps/rest/storage_apps.go:
# deployments/scale, statefulsets/scale, replicasets/scale; pkg/registry/core/rest/storage_core.go:
# replicationcontrollers/scale). KEDA reads every target through its /scale (kedacore/keda v2.20.2
# controllers/keda/scaledobject_controller.go checkTargetResourceIsScalable: ScaleClient.Scales(...).Get, else
# "Target resource doesn't expose /scale subresource"); a custom kind needs its CRD's subresources.scale.
BUILT_IN_SCALABLE = {("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet")}
BUILT_IN_SCALABLE |= {("v1", "ReplicationController")}


def _scaled_objects() -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, object) of every ScaledObject in the golden trees and the documentation (tests/documented.py: the
    examples and the docs' YAML blocks)."""
    for path in sorted(TREES.glob("*/*/*/k8s/*.yaml")):
        text = path.read_text()
        if "ScaledObject" in text:
            obj = fastyaml.load(text)
            if obj.get("kind") == "ScaledObject":
                yield str(path.relative_to(ROOT)), obj
    for where, obj in documented():
        if obj["kind"] == "ScaledObject":
            yield where, obj


SCALED_OBJECTS = dict(_scaled_objects())


def _crd_problems(obj: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse or prune: the pinned CRD's schema, closed, and its CEL rule on spec."""
    upstream_file(KEDA_SCALEDOBJECT_CRD)
    problems = validate_object(obj)
    spec = obj["spec"]
    # The CRD's x-kubernetes-validations on spec (tests/upstream.py applies the schema without its CEL rules).
    if not problems and "minReplicaCount" in spec and spec["minReplicaCount"] > spec.get("maxReplicaCount", 100):
        problems.append("spec: minReplicaCount must be less than or equal to maxReplicaCount")
    return problems


def _triggers_problems(spec: Mapping[str, Any]) -> list[str]:
    return [f"spec/triggers/{i}: {p}" for i, trigger in enumerate(spec["triggers"]) for p in _trigger_problems(trigger)]


def _trigger_problems(trigger: Mapping[str, Any]) -> list[str]:
    if trigger["type"] != "prometheus":
        return [f"trigger type {trigger['type']!r}: only KEDA's prometheus scaler's metadata is known here"]
    metadata = trigger["metadata"]
    problems = [
        f"metadata key {k!r}: the prometheus scaler reads no such key" for k in metadata if k not in PROMETHEUS_METADATA
    ]
    problems += [
        f"metadata {k!r} is required" for k, required in PROMETHEUS_METADATA.items() if required and k not in metadata
    ]
    for key in ("threshold", "activationThreshold"):
        if key in metadata and not NUMBER.fullmatch(metadata[key]):
            problems.append(f"metadata {key} {metadata[key]!r} is not a number")
    if trigger.get("metricType", "AverageValue") not in METRIC_TYPES:
        problems.append(f"metricType {trigger['metricType']!r} is not one of {', '.join(METRIC_TYPES)}")
    return problems


def _scale_target_problems(ref: Mapping[str, Any]) -> list[str]:
    # KEDA's defaults where they are omitted (kedacore/keda v2.20.2 apis/keda/v1alpha1/gvkr.go ParseGVKR)
    api_version, kind = ref.get("apiVersion", "apps/v1"), ref.get("kind", "Deployment")
    if (api_version, kind) in BUILT_IN_SCALABLE:
        return []
    group = api_version.rpartition("/")[0]
    if "." not in group or group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"):  # a built-in group
        return [f"{api_version} {kind} serves no /scale subresource"]
    require_shared()
    version = crd_version(api_version, kind)
    if version is None or not version["served"]:
        return [f"no pinned CRD serves {api_version} {kind}"]
    if "scale" not in (version.get("subresources") or {}):
        return [f"the CRD of {api_version} {kind} serves no /scale subresource"]
    return []


def test_the_documented_scaled_objects_are_all_found() -> None:
    """The collections below are not empty by accident: the two examples and docs/inference.md's recipe."""
    found = {where.split("#")[0].split(":")[0] for where in SCALED_OBJECTS}
    assert found >= {"docs/examples/vllm.yaml", "docs/examples/lws-inference.yaml", "docs/inference.md"}


@pytest.mark.parametrize("where", sorted(SCALED_OBJECTS))
def test_scaled_object_is_valid_against_the_pinned_crd(where: str) -> None:
    assert _crd_problems(SCALED_OBJECTS[where]) == []


@pytest.mark.parametrize("where", sorted(SCALED_OBJECTS))
def test_scaled_object_triggers_are_what_the_prometheus_scaler_reads(where: str) -> None:
    assert _triggers_problems(SCALED_OBJECTS[where]["spec"]) == []


@pytest.mark.parametrize("where", sorted(SCALED_OBJECTS))
def test_scaled_object_targets_a_kind_with_the_scale_subresource(where: str) -> None:
    ref = SCALED_OBJECTS[where]["spec"]["scaleTargetRef"]
    assert (ref["apiVersion"], ref["kind"]) in {
        ("apps/v1", "Deployment"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    }
    assert _scale_target_problems(ref) == []


def _recipe() -> dict[str, Any]:
    return copy.deepcopy(next(o for w, o in SCALED_OBJECTS.items() if w.startswith("docs/inference.md")))


def _rename(data: dict[str, Any], old: str, new: str) -> None:
    data[new] = data.pop(old)


def _behavior(obj: dict[str, Any]) -> dict[str, Any]:
    behavior: dict[str, Any] = obj["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    return behavior


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # HPA's spelling, not KEDA's: the API server would prune it and KEDA keep its default minimum.
        (
            lambda o: _rename(o["spec"], "minReplicaCount", "minReplicas"),
            "spec: Additional properties are not allowed ('minReplicas' was unexpected)",
        ),
        (
            lambda o: o["spec"]["triggers"][0].update(useCachedMetric=True),  # useCachedMetrics
            "spec/triggers/0: Additional properties are not allowed ('useCachedMetric' was unexpected)",
        ),
        (
            lambda o: o["spec"]["triggers"][0]["metadata"].update(threshold=8),
            "spec/triggers/0/metadata/threshold: 8 is not of type 'string'",
        ),
        (lambda o: o["spec"].update(triggers=[]), "spec/triggers: [] should be non-empty"),
        # Bounded in the chart's CRD (the one crds.install applies), not in kedacore/keda's config/crd/bases.
        (
            lambda o: _behavior(o)["scaleDown"].update(stabilizationWindowSeconds=7200),
            "spec/advanced/horizontalPodAutoscalerConfig/behavior/scaleDown/stabilizationWindowSeconds:"
            " 7200 is greater than the maximum of 3600",
        ),
        (
            lambda o: o["spec"].update(minReplicaCount=9),
            "spec: minReplicaCount must be less than or equal to maxReplicaCount",
        ),
    ],
    ids=["minReplicas", "useCachedMetric", "unquoted-threshold", "no-trigger", "long-window", "min-above-max"],
)
def test_the_pinned_crd_refuses(change: Any, problem: str) -> None:
    recipe = _recipe()
    assert _crd_problems(recipe) == []
    change(recipe)
    assert _crd_problems(recipe) == [problem]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # Optional, so nothing fails: KEDA takes the default activation threshold 0 without a word.
        (
            lambda o: _rename(o["spec"]["triggers"][0]["metadata"], "activationThreshold", "activationTreshold"),
            "spec/triggers/0: metadata key 'activationTreshold': the prometheus scaler reads no such key",
        ),
        (
            lambda o: o["spec"]["triggers"][1]["metadata"].pop("threshold"),
            "spec/triggers/1: metadata 'threshold' is required",
        ),
        (
            lambda o: o["spec"]["triggers"][0]["metadata"].update(threshold="8 requests"),
            "spec/triggers/0: metadata threshold '8 requests' is not a number",
        ),
        (
            lambda o: o["spec"]["triggers"][0].update(metricType="Average"),
            "spec/triggers/0: metricType 'Average' is not one of AverageValue, Value, Utilization",
        ),
        (
            lambda o: o["spec"]["triggers"][0].update(type="prometheus-scaler"),
            "spec/triggers/0: trigger type 'prometheus-scaler': only KEDA's prometheus scaler's metadata is known here",
        ),
    ],
    ids=["misspelt-key", "no-threshold", "threshold-not-a-number", "metric-type", "other-scaler"],
)
def test_the_trigger_check_refuses(change: Any, problem: str) -> None:
    recipe = _recipe()
    assert _triggers_problems(recipe["spec"]) == []
    change(recipe)
    assert _triggers_problems(recipe["spec"]) == [problem]


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            "the CRD of jobset.x-k8s.io/v1alpha2 JobSet serves no /scale subresource",
        ),
        (("batch/v1", "Job"), "batch/v1 Job serves no /scale subresource"),
        (("apps/v1", "DaemonSet"), "apps/v1 DaemonSet serves no /scale subresource"),
        (
            ("leaderworkerset.x-k8s.io/v2", "LeaderWorkerSet"),
            "no pinned CRD serves leaderworkerset.x-k8s.io/v2 LeaderWorkerSet",
        ),
    ],
    ids=["crd-without-scale", "job", "daemonset", "unknown-crd-version"],
)
def test_the_scale_target_check_refuses(target: tuple[str, str], problem: str) -> None:
    ref = {"apiVersion": target[0], "kind": target[1], "name": "llm-server"}
    assert _scale_target_problems(ref) == [problem]
    assert _scale_target_problems({"name": "llm-server"}) == []  # KEDA's default: apps/v1 Deployment
