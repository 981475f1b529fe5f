"""The schemas gpufleet checks Kubernetes objects against (gpufleet/data/kube-schemas, issue 47 items 2 and 4): what
the fetch tool derives from the pinned CRDs and kubernetes-validate's definitions, naming each source by its sha256,
and covering every kind explain models at a version a fleet serves and every kind synth writes into a tree."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from gpufleet.facts.versions import KUBERNETES_VERSIONS
from gpufleet.simulate import api_server
from gpufleet.simulate.workload import KINDS
from gpufleet.spec import object_shapes
from tests.upstream import require_shared
from tools import fetch_upstream, kube_schemas

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "gpufleet" / "data" / "kube-schemas"
TREES = ROOT / "tests" / "golden" / "trees"
# Kinds synth writes that no shipped schema knows, with the reason: Karpenter's NodeOverlay CRD is beyond ../shared
# (tests/upstream.py BEYOND_SHARED_CRDS), and neither check nor diff reads anything of a NodeOverlay but its metadata;
# the MultiKueue manager's AdmissionCheck, MultiKueueConfig and MultiKueueCluster likewise (their CRDs beyond ../shared
# too; the golden trees' objects are held to them by tests/golden/test_tree_schemas.py).
UNCHECKED = {
    "karpenter.sh/v1alpha1 NodeOverlay",
    "kueue.x-k8s.io/v1beta2 AdmissionCheck",
    "kueue.x-k8s.io/v1beta2 MultiKueueCluster",
    "kueue.x-k8s.io/v1beta2 MultiKueueConfig",
}
NEWEST = KUBERNETES_VERSIONS[-1]  # resource.k8s.io/v1 (DRA) is served from 1.34


def test_the_shipped_schemas_are_what_the_fetch_tool_derives() -> None:
    texts, problems = fetch_upstream.derived_kube_schemas(require_shared())
    assert problems == []
    assert {p.name for p in SHIPPED.iterdir()} == set(texts)
    assert {name: (SHIPPED / name).read_text(encoding="utf-8") for name in texts} == texts, (
        f"run `{kube_schemas.DERIVED_BY}` and review the diff"
    )


def test_each_file_names_its_sources_with_their_sha256() -> None:
    listed = {e["path"]: e for e in fetch_upstream.entries()}
    crds = json.loads((SHIPPED / object_shapes.CRDS).read_text(encoding="utf-8"))
    assert crds["derivedBy"] == kube_schemas.DERIVED_BY
    assert [s["path"] for s in crds["sources"]] == list(kube_schemas.CRD_VERSIONS)
    for source in crds["sources"]:
        entry = listed[source["path"]]
        assert source == {"path": entry["path"], "url": entry["url"], "sha256": entry["sha256"]}
    for minor in object_shapes.MINORS:
        document = json.loads((SHIPPED / f"kubernetes-{minor}.json").read_text(encoding="utf-8"))
        (source,) = document["sources"]
        assert source["package"] == kube_schemas.VALIDATE_PACKAGE
        data = kube_schemas.SCHEMAS / source["path"].removeprefix("kubernetes_validate/kubernetes-json-schema/")
        assert hashlib.sha256(data.read_bytes()).hexdigest() == source["sha256"]


def test_the_validate_package_is_the_test_extras_pin() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"{kube_schemas.VALIDATE_PACKAGE}"' in pyproject


def test_every_supported_kubernetes_version_has_built_in_schemas() -> None:
    assert list(object_shapes.MINORS) == kube_schemas.minors()
    assert {version: object_shapes.minor_schemas(version) for version in KUBERNETES_VERSIONS} == {
        version: version for version in KUBERNETES_VERSIONS
    }
    # a minor with no file of its own (one kubernetes-validate does not ship yet) takes the newest older one's
    assert object_shapes.minor_schemas("1.36") == object_shapes.MINORS[-1]
    assert object_shapes.minor_schemas("1.31") == object_shapes.MINORS[0]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_kind_explain_models_has_a_schema_where_a_fleet_serves_it(version: str) -> None:
    served = {**api_server.BUILT_IN, **{k: v for kinds in api_server.CHART_KINDS.values() for k, v in kinds.items()}}
    for kind in KINDS:
        for api_version in served.get(kind, ()):
            assert object_shapes.known(api_version, kind, version), (api_version, kind)


def test_every_kind_synth_writes_has_a_schema_and_every_golden_object_conforms() -> None:
    kinds = set()
    for path in sorted(TREES.glob("*/*/*/k8s/*.yaml")):
        obj = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        kinds.add(f"{obj['apiVersion']} {obj['kind']}")
        assert object_shapes.issues(obj, NEWEST, {}) == [], path
    assert {k for k in kinds if not object_shapes.known(*k.split(" "), NEWEST)} == UNCHECKED


def test_a_null_is_read_as_the_decoders_read_it() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": None},
        "spec": {"tolerations": [None], "containers": [{"name": "c", "args": [None], "ports": None}]},
    }
    assert object_shapes.conforms(pod, "1.35")
    assert object_shapes.as_read(pod, "1.35") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"tolerations": [{}], "containers": [{"name": "c", "args": [""]}]},
    }
