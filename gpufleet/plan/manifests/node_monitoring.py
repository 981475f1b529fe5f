"""The EKS node monitoring agent (NMA) and the one DCGM host engine per GPU node.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/manifests/node_monitoring.py.
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
