"""Stage 4, sharing: what each group's sharing means, and all of what renders it. Its objects, the device plugin
ConfigMap (time-slicing and MPS entries per group, `default` for the rest) and the MIG manager ConfigMap
(`config.yaml` with `mig-configs` per MIG group), go into the foundation stage with the GPU Operator when this
stage is in the rollout (`at_foundation`): the operator mounts them as non-optional volumes, so they must exist
before its operands start.

Why, with sources: docs/admission-and-sharing.md, "Design notes", gpufleet/plan/stages/sharing.py.
"""

from __future__ import annotations

from gpufleet.plan.manifests import sharing
from gpufleet.plan.parts import AtFoundation, BuildContext, StageContent
from gpufleet.spec.fleet import SharingStrategy
from gpufleet.spec.names import NS_GPU_OPERATOR


def at_foundation(ctx: BuildContext) -> AtFoundation:
    fleet = ctx.fleet
    return AtFoundation(
        node_labels=sharing.sharing_node_labels,
        bottlerocket_settings=sharing.bottlerocket_sharing_settings,
        operator_values=(sharing.operator_sharing_values(fleet),),
        operator_configmaps=(
            sharing.device_plugin_configmap(fleet, NS_GPU_OPERATOR),
            sharing.mig_configmap(fleet, NS_GPU_OPERATOR),
        ),
    )


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    notes = [
        (
            f"The device plugin ConfigMap `{sharing.DEVICE_PLUGIN_CONFIGMAP}` and the MIG ConfigMap"
            f" `{sharing.MIG_CONFIGMAP}` are created in stage 1 with the GPU Operator, which mounts them."
        ),
        "",
        (
            "Every group advertises `nvidia.com/gpu`; on a shared group one device is a slice of a GPU. Isolation"
            " contract per group:"
            if sharing.mig_strategy(fleet) == sharing.MIG_SINGLE
            else (
                "MIG strategy `mixed` (one value for the cluster): MIG groups advertise each slice as"
                " `nvidia.com/mig-<profile>`, the others `nvidia.com/gpu`; on a shared group one device is a slice of a"
                " GPU. Isolation contract per group:"
            )
        ),
        "",
        *sharing.CONTRACT_HEADER,
        *(sharing.contract_line(g) for g in fleet.node_groups),
    ]
    warnings = []
    for group in fleet.node_groups:
        if (
            sharing.is_bottlerocket(group)
            and group.sharing.strategy is SharingStrategy.MIG
            and sharing.bottlerocket_mig_key(group) is None
        ):
            warnings.append(
                f"node group {group.name}: Bottlerocket partitions only A100, H100 and H200 with MIG;"
                f" {group.instance_type} will come up unpartitioned (use an AL2023 AMI, where the GPU Operator's MIG"
                " manager does it)"
            )
    return StageContent(resources=(), warnings=tuple(warnings), notes=tuple(notes))
