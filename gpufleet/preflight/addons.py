"""Existing clusters: the EKS node monitoring agent add-on's own DCGM host engine against the GPU Operator's.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/addons.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from gpufleet.preflight.clients import ApiError, call
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec.names import GPU_TAINT

ADDON = "eks-node-monitoring-agent"
DCGM_PORT = 5555


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """Kubernetes' rule (k8s.io/api core/v1 Toleration.ToleratesTaint): the effect matches or is empty; Exists
    matches the key or every key when empty; Equal (the default) matches key and value."""
    effect = str(toleration.get("effect") or "")
    if effect and effect != taint["effect"]:
        return False
    key = str(toleration.get("key") or "")
    if str(toleration.get("operator") or "Equal") == "Exists":
        return key in ("", taint["key"])
    return key == taint["key"] and str(toleration.get("value") or "") == taint["value"]


def dcgm_tolerations(configuration_values: str | None) -> list[Mapping[str, Any]]:
    """`dcgmAgent.tolerations` of the add-on's configurationValues (JSON or YAML); [] when unset or unreadable."""
    try:
        values = yaml.safe_load(configuration_values or "") or {}
    except yaml.YAMLError:
        return []
    agent = values.get("dcgmAgent") if isinstance(values, dict) else None
    tolerations = agent.get("tolerations") if isinstance(agent, dict) else None
    return [t for t in tolerations if isinstance(t, dict)] if isinstance(tolerations, list) else []


def check_node_monitoring_agent(ctx: Context) -> Iterator[AccountFinding]:
    cluster = ctx.fleet.cluster
    if cluster.mode != "Existing" or ctx.clients.eks is None:
        return
    try:
        addon = call(ctx.clients.eks, "describe_addon", clusterName=cluster.name, addonName=ADDON)["addon"]
    except ApiError as exc:
        if exc.code == "ResourceNotFoundException":
            return  # not installed: the health stage warns that auto repair needs it
        raise
    matching = [t for t in dcgm_tolerations(addon.get("configurationValues")) if tolerates(t, GPU_TAINT)]
    if not matching:
        return
    taint = f"{GPU_TAINT['key']}={GPU_TAINT['value']}:{GPU_TAINT['effect']}"
    yield AccountFinding(
        severity="warning",
        node_group=None,
        message=(
            f"the {ADDON} add-on ({addon.get('addonVersion', '?')}) on cluster {cluster.name} runs its dcgm-server on"
            f" GPU nodes (configurationValues dcgmAgent.tolerations {matching[0]} tolerates the GPU taint {taint}): its"
            f" host engine takes host port {DCGM_PORT}, where the GPU Operator's standalone host engine listens, so one"
            " of the two cannot start on each GPU node"
        ),
        hint=(
            "set dcgmAgent.tolerations to [] in the add-on's configuration values (aws eks update-addon --cluster-name"
            f" {cluster.name} --addon-name {ADDON} --configuration-values"
            ' \'{"dcgmAgent":{"tolerations":[]}}\'): the agent then reads the operator\'s host engine on'
            f" localhost:{DCGM_PORT}"
        ),
    )
