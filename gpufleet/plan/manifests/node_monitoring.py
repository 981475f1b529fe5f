"""The EKS node monitoring agent (NMA) and the one DCGM host engine per GPU node.

NVIDIA supports one DCGM host engine per node (two fight over the GPUs; profiling metrics conflict). The agent
connects as a DCGM client to `localhost:5555` (aws/eks-node-monitoring-agent monitors/nvidia/dcgm/dcgm_client.go,
DCGM_ADDRESS unset) from the host network (templates/daemonset.yaml `hostNetwork: true`), and its chart brings a
`dcgm-server` DaemonSet (hostPort 5555) whose `dcgmAgent.tolerations` default to `[]`: on GPU nodes tainted
`nvidia.com/gpu` it never runs, the agent cannot connect, and it reports `DCGMError` (Fatal) on
AcceleratedHardwareReady (`pkg/reasons/reasons.yaml`; aws/containers-roadmap#2555, #2567: healthy nodes replaced).

gpufleet's decision: the GPU Operator's standalone host engine (`dcgm.enabled`, gpufleet.plan.manifests.gpu_operator)
is the node's one host engine, on the host network (`dcgm.hostNetwork: true`) so that it listens on the node's
port 5555, where the agent dials. dcgm-exporter (the operator points it at the standalone engine) and the health
stage's `dcgmi` checks use the same engine. The add-on's `dcgmAgent.tolerations` stay `[]`, set explicitly in its
configurationValues, so the agent's own dcgm-server never starts a second engine on a (always tainted) GPU node.

Repair decisions (EKS node auto repair overrides, per reason the pinned agent can report):
- `NvidiaXID<code>Error` for the pinned agent's well-known XIDs (gpufleet.facts.versions.NODE_MONITORING_AGENT_XIDS):
  EKS's documented action where the EKS user guide lists the code (node-health-nma, "NVIDIA XID error codes":
  Reboot 48, 63, 64, 95; Replace 74, 79, 119, 120, 140); for the codes v1.6.4 and v1.7.0 added, NVIDIA's resolution
  bucket as the agent documents it (dcgm_policies.go): RESET_GPU -> Reboot (a reboot resets the GPU; EKS cannot
  reset one in place); CHECK_MECHANICALS (54), CONTACT_SUPPORT (142) and RESTART_VM (151) -> Replace (a new
  instance lands on other hardware).
- `NvidiaDoubleBitError`, `NvidiaNVLinkError`, `NvidiaDeviceCountMismatch` (a GPU is missing from the node) -> Replace.
- `DCGMError` (the agent lost its host engine) -> NoAction: it says nothing about the GPUs, a new node would run
  the same software, and gpufleet's own DCGM health loop and alerts report a broken engine.
- `DCGMDiagnosticFailure` (an active diagnostic failed) -> Replace, but NoAction on MIG groups: `dcgmi diag` does
  not run on GPUs split into MIG instances (NVIDIA/DCGM#31, #94).
"""

from __future__ import annotations

from typing import Any

from gpufleet.facts.versions import NODE_MONITORING_AGENT_XIDS, node_monitoring_agent_release
from gpufleet.spec.fleet import Fleet, NodeGroup, SharingStrategy

REBOOT, REPLACE, NO_ACTION = "Reboot", "Replace", "NoAction"  # NodeRepairConfigOverrides.repairAction
_REPLACED_XIDS = frozenset({54, 74, 79, 119, 120, 140, 142, 151})
ADDON_CONFIGURATION: dict[str, Any] = {"dcgmAgent": {"tolerations": []}}


def pinned_release(fleet: Fleet) -> str | None:
    version = fleet.versions.addons.get("nodeMonitoringAgent")
    return None if version is None else node_monitoring_agent_release(version)


def repair_actions(fleet: Fleet, group: NodeGroup) -> tuple[tuple[str, str], ...]:
    """(reason, repair action) for every AcceleratedHardwareReady reason gpufleet decides on for this group."""
    release = pinned_release(fleet)
    xids = NODE_MONITORING_AGENT_XIDS.get(release or "", ())
    mig = group.sharing.strategy is SharingStrategy.MIG
    return (
        *((f"NvidiaXID{code}Error", REPLACE if code in _REPLACED_XIDS else REBOOT) for code in xids),
        ("NvidiaDoubleBitError", REPLACE),
        ("NvidiaNVLinkError", REPLACE),
        ("NvidiaDeviceCountMismatch", REPLACE),
        ("DCGMError", NO_ACTION),
        ("DCGMDiagnosticFailure", NO_ACTION if mig else REPLACE),
    )
