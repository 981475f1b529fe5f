"""The spec's closed sets are Literals (or StrEnums) equal to the schema's enums, so mypy --strict checks every
comparison against the values a spec can actually hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from gpufleet.facts import stages
from gpufleet.spec import fleet as spec

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "fleet.schema.json").read_text())

CLOSED_SETS: list[tuple[Any, tuple[str, ...]]] = [
    (spec.TaintEffect, ("$defs", "taint", "effect")),
    (spec.WarmPoolState, ("nodeGroups", "warmPool", "state")),
    (spec.TopologyPolicy, ("nodeGroups", "topology", "policy")),
    (spec.TopologyScope, ("nodeGroups", "topology", "scope")),
    (spec.Placement, ("nodeGroups", "topology", "placement")),
    (spec.UpdateStrategy, ("nodeGroups", "update", "strategy")),
    (spec.AmiType, ("nodeGroups", "ami", "type")),
    (spec.LocalStorage, ("nodeGroups", "localStorage")),
    (spec.QueueingStrategy, ("admission", "queueingStrategy")),
    (spec.WithinClusterQueue, ("admission", "preemption", "withinClusterQueue")),
    (spec.ReclaimWithinCohort, ("admission", "preemption", "reclaimWithinCohort")),
    (spec.BorrowWithinCohort, ("admission", "preemption", "borrowWithinCohort")),
    (spec.ClusterMode, ("cluster", "mode")),
    (spec.EndpointAccess, ("cluster", "endpointAccess")),
    (spec.AutoscalerChoice, ("cluster", "autoscaler")),
    (spec.DriverSource, ("versions", "driver", "source")),
    (spec.Pinning, ("versions", "pinning")),
    (spec.PrometheusChoice, ("telemetry", "prometheus")),
    (spec.AutoRepair, ("health", "autoRepair")),
    (spec.Remediation, ("health", "remediation")),
    (spec.LinkType, ("network", "rdma", "linkType")),
    (spec.Provisioner, ("nodeGroups", "provisioner")),
    (spec.Devices, ("nodeGroups", "devices")),
    (stages.StageName, ("environments", "*", "rollout", "through")),
    (spec.WorkloadClass, ("nodeGroups", "workloadClass")),
    (spec.Fabric, ("nodeGroups", "fabric")),
    (spec.SharingStrategy, ("nodeGroups", "sharing", "strategy")),
    (spec.CapacityType, ("nodeGroups", "capacity", "type")),
]


def _node(path: tuple[str, ...]) -> Any:
    node: Any = SCHEMA
    for step in path:
        while True:
            if "$ref" in node:
                node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
            elif node.get("type") == "array":
                node = node["items"]
            else:
                break
        if step == "$defs":
            node = SCHEMA["$defs"]
        elif step == "*":
            node = node["additionalProperties"]
        else:
            node = node.get("properties", node)[step]
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


@pytest.mark.parametrize(("closed", "path"), CLOSED_SETS, ids=[".".join(p) for _, p in CLOSED_SETS])
def test_closed_set_is_the_schema_enum(closed: Any, path: tuple[str, ...]) -> None:
    values = tuple(m.value for m in closed) if isinstance(closed, type) else get_args(closed)
    assert values == tuple(_node(path)["enum"])
