"""A fleet on Kubernetes 1.34 with one DRA group (h100, p5.48xlarge, EFA) beside the minimal spec's device-plugin
group (l4), and the team with quota on both."""

from __future__ import annotations

import copy
from typing import Any

from gpufleet.rules.pipeline import fleet_from
from gpufleet.spec.fleet import Fleet
from tests.rules.fleets import MINIMAL

AL2023_134 = {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.34.9-20260714"}
BOTTLEROCKET_163 = {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.63.0-b2c7a1d9"}


def dra_data(*, ami: dict[str, str] = AL2023_134, fabric: str = "EFA") -> dict[str, Any]:
    data = copy.deepcopy(MINIMAL)
    data["cluster"]["kubernetesVersion"] = "1.34"
    data["cluster"]["systemNodes"]["releaseVersion"] = "1.34.9-20260714"
    data["nodeGroups"][0]["ami"] = dict(AL2023_134)
    data["nodeGroups"].append(
        {
            "name": "h100",
            "instanceType": "p5.48xlarge",
            "workloadClass": "Training",
            "devices": "DRA",
            "fabric": fabric,
            "ami": dict(ami),
            "scaling": {"maxSize": 2},
            **({"zone": "use1-az4", "subnetIds": ["subnet-0aa"]} if fabric == "EFA" else {}),
        }
    )
    data["teams"][0]["quotas"].append({"nodeGroup": "h100", "gpus": 8})
    return data


def dra_fleet(**kwargs: Any) -> Fleet:
    return fleet_from(dra_data(**kwargs))
