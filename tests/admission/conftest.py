"""Small fleets for the admission tests: a base spec (an EFA H100 group, a time-sliced A10G group, two teams in
a cohort and one without) that each test changes with plain dict edits."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.fleet import Fleet

BASE: dict[str, Any] = {
    "apiVersion": "gpufleet/v1alpha1",
    "kind": "Fleet",
    "metadata": {"name": "t"},
    "cluster": {
        "name": "t",
        "region": "us-east-1",
        "kubernetesVersion": "1.33",
        "admins": [{"principalArn": "arn:aws:iam::111122223333:role/platform-admin"}],
        "systemNodes": {"releaseVersion": "1.33.13-20260714"},
        "network": {"vpcId": "vpc-0a1b2c3d", "subnetIds": ["subnet-0aa", "subnet-0bb"]},
    },
    "versions": {
        "gpuOperator": {"chart": "v26.7.0"},
        "clusterAutoscaler": {"chart": "9.59.0"},
        "driver": {"source": "Preinstalled"},
        "kueue": {"chart": "0.19.2"},
        "efaDevicePlugin": {"chart": "v0.5.30"},
        "kubePrometheusStack": {"chart": "88.5.3"},
        "nodeProblemDetector": {"chart": "2.4.1"},
    },
    "nodeGroups": [
        {
            "name": "h100",
            "instanceType": "p5.48xlarge",
            "workloadClass": "Training",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
            "scaling": {"minSize": 0, "maxSize": 4},
            "zone": "use1-az4",
            "subnetIds": ["subnet-0aa"],
            "fabric": "EFA",
        },
        {
            "name": "notebooks",
            "instanceType": "g5.xlarge",
            "workloadClass": "Interactive",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
            "scaling": {"minSize": 0, "maxSize": 8},
            "sharing": {"strategy": "TimeSlicing", "replicas": 4},
        },
    ],
    "teams": [
        {
            "name": "vision",
            "cohort": "research",
            "quotas": [
                {"nodeGroup": "h100", "gpus": 16, "borrowingLimit": 8, "lendingLimit": 4},
                {"nodeGroup": "notebooks", "gpus": 2},
            ],
        },
        {
            "name": "speech",
            "namespace": "speech-ml",
            "cohort": "research",
            "quotas": [{"nodeGroup": "h100", "gpus": 16}],
        },
        {"name": "ads", "quotas": [{"nodeGroup": "notebooks", "gpus": 4}]},
    ],
    "admission": {
        "preemption": {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": "LowerPriority",
        }
    },
    "telemetry": {"prometheus": "Install", "idleSmActiveBelow": 0.05},
    "cost": {"gpuHourUsd": {"h100": 6.88, "notebooks": 1.01}},
    "environments": {"prod": {"rollout": {"through": "cost"}}},
}

Edit = Callable[[dict[str, Any]], None]


def build_fleet(*edits: Edit) -> Fleet:
    data = copy.deepcopy(BASE)
    for edit in edits:
        edit(data)
    return load_fleet_text(yaml.safe_dump(data), env="prod").environments["prod"]


@pytest.fixture
def make_fleet() -> Callable[..., Fleet]:
    return build_fleet


@pytest.fixture(scope="session")
def fleet() -> Fleet:
    return build_fleet()
