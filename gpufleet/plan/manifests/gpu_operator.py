"""Helm values of the NVIDIA GPU Operator release (keys as in deployments/gpu-operator/values.yaml of the
pinned chart; a test checks every key against deployments/gpu-operator/values.yaml at that version).

Why, with sources: docs/stage-1.md, "Design notes", gpufleet/plan/manifests/gpu_operator.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.names import group_taints

ESCAPE_ENV_TOOLKIT = [
    {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
    {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"},
]
ESCAPE_ENV_DEVICE_PLUGIN = [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]

# The chart's own default tolerations, kept when we add ours (Helm replaces lists, it does not merge them).
_CONTROL_PLANE = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
_GPU_EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def operand_tolerations(fleet: Fleet) -> list[dict[str, str]]:
    """Exists-tolerations for every taint key/effect on any GPU group, GPU taint first."""
    seen: dict[tuple[str, str], dict[str, str]] = {("nvidia.com/gpu", "NoSchedule"): _GPU_EXISTS}
    for group in fleet.node_groups:
        for taint in group_taints(group):
            seen.setdefault(
                (taint["key"], taint["effect"]), {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
            )
    return list(seen.values())


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` over `base`; `env` lists merge by variable name (several stages set variables on one operand,
    e.g. the device plugin's escape setting and the sharing stage's config hash), other lists are replaced."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        elif key == "env" and isinstance(value, list) and isinstance(out.get(key), list):
            names = {item["name"] for item in value}
            out[key] = [item for item in out[key] if item["name"] not in names] + value
        else:
            out[key] = value
    return out


def values(fleet: Fleet, *extra: dict[str, Any]) -> dict[str, Any]:
    v = fleet.versions
    tolerations = operand_tolerations(fleet)
    operator_managed = v.driver_source == "Operator"
    driver: dict[str, Any] = {"enabled": operator_managed}
    toolkit: dict[str, Any] = {"enabled": operator_managed}
    if operator_managed:
        driver["version"] = v.driver_version
        toolkit["env"] = ESCAPE_ENV_TOOLKIT
        if v.toolkit_version:
            toolkit["version"] = v.toolkit_version
    out: dict[str, Any] = {
        "cdi": {"enabled": False},
        "driver": driver,
        "toolkit": toolkit,
        "devicePlugin": {"env": ESCAPE_ENV_DEVICE_PLUGIN},
        "validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "true"}]}},
        # The node's one DCGM host engine, on the host network (port 5555) where the EKS node monitoring agent
        # dials; dcgm-exporter and the health checks use it too (gpufleet.plan.manifests.node_monitoring).
        "dcgm": {"enabled": True, "hostNetwork": True},
        "dcgmExporter": {"serviceMonitor": {"enabled": False}},
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": [_CONTROL_PLANE, *tolerations]}},
    }
    if defaults.gdrcopy(fleet):
        out["gdrcopy"] = {"enabled": True}
    for more in extra:
        out = deep_merge(out, more)
    return out
