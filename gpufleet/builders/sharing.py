"""Stage 4, sharing: the device plugin ConfigMap (time-slicing and MPS entries per group, `default` for the
rest) and the MIG manager ConfigMap (`config.yaml` with `mig-configs` per MIG group), in the GPU Operator's
namespace. The foundation stage labels each group's nodes and points the operator at both ConfigMaps
(gpufleet.manifests.sharing), so changing one group's sharing changes only its label and its entry.

plan.md gets each group's isolation contract: memory bound, fault isolation, reconfigure cost.
"""

from __future__ import annotations

from gpufleet.builders.common import k8s
from gpufleet.names import NS_GPU_OPERATOR
from gpufleet.manifests import sharing
from gpufleet.plan import BuildContext, StageContent
from gpufleet.spec import SharingStrategy


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    resources = (
        k8s(sharing.device_plugin_configmap(fleet, NS_GPU_OPERATOR)),
        k8s(sharing.mig_configmap(fleet, NS_GPU_OPERATOR)),
    )
    notes = [
        "Every group advertises `nvidia.com/gpu`; on a shared group one device is a slice of a GPU. Isolation contract per group:",
        "",
        *sharing.CONTRACT_HEADER,
        *(sharing.contract_line(g) for g in fleet.node_groups),
    ]
    warnings = []
    for group in fleet.node_groups:
        if sharing.is_bottlerocket(group) and group.sharing.strategy is SharingStrategy.MIG and sharing.bottlerocket_mig_key(group) is None:
            warnings.append(
                f"node group {group.name}: Bottlerocket partitions only A100, H100 and H200 with MIG; {group.instance_type} "
                "will come up unpartitioned (use an AL2023 AMI, where the GPU Operator's MIG manager does it)"
            )
    return StageContent(resources=resources, warnings=tuple(warnings), notes=tuple(notes))
