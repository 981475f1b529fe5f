"""How an instance type's GPUs and EFA interfaces sit on its PCIe root complexes: what decides whether a claim that
asks for devices sharing `resource.kubernetes.io/pcieRoot` (the attribute both the NVIDIA and the EFA DRA drivers
publish, kubernetes-sigs/dranet site/content/docs/user/aws-eks-efa.md @ v1.4.0) can be allocated on one node.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/facts/pcie.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Root:
    gpus: int
    efa: int


LAYOUT: Mapping[str, tuple[Root, ...]] = {
    "p4d.24xlarge": (Root(gpus=2, efa=1),) * 4,
    "p5.48xlarge": (Root(gpus=1, efa=4),) * 8,
}


def roots(instance_type: str) -> tuple[Root, ...] | None:
    return LAYOUT.get(instance_type)
