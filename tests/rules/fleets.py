"""The fleets the rule tables of tests/rules are written on: the minimal spec changed by small patches, and what a
rule reports on one."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gpufleet.base.errors import (
    format_path,
)
from gpufleet.rules import cross_field
from gpufleet.rules.pipeline import fleet_from
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.schema_errors import schema_issues

ROOT = Path(__file__).resolve().parents[2]
MINIMAL_TEXT = (ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text()
MINIMAL: dict[str, Any] = yaml.safe_load(MINIMAL_TEXT)

Patch = Callable[[dict[str, Any]], None]


# ---------------------------------------------------------------------------------------------------------------
# Fleet fixtures: the minimal spec (one g6.xlarge group "l4" of maxSize 4, team "vision" with 4 GPUs on it,
# environment dev through admission), changed by small patches.


ODCR = "cr-0a1b2c3d4e5f60718"
ODCR_GROUP = "arn:aws:resource-groups:us-east-1:111122223333:group/training-odcrs"


def group(**fields: Any) -> Patch:
    """Set fields of node group 0 ("l4"); a None value removes the field."""

    def patch(data: dict[str, Any]) -> None:
        for key, value in fields.items():
            if value is None:
                data["nodeGroups"][0].pop(key, None)
            else:
                data["nodeGroups"][0][key] = value

    return patch


def add_group(**fields: Any) -> Patch:
    def patch(data: dict[str, Any]) -> None:
        base = {
            "workloadClass": "Batch",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
            "scaling": {"maxSize": 2},
        }
        data["nodeGroups"].append(base | fields)

    return patch


def team(**fields: Any) -> Patch:
    def patch(data: dict[str, Any]) -> None:
        data["teams"][0].update(fields)

    return patch


def quota(**fields: Any) -> Patch:
    def patch(data: dict[str, Any]) -> None:
        data["teams"][0]["quotas"][0].update(fields)

    return patch


def add_team(**fields: Any) -> Patch:
    def patch(data: dict[str, Any]) -> None:
        data["teams"].append({"quotas": [{"nodeGroup": "l4", "gpus": 1}]} | fields)

    return patch


def at(*path: str | int, value: Any) -> Patch:
    """Set one value anywhere (creating mappings on the way); None removes it."""

    def patch(data: dict[str, Any]) -> None:
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value

    return patch


PY = "python:3.13.5-slim-bookworm"
DCGM = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
DCGM_OLD = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
MULTUS = "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0-thick"
ZERO = "sha256:" + "0" * 64  # FAKE: the digest of no real image


# An Inference group with an instance-store array, the team's quota on it, and the claims (checkpoints.mountpoint).
CHECKPOINTS = {"bucket": "team-checkpoints", "modelParameters": 8_000_000_000, "meanTimeBetweenFailuresHours": 6}
SERVING: list[Patch] = [
    at("checkpoints", value=CHECKPOINTS | {"mountpoint": {}}),
    add_group(name="serve", instanceType="g6e.12xlarge", workloadClass="Inference", localStorage="RAID0"),
    lambda data: data["teams"][0]["quotas"].append({"nodeGroup": "serve", "gpus": 4}),
]
PREFETCH = {"nodeGroup": "serve", "paths": ["models/llama/"]}


def through(stage: str) -> Patch:
    return at("environments", "dev", "rollout", "through", value=stage)


IMAGES = at("imageSets", value=[{"name": "training", "images": ["nvcr.io/nvidia/pytorch:25.08-py3"]}])
BOTTLEROCKET = {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"}
CUSTOMER_KEY = at(
    "checkpoints",
    value={
        "bucket": "labs-ckpt",
        "modelParameters": 7_000_000_000,
        "meanTimeBetweenFailuresHours": 24,
        "encryption": "CustomerManagedKey",
    },
)
CKPT = {"bucket": "labs-ckpt", "modelParameters": 7_000_000_000, "meanTimeBetweenFailuresHours": 24}
JOB = {"name": "pretrain", "team": "vision", "nodeGroup": "l4", "nodes": 4, "modelParameters": 7_000_000_000}
ONE_SUBNET = group(subnetIds=["subnet-0aa"])
FSX = {"nodeGroup": "l4", "perUnitStorageThroughput": 250}
DATASET = {"bucket": "labs-datasets", "prefix": "train/", "fileSystemPath": "/datasets"}
EFA_P5 = group(instanceType="p5.48xlarge", fabric="EFA", zone="use1-az4", subnetIds=["subnet-0aa"])
OPERATOR = at("versions", "driver", value={"source": "Operator", "version": "595.91.07"})
OPERATOR_GDRCOPY = at("versions", "driver", value={"source": "Operator", "version": "595.91.07", "gdrCopy": "Enabled"})
ALL_VERSIONS = at("versions", value={
    "gpuOperator": {"chart": "v26.7.0"},
    "clusterAutoscaler": {"chart": "9.59.0"},
    "kueue": {"chart": "0.19.2"},
    "efaDevicePlugin": {"chart": "v0.5.30"},
    "networkOperator": {"chart": "26.4.1"},
    "multus": {"tag": "v4.3.0"},
    "kubePrometheusStack": {"chart": "88.5.3"},
    "nodeProblemDetector": {"chart": "2.4.1"},
})  # fmt: skip


def build(*patches: Patch) -> Fleet:
    data = copy.deepcopy(MINIMAL)
    for patch in patches:
        patch(data)
    problems = schema_issues(data, {})
    assert problems == [], [(format_path(i.path), i.message) for i in problems]
    return fleet_from(data)


def found(rule: str, fleet: Fleet) -> list[tuple[str, str]]:
    return [(format_path(i.path), i.message) for i in cross_field.RULES[rule](fleet)]
