"""Validation of what we render against the pinned upstream definitions in ../shared (CRDs, chart values).

../shared sits beside the project (CI has it too). Tests that need it skip with a clear reason where absent. A few
upstream files are not in ../shared (BEYOND_SHARED): each of those is looked up on its own, in $GPUFLEET_UPSTREAM_DIR
or ../shared first, then in the cache tools/fetch_upstream.py fills (upstream_file), and what needs one skips with
the same reason where neither has it.
CRD schemas are applied *closed*: an object schema with properties and no additionalProperties or
x-kubernetes-preserve-unknown-fields rejects unknown keys, because the API server would silently prune them
(a plausible-looking key that upstream ignores is a bug that hides until production).
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import pytest

from tests import fastyaml

# Where the upstream files are: $GPUFLEET_UPSTREAM_DIR, else ../shared beside the project, else the cache that
# tools/fetch_upstream.py fills by default.
BESIDE = Path(__file__).resolve().parents[1].parent / "shared"
CACHE = Path("~/.cache/gpufleet/upstream").expanduser()
SHARED = Path(os.environ["GPUFLEET_UPSTREAM_DIR"]) if os.environ.get("GPUFLEET_UPSTREAM_DIR") else BESIDE
if not os.environ.get("GPUFLEET_UPSTREAM_DIR") and not (BESIDE / "crds").is_dir() and (CACHE / "crds").is_dir():
    SHARED = CACHE
KUBERNETES_VERSION = "1.33"
DRA_KUBERNETES_VERSION = "1.34"
# The start of every skip for want of them: tests/conftest.py counts these and names the command once.
MISSING = "upstream definitions not found"
FETCH_COMMAND = "python tools/fetch_upstream.py"

# KEDA's CRDs are templates of its chart (kedacore/charts keda/templates/crds/, installed by crds.install), so
# ../shared has none (../shared/charts/SOURCES.md). The cache keeps the ScaledObject template's `spec:` as chart
# 2.20.2 renders it (tools/upstream_files.json "lines": the Helm `if` and the templated metadata left out). The
# chart's copy, not kedacore/keda config/crd/bases/keda.sh_scaledobjects.yaml at v2.20.2, because it is what the
# cluster gets, and it is stricter: the HPA behavior's stabilizationWindowSeconds is bounded to 0..3600 there only.
KEDA_SCALEDOBJECT_CRD = "charts/keda/2.20.2/templates/crds/crd-scaledobjects.yaml"
# Karpenter's NodeOverlay (karpenter.sh/v1alpha1), which ../shared/crds leaves out beside the NodePool and NodeClaim:
# aws/karpenter-provider-aws pkg/apis/crds/karpenter.sh_nodeoverlays.yaml @ v1.14.1, the file its chart's crds/ has.
KARPENTER_NODEOVERLAY_CRD = "crds/karpenter.sh_nodeoverlays.yaml"
# The MultiKueue manager's kinds, which ../shared/crds leaves out beside Kueue's other six
# (kubernetes-sigs/kueue config/components/crd/bases/ @ v0.19.2, the release of the others).
MULTIKUEUE_CRDS = {
    kind: f"crds/kueue.x-k8s.io_{plural}.yaml"
    for kind, plural in (
        ("AdmissionCheck", "admissionchecks"),
        ("MultiKueueConfig", "multikueueconfigs"),
        ("MultiKueueCluster", "multikueueclusters"),
    )
}
# The CRDs that are not in ../shared/crds, by (group, kind), at their path in the cache.
BEYOND_SHARED_CRDS: Mapping[tuple[str, str], str] = {
    ("keda.sh", "ScaledObject"): KEDA_SCALEDOBJECT_CRD,
    ("karpenter.sh", "NodeOverlay"): KARPENTER_NODEOVERLAY_CRD,
    **{("kueue.x-k8s.io", kind): path for kind, path in MULTIKUEUE_CRDS.items()},
}
# The charts ../shared does not hold yet: the DRA drivers' (devices DRA, issue 43), kubernetes-sigs/
# dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu @ v0.4.1 and aws/eks-charts stable/aws-dranet (1.0.0);
# the karpenter-crd chart gpufleet installs Karpenter's CRDs with (aws/karpenter-provider-aws charts/karpenter-crd @
# v1.14.1; ../shared/charts has the controller chart only).
BEYOND_SHARED_CHARTS = tuple(
    f"charts/{chart}/{version}/{name}"
    for chart, version in (("aws-dranet", "1.0.0"), ("dra-driver-nvidia-gpu", "0.4.1"), ("karpenter-crd", "1.14.1"))
    for name in ("Chart.yaml", "values.yaml")
)
# The script Kueue's setup_multikueue.md runs on a worker (site/static/examples/multikueue/
# create-multikueue-kubeconfig.sh @ v0.19.2): the ClusterRole MultiKueue needs there.
MULTIKUEUE_KUBECONFIG_SCRIPT = "examples/kueue/create-multikueue-kubeconfig.sh"
# Every upstream file of tools/upstream_files.json that ../shared does not hold.
BEYOND_SHARED = tuple(BEYOND_SHARED_CRDS.values()) + BEYOND_SHARED_CHARTS + (MULTIKUEUE_KUBECONFIG_SCRIPT,)


def require_shared() -> Path:
    if not (SHARED / "crds").is_dir():
        pytest.skip(f"{MISSING} at {SHARED} (../shared beside the project, or GPUFLEET_UPSTREAM_DIR)")
    return SHARED


def find_upstream_file(path: str) -> Path | None:
    """An upstream file by its path in the cache (tools/upstream_files.json): in $GPUFLEET_UPSTREAM_DIR or ../shared
    where it is there, else in the cache; None where neither has it."""
    for root in dict.fromkeys((SHARED, CACHE)):
        if (root / path).is_file():
            return root / path
    return None


def upstream_file(path: str) -> Path:
    """find_upstream_file, skipping the test (with the reason tests/conftest.py counts) where it is not there."""
    found = find_upstream_file(path)
    if found is None:
        where = SHARED if SHARED == CACHE else f"{SHARED} or {CACHE}"
        pytest.skip(f"{MISSING}: {path} is not in {where} (run {FETCH_COMMAND})")
    return found


def _pattern(pattern: str) -> str:
    """A CRD pattern (Go RE2, where a flag group may follow `^`: AdmissionCheck's kind `^(?i)[a-z]...`) as Python's
    re reads it, which wants global flags first."""
    return "(?i)^" + pattern[len("^(?i)") :] if pattern.startswith("^(?i)") else pattern


def _close(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _close(v) for k, v in schema.items() if not k.startswith("x-kubernetes-validations")}
        if isinstance(out.get("pattern"), str):
            out["pattern"] = _pattern(out["pattern"])
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_close(v) for v in schema]
    return schema


def _crd_specs() -> Iterator[Mapping[str, Any]]:
    """The spec of every pinned CRD: those of ../shared/crds, then those beyond it that are here."""
    for path in sorted((require_shared() / "crds").glob("*.yaml")):
        for doc in fastyaml.load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                yield doc["spec"]
    for name in BEYOND_SHARED_CRDS.values():
        found = find_upstream_file(name)
        if found is not None:
            yield fastyaml.load(found.read_text())["spec"]


@functools.cache
def _crd_versions() -> Mapping[tuple[str, str, str], Mapping[str, Any]]:
    """Each pinned CRD version (its schema, served, subresources) by (group, version, kind)."""
    return {
        (spec["group"], version["name"], spec["names"]["kind"]): version
        for spec in _crd_specs()
        for version in spec["versions"]
    }


def crd_version(api_version: str, kind: str) -> Mapping[str, Any] | None:
    """The pinned CRD's entry for this apiVersion and kind (spec.versions[]), None where no pinned CRD has it."""
    group, _, version = api_version.rpartition("/")
    return _crd_versions().get((group, version, kind))


@functools.cache
def _crd_schemas() -> Mapping[tuple[str, str, str], Any]:
    schemas = {}
    for (group, name, kind), version in _crd_versions().items():
        schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
        # metadata is validated by the API server, not the CRD schema
        schema.setdefault("properties", {})["metadata"] = {"type": "object"}
        if kind == "NodeConfig":
            # nodeadm reads spec.kubelet.config as Go RawExtensions (any JSON value, e.g.
            # "cpuManagerPolicy: static"); controller-gen renders them as objects. NodeConfig is parsed
            # by nodeadm, never by an API server, so its values are free-form here.
            kubelet = schema["properties"]["spec"]["properties"]["kubelet"]["properties"]["config"]
            kubelet["additionalProperties"] = {}
        schemas[(group, name, kind)] = _close(schema)
    return schemas


def crd_known(api_version: str, kind: str) -> bool:
    group, _, version = api_version.rpartition("/")
    return (group, version, kind) in _crd_schemas()


@functools.cache
def _crd_validator(group: str, version: str, kind: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(_crd_schemas()[(group, version, kind)])


# kubernetes_validate.validate reads and parses its schema files on every call: the kind's and the 2 MB
# _definitions.json, 23 ms an object (8 s over the golden trees). They are the package's own data, unchanged during a
# run, and jsonschema never modifies a schema, so each file is parsed once per session; validate itself (the version
# choice, the strict schemas, the registry and the error it raises) runs as it is.
kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def validate_object(obj: Mapping[str, Any]) -> list[str]:
    """Problems with one Kubernetes object: CRD schema for custom kinds, kubernetes-validate for core ones."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    group, _, version = api_version.rpartition("/")
    if crd_known(api_version, kind):
        validator = _crd_validator(group, version, kind)
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]
    if (group, kind) in BEYOND_SHARED_CRDS:
        upstream_file(BEYOND_SHARED_CRDS[(group, kind)])  # skips where the CRD is not here
    if "." in group and not group.endswith(".k8s.io") or group.endswith(".x-k8s.io"):
        return [f"no CRD for {api_version} {kind} in ../shared/crds"]
    # resource.k8s.io/v1 (the DRA claim templates) is served from Kubernetes 1.34, which a DRA group needs
    # (gpufleet.rules.devices): its objects are held to that version's schemas.
    version = DRA_KUBERNETES_VERSION if group == "resource.k8s.io" else KUBERNETES_VERSION
    try:
        kubernetes_validate.validate(dict(obj), version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'/'.join(map(str, exc.path))}: {exc.message}"]
    return []


def chart_dir(chart: str, version: str) -> Path:
    """../shared/charts/<chart>/<version>; ../shared names the JobSet, Trainer and LWS charts by their release tag
    (jobset/v0.12.0 holds chart version 0.12.0, ../shared/charts/SOURCES.md), so `v<version>` is the fallback."""
    root = require_shared() / "charts" / chart
    if f"charts/{chart}/{version}/values.yaml" in BEYOND_SHARED and not (root / version).is_dir():
        return upstream_file(f"charts/{chart}/{version}/values.yaml").parent  # skips where the cache lacks it
    return root / version if (root / version).is_dir() or not (root / f"v{version}").is_dir() else root / f"v{version}"


@functools.cache
def chart_values(chart: str, version: str) -> Any:
    """The chart's default values, with each vendored subchart's own defaults under its dependency name (or alias),
    as Helm merges them: the parent's values for a subchart override the subchart's values.yaml."""
    root = chart_dir(chart, version)
    if not (root / "values.yaml").exists():
        pytest.fail(f"no chart values for {chart} {version} in ../shared/charts: add the version or pin a known one")
    return _with_subcharts(root)


def _with_subcharts(root: Path) -> Any:
    values = fastyaml.load((root / "values.yaml").read_text()) or {}
    chart = fastyaml.load((root / "Chart.yaml").read_text()) if (root / "Chart.yaml").exists() else {}
    for dependency in chart.get("dependencies") or []:
        sub = root / "charts" / dependency["name"]
        if (sub / "values.yaml").exists():
            key = dependency.get("alias") or dependency["name"]
            values[key] = _merged(_with_subcharts(sub), values.get(key))
    return values


def _merged(base: Any, override: Any) -> Any:
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override if override is not None else base
    return {**base, **{k: _merged(base.get(k), v) for k, v in override.items()}}


def unknown_value_keys(values: Any, defaults: Any, path: str = "", free_form: Iterable[str] = ()) -> Iterator[str]:
    """Key paths in `values` that the chart's values.yaml does not define.

    Below a key whose default is an empty map, a list, a scalar or null, anything goes (free-form by the chart's
    own design: nodeSelector, env lists, config data). `free_form` names further paths to treat that way."""
    free = set(free_form)
    if not isinstance(values, dict) or path in free:
        return
    if not isinstance(defaults, dict) or not defaults:
        return
    for key, value in values.items():
        child = f"{path}.{key}" if path else key
        if key not in defaults:
            yield child
        else:
            yield from unknown_value_keys(value, defaults[key], child, free)
