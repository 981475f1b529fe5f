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
- `DCGMHealthCode<N>` (a DCGM health-watch incident, N a dcgmError_t code; the agent dials the operator's host
  engine, so N ranges over the codes of the DCGM that GPU Operator release runs, gpufleet.versions.DCGM_HEALTH_CODES):
  the same health watches `dcgmi health -c` reads for the health stage's DCGMUnhealthy condition. One owner per
  fault class, so the two never race on one verdict:
  - the remediation controller owns health incidents (NoAction here): it cordons and drains per workload class
    (the Interactive grace, one serving replica at a time, a hold while the verdict is Unknown), which EKS's default
    repair (reboot or replace after 10 minutes) would cut short;
  - EKS owns those where the GPU is gone or must be reset, so nothing on it survives and no drain is protected:
    4 DCGM_FR_VOLATILE_DBE_DETECTED and 120 DCGM_FR_FALLEN_OFF_BUS -> Replace (as NvidiaDoubleBitError and XID 79),
    81 DCGM_FR_UNCONTAINED_ERROR (XID 95), 125 DCGM_FR_GPU_RECOVERY_RESET and 126 DCGM_FR_GPU_RECOVERY_REBOOT ->
    Reboot (a reboot resets the GPU).
  The named reasons above stay EKS's: the per-class repair wait lets the remediator's drain go first, and on a
  node that reports one of EKS's reasons the remediator stands back from its pacing (gpufleet.plan.manifests.health
  eks_repaired_reasons: it evicts at once rather than keep a grace the repair would cut short).
- No `DCGMDiagnosticFailure` override: the agent runs active diagnostics only with DCGM_DIAG_LEVEL set
  (monitors/nvidia/dcgm/dcgm_activediagnostic.go), its DaemonSet sets no such variable, and the add-on configuration
  schema has no env (charts/configuration.schema.json, v1.7.0), so that reason never appears. Active diagnostics
  are the health stage's (`dcgmi diag -r health.dcgmDiagLevel`), under the remediator.
"""

from __future__ import annotations

from typing import Any

from gpufleet.facts.versions import (
    DCGM_HEALTH_CODES,
    NODE_MONITORING_AGENT_XIDS,
    dcgm_release,
    node_monitoring_agent_release,
)
from gpufleet.spec.fleet import Fleet, NodeGroup

REBOOT, REPLACE, NO_ACTION = "Reboot", "Replace", "NoAction"  # NodeRepairConfigOverrides.repairAction
_REPLACED_XIDS = frozenset({54, 74, 79, 119, 120, 140, 142, 151})
ADDON_CONFIGURATION: dict[str, Any] = {"dcgmAgent": {"tolerations": []}}
# DCGM health codes EKS repairs (the GPU is gone or must be reset); every other code is the remediator's.
EKS_HEALTH_CODES = {4: REPLACE, 120: REPLACE, 81: REBOOT, 125: REBOOT, 126: REBOOT}


def pinned_release(fleet: Fleet) -> str | None:
    version = fleet.versions.addons.get("nodeMonitoringAgent")
    return None if version is None else node_monitoring_agent_release(version)


def repair_actions(fleet: Fleet, group: NodeGroup) -> tuple[tuple[str, str], ...]:
    """(reason, repair action) for every AcceleratedHardwareReady reason gpufleet decides on for this group."""
    release = pinned_release(fleet)
    xids = NODE_MONITORING_AGENT_XIDS.get(release or "", ())
    health_codes = DCGM_HEALTH_CODES.get(dcgm_release(fleet.versions.gpu_operator) or "", ())
    return (
        *((f"NvidiaXID{code}Error", REPLACE if code in _REPLACED_XIDS else REBOOT) for code in xids),
        ("NvidiaDoubleBitError", REPLACE),
        ("NvidiaNVLinkError", REPLACE),
        ("NvidiaDeviceCountMismatch", REPLACE),
        ("DCGMError", NO_ACTION),
        *((f"DCGMHealthCode{code}", EKS_HEALTH_CODES.get(code, NO_ACTION)) for code in health_codes),
    )
