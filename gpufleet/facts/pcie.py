"""How an instance type's GPUs and EFA interfaces sit on its PCIe root complexes: what decides whether a claim that
asks for devices sharing `resource.kubernetes.io/pcieRoot` (the attribute both the NVIDIA and the EFA DRA drivers
publish, kubernetes-sigs/dranet site/content/docs/user/aws-eks-efa.md @ v1.4.0) can be allocated on one node.

Each entry: the roots, each with its GPUs and EFA interfaces. Sources:
- p4d.24xlarge: 4 roots of 2 GPUs and 1 EFA interface each, as its drivers publish them (kubernetes-sigs/dranet
  examples/aws_eks_examples/gpu-efa/resourceslice-gpu.yaml and resourceslice-dranet.yaml @ v1.4.0: GPUs on
  pci0000:10, :20, :90, :a0 two each, one EFA adapter on each of those roots).
- p5.48xlarge: 8 roots of 1 GPU and 4 EFA interfaces each ("each PCIe switch connecting to one H100 GPU, four
  100 Gbps EFA cards", Perplexity, https://www.perplexity.ai/hub/blog/high-performance-gpu-memory-transfer-on-aws;
  32 EFA interfaces, 8 GPUs: EC2 accelerated computing specifications).
An instance type not listed has no known layout: a claim constrained to one root is not judged on it (a note says
so).
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
