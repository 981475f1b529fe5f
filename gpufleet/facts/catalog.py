"""The GPU instance catalog: what each EC2 GPU instance type brings to a node group.

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/facts/catalog.py.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["CATALOG", "TOPOLOGY_INSTANCE_TYPES", "InstanceType", "gpu_instance_names", "lookup"]

Architecture = Literal["x86_64", "arm64"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceType:
    """One EC2 GPU instance type, as EC2 describes it plus the GPU facts Kubernetes needs."""

    name: str  # "p5.48xlarge"
    family: str  # "p5" (the part before the dot)
    gpu_model: str  # GpuInfo.Gpus[].Name as EC2 reports it: "H100", "A10G", "L40S", "T4g"
    gpu_manufacturer: str  # GpuInfo.Gpus[].Manufacturer: "NVIDIA"
    gpu_count: int  # GpuInfo.Gpus[].Count
    gpu_memory_mib: int  # per GPU: GpuInfo.Gpus[].MemoryInfo.SizeInMiB
    vcpus: int  # VCpuInfo.DefaultVCpus
    memory_mib: int  # MemoryInfo.SizeInMiB
    architecture: Architecture  # ProcessorInfo.SupportedArchitectures (one per GPU type)
    efa_supported: bool  # NetworkInfo.EfaSupported
    max_efa_interfaces: int  # NetworkInfo.EfaInfo.MaximumEfaInterfaces; 0 without EFA
    network_cards: int  # NetworkInfo.MaximumNetworkCards
    network_gbps: int  # NetworkInfo.NetworkPerformance as a number (aggregate rated bandwidth)
    mig_capable: bool  # the GPU supports NVIDIA Multi-Instance GPU
    mig_profiles: tuple[str, ...]  # MIG profile names valid on this GPU; () when not MIG capable
    gfd_product: str  # nvidia.com/gpu.product label GPU Feature Discovery sets (GFD label form)
    local_nvme_gib: int  # InstanceStorageInfo.TotalSizeInGB; 0 without instance store
    # RDMA NICs (ConnectX InfiniBand or RoCE ports) the instance exposes for fabric RDMA: 0 on every EC2 GPU type.
    # Why: docs/stage-1.md, "Design notes", catalog.rdma_nics.
    rdma_nics: int = 0


@dataclass(frozen=True, slots=True)
class _GpuSpec:
    """What is true of a GPU board wherever it is installed."""

    model: str  # as EC2 GpuInfo names it
    memory_mib: int  # as EC2 GpuInfo reports it, per GPU
    # GFD label form: GFD takes the NVML device name and replaces spaces with "-".
    gfd_product: str
    # Homogeneous MIG profiles, smallest slice first. The media-extension variants ("1g.10gb+me") are
    # left out on purpose: only one such instance fits a GPU, so they cannot partition a node group.
    mig_profiles: tuple[str, ...] = ()


_T4: Final = _GpuSpec("T4", 16384, "Tesla-T4")
# NVML reports the Graviton board as "NVIDIA T4G" [I: from observed labels, not an NVIDIA document].
_T4G: Final = _GpuSpec("T4g", 16384, "NVIDIA-T4G")
_A10G: Final = _GpuSpec("A10G", 22888, "NVIDIA-A10G")
_L4: Final = _GpuSpec("L4", 22888, "NVIDIA-L4")
_L40S: Final = _GpuSpec("L40S", 45776, "NVIDIA-L40S")
_V100_32GB: Final = _GpuSpec("V100", 32768, "Tesla-V100-SXM2-32GB")
_A100_40GB: Final = _GpuSpec(
    "A100", 40960, "NVIDIA-A100-SXM4-40GB",
    ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
)  # fmt: skip
_A100_80GB: Final = _GpuSpec(
    "A100", 81920, "NVIDIA-A100-SXM4-80GB",
    ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
)  # fmt: skip
_H100_80GB: Final = _GpuSpec(
    "H100", 81920, "NVIDIA-H100-80GB-HBM3",
    ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
)  # fmt: skip
# [I] The NVML name of the H200 SXM on p5e/p5en is taken as "NVIDIA H200"; other clouds show
# longer forms ("NVIDIA-H200-141GB-HBM3e"). Check on a node before selecting on it.
_H200_141GB: Final = _GpuSpec(
    "H200", 144384, "NVIDIA-H200",
    ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
)  # fmt: skip
_B200: Final = _GpuSpec(
    "B200", 183359, "NVIDIA-B200",
    ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
)  # fmt: skip
# [I] B300 is not in the MIG user guide's tables as read here.
# Why: docs/stage-1.md, "Design notes", catalog._B300.
_B300: Final = _GpuSpec(
    "B300", 275040, "NVIDIA-B300-SXM6-AC",
    ("1g.34gb", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"),
)  # fmt: skip

_X86: Final = "x86_64"
_ARM: Final = "arm64"


def _row(
    name: str,
    gpu: _GpuSpec,
    gpu_count: int,
    vcpus: int,
    memory_mib: int,
    architecture: Architecture,
    max_efa_interfaces: int,
    network_cards: int,
    network_gbps: int,
    local_nvme_gib: int,
) -> InstanceType:
    return InstanceType(
        name=name,
        family=name.split(".", 1)[0],
        gpu_model=gpu.model,
        gpu_manufacturer="NVIDIA",
        gpu_count=gpu_count,
        gpu_memory_mib=gpu.memory_mib,
        vcpus=vcpus,
        memory_mib=memory_mib,
        architecture=architecture,
        # In EC2's data EfaSupported is true exactly when MaximumEfaInterfaces > 0 (the test checks both).
        efa_supported=max_efa_interfaces > 0,
        max_efa_interfaces=max_efa_interfaces,
        network_cards=network_cards,
        network_gbps=network_gbps,
        mig_capable=bool(gpu.mig_profiles),
        mig_profiles=gpu.mig_profiles,
        gfd_product=gpu.gfd_product,
        local_nvme_gib=local_nvme_gib,
    )


# fmt: off
_TABLE: Final[tuple[InstanceType, ...]] = (
    # Columns: name, GPU board, GPUs, vCPUs, memory MiB, architecture, max EFA interfaces, network cards, rated Gbps,
    # instance-store NVMe GiB.
    _row("g4dn.xlarge",       _T4,           1,    4,     16384,     _X86,  0,    1,    25,    125),
    _row("g4dn.2xlarge",      _T4,           1,    8,     32768,     _X86,  0,    1,    25,    225),
    _row("g4dn.4xlarge",      _T4,           1,    16,    65536,     _X86,  0,    1,    25,    225),
    _row("g4dn.8xlarge",      _T4,           1,    32,    131072,    _X86,  1,    1,    50,    900),
    _row("g4dn.12xlarge",     _T4,           4,    48,    196608,    _X86,  1,    1,    50,    900),
    _row("g4dn.16xlarge",     _T4,           1,    64,    262144,    _X86,  1,    1,    50,    900),
    _row("g4dn.metal",        _T4,           8,    96,    393216,    _X86,  1,    1,    100,   1800),
    # g5
    _row("g5.xlarge",         _A10G,         1,    4,     16384,     _X86,  0,    1,    10,    250),
    _row("g5.2xlarge",        _A10G,         1,    8,     32768,     _X86,  0,    1,    10,    450),
    _row("g5.4xlarge",        _A10G,         1,    16,    65536,     _X86,  0,    1,    25,    600),
    _row("g5.8xlarge",        _A10G,         1,    32,    131072,    _X86,  1,    1,    25,    900),
    _row("g5.12xlarge",       _A10G,         4,    48,    196608,    _X86,  1,    1,    40,    3800),
    _row("g5.16xlarge",       _A10G,         1,    64,    262144,    _X86,  1,    1,    25,    1900),
    _row("g5.24xlarge",       _A10G,         4,    96,    393216,    _X86,  1,    1,    50,    3800),
    _row("g5.48xlarge",       _A10G,         8,    192,   786432,    _X86,  1,    1,    100,   7600),
    # g5g
    _row("g5g.xlarge",        _T4G,          1,    4,     8192,      _ARM,  0,    1,    10,    0),
    _row("g5g.2xlarge",       _T4G,          1,    8,     16384,     _ARM,  0,    1,    10,    0),
    _row("g5g.4xlarge",       _T4G,          1,    16,    32768,     _ARM,  0,    1,    10,    0),
    _row("g5g.8xlarge",       _T4G,          1,    32,    65536,     _ARM,  0,    1,    12,    0),
    _row("g5g.16xlarge",      _T4G,          2,    64,    131072,    _ARM,  0,    1,    25,    0),
    _row("g5g.metal",         _T4G,          2,    64,    131072,    _ARM,  0,    1,    25,    0),
    # g6
    _row("g6.xlarge",         _L4,           1,    4,     16384,     _X86,  0,    1,    10,    250),
    _row("g6.2xlarge",        _L4,           1,    8,     32768,     _X86,  0,    1,    10,    450),
    _row("g6.4xlarge",        _L4,           1,    16,    65536,     _X86,  0,    1,    25,    600),
    _row("g6.8xlarge",        _L4,           1,    32,    131072,    _X86,  1,    1,    25,    900),
    _row("g6.12xlarge",       _L4,           4,    48,    196608,    _X86,  1,    1,    40,    3760),
    _row("g6.16xlarge",       _L4,           1,    64,    262144,    _X86,  1,    1,    25,    1880),
    _row("g6.24xlarge",       _L4,           4,    96,    393216,    _X86,  1,    1,    50,    3760),
    _row("g6.48xlarge",       _L4,           8,    192,   786432,    _X86,  1,    1,    100,   7520),
    # g6e
    _row("g6e.xlarge",        _L40S,         1,    4,     32768,     _X86,  0,    1,    20,    250),
    _row("g6e.2xlarge",       _L40S,         1,    8,     65536,     _X86,  0,    1,    20,    450),
    _row("g6e.4xlarge",       _L40S,         1,    16,    131072,    _X86,  0,    1,    20,    600),
    _row("g6e.8xlarge",       _L40S,         1,    32,    262144,    _X86,  1,    1,    25,    900),
    _row("g6e.12xlarge",      _L40S,         4,    48,    393216,    _X86,  1,    1,    100,   3800),
    _row("g6e.16xlarge",      _L40S,         1,    64,    524288,    _X86,  1,    1,    35,    1900),
    _row("g6e.24xlarge",      _L40S,         4,    96,    786432,    _X86,  2,    2,    200,   3800),
    _row("g6e.48xlarge",      _L40S,         8,    192,   1572864,   _X86,  4,    4,    400,   7600),
    # p3dn
    _row("p3dn.24xlarge",     _V100_32GB,    8,    96,    786432,    _X86,  1,    1,    100,   1800),
    # p4d
    _row("p4d.24xlarge",      _A100_40GB,    8,    96,    1179648,   _X86,  4,    4,    400,   8000),
    # p4de
    _row("p4de.24xlarge",     _A100_80GB,    8,    96,    1179648,   _X86,  4,    4,    400,   8000),
    # p5
    _row("p5.4xlarge",        _H100_80GB,    1,    16,    262144,    _X86,  1,    1,    100,   3800),
    _row("p5.48xlarge",       _H100_80GB,    8,    192,   2097152,   _X86,  32,   32,   3200,  30400),
    # p5e
    _row("p5e.48xlarge",      _H200_141GB,   8,    192,   2097152,   _X86,  32,   32,   3200,  30400),
    # p5en
    _row("p5en.48xlarge",     _H200_141GB,   8,    192,   2097152,   _X86,  16,   16,   3200,  30400),
    # p6-b200
    _row("p6-b200.48xlarge",  _B200,         8,    192,   2097152,   _X86,  8,    8,    3200,  30400),
    # p6-b300
    _row("p6-b300.48xlarge",  _B300,         8,    192,   4194304,   _X86,  16,   17,   6400,  30400),
)
# fmt: on

CATALOG: Final[Mapping[str, InstanceType]] = types.MappingProxyType(
    {entry.name: entry for entry in sorted(_TABLE, key=lambda entry: entry.name)}
)
if len(CATALOG) != len(_TABLE):  # pragma: no cover - guards against a duplicated row
    raise AssertionError("duplicate instance type in the GPU catalog")

# Catalog instance types that EC2 instance topology covers
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html).
TOPOLOGY_INSTANCE_TYPES = frozenset(
    {
        "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge",
        "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge",
        "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
        "p6-b200.48xlarge", "p6-b300.48xlarge",
    }
)  # fmt: skip


# Instance-store NVMe devices per type (InstanceStorageInfo.Disks[].Count, the same moto EC2 data; every GPU type has
# one disk kind).
# Why: docs/stage-1.md, "Design notes", catalog._NVME_DEVICES.
_NVME_DEVICES: Final[Mapping[str, int]] = types.MappingProxyType(
    {
        "g4dn.metal": 2, "g5.48xlarge": 2, "g6.8xlarge": 2, "g6.12xlarge": 4, "g6.16xlarge": 2, "g6.24xlarge": 4,
        "g6.48xlarge": 8, "g6e.8xlarge": 2, "g6e.12xlarge": 2, "g6e.16xlarge": 2, "g6e.24xlarge": 2,
        "g6e.48xlarge": 4, "p3dn.24xlarge": 2, "p4d.24xlarge": 8, "p4de.24xlarge": 8, "p5.48xlarge": 8,
        "p5e.48xlarge": 8, "p5en.48xlarge": 8, "p6-b200.48xlarge": 8, "p6-b300.48xlarge": 8,
    }
)  # fmt: skip


def local_nvme_devices(name: str) -> int:
    """Instance-store NVMe devices of a catalog type: 0 without instance store, else 1 unless listed above."""
    entry = CATALOG.get(name)
    if entry is None or entry.local_nvme_gib == 0:
        return 0
    return _NVME_DEVICES.get(name, 1)


def lookup(name: str) -> InstanceType | None:
    """The catalog entry for an EC2 instance type name, or None when it is not a known GPU type."""
    return CATALOG.get(name)


def gpu_instance_names() -> tuple[str, ...]:
    """Every instance type name in the catalog, sorted."""
    return tuple(sorted(CATALOG))


# The most pods kubelet admits on a node of each type: EKS's ENI formula, ENIs x (IPv4 addresses per ENI - 1) + 2,
# as nodeadm computes it from its instance-info.jsonl (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go
# @v20260724).
EKS_MAX_PODS = {
    "g4dn.xlarge": 29, "g4dn.2xlarge": 29, "g4dn.4xlarge": 29, "g4dn.8xlarge": 58, "g4dn.12xlarge": 234,
    "g4dn.16xlarge": 58, "g4dn.metal": 737,
    "g5.xlarge": 58, "g5.2xlarge": 58, "g5.4xlarge": 234, "g5.8xlarge": 234, "g5.12xlarge": 737, "g5.16xlarge": 234,
    "g5.24xlarge": 737, "g5.48xlarge": 345,
    "g5g.xlarge": 58, "g5g.2xlarge": 58, "g5g.4xlarge": 234, "g5g.8xlarge": 234, "g5g.16xlarge": 737, "g5g.metal": 737,
    "g6.xlarge": 58, "g6.2xlarge": 58, "g6.4xlarge": 234, "g6.8xlarge": 234, "g6.12xlarge": 234, "g6.16xlarge": 737,
    "g6.24xlarge": 737, "g6.48xlarge": 737,
    "g6e.xlarge": 58, "g6e.2xlarge": 58, "g6e.4xlarge": 234, "g6e.8xlarge": 234, "g6e.12xlarge": 292,
    "g6e.16xlarge": 737, "g6e.24xlarge": 492, "g6e.48xlarge": 492,
    "p3dn.24xlarge": 737, "p4d.24xlarge": 737, "p4de.24xlarge": 737,
    "p5.4xlarge": 118, "p5.48xlarge": 100, "p5e.48xlarge": 100, "p5en.48xlarge": 198,
    "p6-b200.48xlarge": 198, "p6-b300.48xlarge": 198,
}  # fmt: skip


def max_pods(name: str) -> int:
    """kubelet's maxPods on a node of the type; the largest known figure for a type added to the catalog later."""
    return EKS_MAX_PODS.get(name, max(EKS_MAX_PODS.values()))
