"""The CRDs' own CEL rules (x-kubernetes-validations), evaluated on every Kueue object the admission stage
renders. The schema test of the golden trees leaves CEL out; these are the rules the API server would apply
on create (rules that compare with oldSelf only apply on update and are skipped here)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpufleet.plan.manifests import kueue
from gpufleet.plan.parts import BuildContext
from gpufleet.plan.stages import admission as stage
from gpufleet.spec.fleet import Fleet
from tests import fastyaml
from tests.upstream import BEYOND_SHARED_CRDS, crd_version, require_shared, upstream_file

celpy = pytest.importorskip("celpy", reason="cel-python (test extra) evaluates CEL")

ROOT = Path(__file__).resolve().parents[2]
CASES = [ROOT / "fleet.yaml", *sorted((ROOT / "tests" / "golden" / "cases").glob("*/fleet.yaml"))]


@functools.cache  # the CRD files are parsed once per kind, not once per object
def _crd_schema(kind: str) -> dict[str, Any]:
    for path in sorted((require_shared() / "crds").glob("kueue.x-k8s.io_*.yaml")):
        crd = fastyaml.load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
            return dict(version["schema"]["openAPIV3Schema"])
    if ("kueue.x-k8s.io", kind) in BEYOND_SHARED_CRDS:  # the MultiKueue manager's kinds, from the cache
        upstream_file(BEYOND_SHARED_CRDS[("kueue.x-k8s.io", kind)])  # skips where the cache lacks it
        found = crd_version(kueue.API, kind)
        assert found is not None, kind
        return dict(found["schema"]["openAPIV3Schema"])
    raise AssertionError(f"no CRD for {kind}")


def _rules(schema: dict[str, Any], node: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(path, rule, node) for every CEL rule of the schema that applies to a node present in the object."""
    for validation in schema.get("x-kubernetes-validations", []):
        yield path, validation["rule"], node
    if isinstance(node, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in node:
                yield from _rules(sub, node[key], f"{path}.{key}")
    if isinstance(node, list) and "items" in schema:
        for i, item in enumerate(node):
            yield from _rules(schema["items"], item, f"{path}[{i}]")


@functools.cache  # compiling a rule (parsing CEL) costs far more than evaluating it; every case shares the rules
def _program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _evaluate(rule: str, node: Any) -> bool:
    return bool(_program(rule).evaluate({"self": celpy.json_to_cel(node)}))


def _kueue_objects(fleet: Fleet) -> list[dict[str, Any]]:
    content = stage.build(BuildContext(fleet=fleet, environment="prod", through="cost"))
    return [
        r.args["object"]
        for r in content.resources
        if "object" in r.args and r.args["object"]["apiVersion"] == kueue.API
    ]


def _fleets() -> Iterator[tuple[str, Fleet]]:
    from gpufleet.rules.pipeline import load_fleet

    for spec in CASES:
        for env, fleet in load_fleet(str(spec)).environments.items():
            yield f"{spec.parent.name}/{env}", fleet


@pytest.mark.parametrize(("case", "fleet"), list(_fleets()), ids=lambda v: v if isinstance(v, str) else "")
def test_crd_cel_rules_hold(case: str, fleet: Fleet) -> None:
    checked = 0
    for obj in _kueue_objects(fleet):
        schema = _crd_schema(obj["kind"])
        for path, rule, node in _rules(schema, obj):
            if "oldSelf" in rule:
                continue
            assert _evaluate(rule, node), f"{obj['kind']}/{obj['metadata']['name']}{path}: {rule}"
            checked += 1
    if fleet.teams:
        assert checked > 0


def test_the_rules_do_reject_a_limit_without_a_cohort() -> None:
    """The check above can fail: a ClusterQueue with a borrowingLimit and no cohort breaks the CRD's rule."""
    schema = _crd_schema("ClusterQueue")
    bad = {
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "a", "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}]}
                    ],
                }
            ]
        }
    }
    failed = [rule for _, rule, node in _rules(schema, bad) if "oldSelf" not in rule and not _evaluate(rule, node)]
    assert any("borrowingLimit must be nil" in r or "borrowingLimit" in r for r in failed)
