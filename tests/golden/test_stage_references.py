"""No stage deploys an object that references a named object only a later stage creates (every golden tree).

A reference to an object that does not exist yet is not harmless: the GPU Operator mounts `devicePlugin.config.name`,
`migManager.config.name` and `dcgmExporter.config.name` as non-optional ConfigMap volumes (NVIDIA/gpu-operator
`controllers/object_controls.go` @ v26.7.0), so the operand pods wait in ContainerCreating, and nodes advertise no
GPUs, until the later stage lands; a pod's configMap/secret volume, env source or service account behaves the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpufleet.facts import stages
from tests.trees import resources

TREES = Path(__file__).resolve().parent / "trees"
TREE_DIRS = sorted(p.parent for p in TREES.glob("*/*/plan.json"))
# Pod-spec keys whose value names an object: key -> (kind, field holding the name).
POD_REFERENCES = {
    "configMap": ("ConfigMap", "name"),
    "configMapRef": ("ConfigMap", "name"),
    "configMapKeyRef": ("ConfigMap", "name"),
    "secret": ("Secret", "secretName"),
    "secretRef": ("Secret", "name"),
    "secretKeyRef": ("Secret", "name"),
}
# GPU Operator values that name a ConfigMap in the release's namespace.
OPERATOR_CONFIGS = ("devicePlugin", "migManager", "dcgmExporter")


def _walk(node: Any, namespace: str | None) -> Iterator[tuple[str, str | None, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in POD_REFERENCES and isinstance(value, dict):
                kind, field = POD_REFERENCES[key]
                if isinstance(value.get(field), str):
                    yield kind, namespace, value[field]
            if key == "serviceAccountName" and isinstance(value, str):
                yield "ServiceAccount", namespace, value
            yield from _walk(value, namespace)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, namespace)


def references(resource: dict[str, Any]) -> Iterator[tuple[str, str | None, str]]:
    """(kind, namespace, name) of every object a resource names."""
    inputs = resource["inputs"]
    if resource["type"] == "kubernetes:helm.sh/v3:Release":
        values = inputs.get("values") or {}
        if inputs.get("chart") == "gpu-operator":
            for operand in OPERATOR_CONFIGS:
                name = ((values.get(operand) or {}).get("config") or {}).get("name")
                if name:
                    yield "ConfigMap", inputs["namespace"], name
        return
    if resource["type"].startswith("kubernetes:"):
        yield from _walk(inputs.get("spec"), (inputs.get("metadata") or {}).get("namespace"))


def created(inventory: list[dict[str, Any]]) -> dict[tuple[str, str | None, str], int]:
    """(kind, namespace, name) -> the index of the stage that creates it, for every Kubernetes object."""
    out = {}
    for r in inventory:
        meta = r["inputs"].get("metadata") or {}
        if r["type"].startswith("kubernetes:") and "name" in meta:
            out[(r["inputs"].get("kind", ""), meta.get("namespace"), meta["name"])] = stages.index(r["stage"])
    return out


def later_references(inventory: list[dict[str, Any]]) -> list[str]:
    made = created(inventory)
    found = []
    for r in inventory:
        if r["type"].startswith("gpufleet:stage"):
            continue
        here = stages.index(r["stage"])
        for ref in references(r):
            there = made.get(ref)
            if there is not None and there > here:
                found.append(
                    f"{r['id']} ({r['stage']}) references {ref[0]} {ref[1]}/{ref[2]} of stage"
                    f" {stages.STAGES[there - 1]}"
                )
    return found


@pytest.mark.parametrize("tree", TREE_DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_stage_references_an_object_of_a_later_stage(tree: Path) -> None:
    assert later_references(resources(tree)) == []


def test_the_check_sees_a_late_config_map() -> None:
    operator = {
        "id": "helm-gpu-operator",
        "stage": "foundation",
        "type": "kubernetes:helm.sh/v3:Release",
        "inputs": {
            "chart": "gpu-operator",
            "namespace": "gpu-operator",
            "values": {"devicePlugin": {"config": {"name": "cm"}}},
        },
    }
    pod = {
        "id": "pod",
        "stage": "foundation",
        "type": "kubernetes:core/v1:Pod",
        "inputs": {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "gpu-operator"},
            "spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
        },
    }
    cm = {
        "id": "cm",
        "stage": "sharing",
        "type": "kubernetes:core/v1:ConfigMap",
        "inputs": {"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "gpu-operator"}},
    }
    secret = {
        "id": "s",
        "stage": "network",
        "type": "kubernetes:core/v1:Secret",
        "inputs": {"kind": "Secret", "metadata": {"name": "s", "namespace": "gpu-operator"}},
    }
    assert later_references([operator, pod, cm, secret]) == [
        "helm-gpu-operator (foundation) references ConfigMap gpu-operator/cm of stage sharing",
        "pod (foundation) references Secret gpu-operator/s of stage network",
    ]
