"""Health (stage 7): EKS node auto repair per GPU group, the Node Problem Detector DCGM plugin, the remediation
controller and the planted-fault verification Job. See docs/telemetry-health-cost.md.

Why, with sources: docs/telemetry-health-cost.md, "Design notes", gpufleet/plan/manifests/health.py.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gpufleet.base import package_data
from gpufleet.plan.manifests import checkov, node_monitoring
from gpufleet.plan.manifests.checksum import data_sha256
from gpufleet.plan.manifests.rules_promql import DCGM_CONDITION
from gpufleet.spec import images
from gpufleet.spec.fleet import Fleet, NodeGroup, WorkloadClass
from gpufleet.spec.names import LABEL_MANAGED_BY, LABEL_NODE_GROUP, NS_HEALTH
from gpufleet.spec.provisioning import provisioning

STATE_DIR = "/var/run/gpufleet-health"  # hostPath shared by the DCGM sidecar and NPD
FAULT_DIR = "/fault"  # the planted-fault Job's flags, shared by its checker and its DCGM injector (an emptyDir)

# --- EKS node auto repair ----------------------------------------------------------------------------------
# Condition and reasons exactly as the EKS node monitoring agent reports them
# (https://docs.aws.amazon.com/eks/latest/userguide/node-health-nma.html; aws/eks-node-monitoring-agent
# pkg/reasons/reasons.yaml).
ACCELERATED_HARDWARE_READY = "AcceleratedHardwareReady"
# Minutes EKS waits before repairing, per workload class (EKS's default for AcceleratedHardwareReady is 10).
# Why: docs/telemetry-health-cost.md, "Design notes", health.REPAIR_WAIT_MINUTES.
REPAIR_WAIT_MINUTES = {
    WorkloadClass.TRAINING: 5,
    WorkloadClass.BATCH: 10,
    WorkloadClass.INTERACTIVE: 10,
    WorkloadClass.INFERENCE: 15,
}
UNHEALTHY_STOP_FRACTION = 0.2  # EKS's own default: repairs halt when more than 20% of a group is unhealthy


def repair_thresholds(group: NodeGroup) -> dict[str, int]:
    """Counts (not percentages) derived from maxSize: a percentage of a 2-node group stops repairs at the first
    bad node, and scale-to-zero groups change size all day.

    Why: docs/telemetry-health-cost.md, "Design notes", health.repair_thresholds."""
    unhealthy = max(1, math.ceil(group.max_size * UNHEALTHY_STOP_FRACTION))
    # One at a time where each node is a large share of scarce capacity; more for small interchangeable nodes.
    parallel = (
        1
        if group.workload_class in (WorkloadClass.TRAINING, WorkloadClass.INFERENCE)
        else max(1, math.ceil(group.max_size * 0.1))
    )
    return {"maxUnhealthyNodeThresholdCount": unhealthy, "maxParallelNodesRepairedCount": parallel}


def node_repair_config(fleet: Fleet, group: NodeGroup) -> dict[str, Any] | None:
    if fleet.health.auto_repair != "Enabled":
        return None
    wait = REPAIR_WAIT_MINUTES[group.workload_class]
    overrides = [
        {
            "nodeMonitoringCondition": ACCELERATED_HARDWARE_READY,
            "nodeUnhealthyReason": reason,
            "minRepairWaitTimeMins": wait,
            "repairAction": action,
        }
        for reason, action in node_monitoring.repair_actions(fleet, group)
    ]
    return {"enabled": True, **repair_thresholds(group), "nodeRepairConfigOverrides": overrides}


# --- DCGM health checks through Node Problem Detector ----------------------------------------------------
# The sidecar runs the operator's own DCGM image (versions.GpuOperatorRelease.dcgm_image): dcgmi must match the
# hostengine's version.
DCGM_HOST = "nvidia-dcgm.gpu-operator.svc"
# The remediation controller and the verification Job run gpufleet.facts.images.PYTHON_IMAGE (stdlib-only Python
# scripts); every image here is rendered through gpufleet.spec.images, with the spec's digest where it gives one.
DIAG_SECONDS = {1: 60, 2: 300, 3: 1200, 4: 3600}


def data_file(name: str) -> str:
    return package_data.text(f"data/health/{name}")


def plugin_monitor_config() -> dict[str, Any]:
    """NPD custom plugin monitor (kubernetes/node-problem-detector config/custom-plugin-monitor.json format)."""
    return {
        "plugin": "custom",
        "pluginConfig": {
            "invoke_interval": "60s",
            "timeout": "10s",
            "max_output_length": 200,
            "concurrency": 1,
            "enable_message_change_based_condition_update": False,
        },
        "source": "gpufleet-dcgm-health",
        "metricsReporting": True,
        "conditions": [
            {"type": DCGM_CONDITION, "reason": "DCGMHealthy", "message": "DCGM health watches and diagnostics pass"}
        ],
        "rules": [
            {
                "type": "permanent",
                "condition": DCGM_CONDITION,
                "reason": "DCGMHealthCheckFailed",
                "path": "/custom-config/check-dcgm-health.sh",
                "timeout": "10s",
            }
        ],
    }


def _all_tolerated() -> list[dict[str, str]]:
    # Health agents must stay on a node whatever taints it carries (including a remediation's own).
    return [{"operator": "Exists"}]


def _on_gpu_groups(fleet: Fleet) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": LABEL_NODE_GROUP,
                                "operator": "In",
                                "values": sorted(g.name for g in fleet.node_groups),
                            }
                        ]
                    }
                ]
            }
        }
    }


def max_result_age_seconds(fleet: Fleet) -> int:
    """How old the sidecar's verdict may be before the NPD plugin calls it Unknown: three check intervals plus a
    diag."""
    return 3 * fleet.health.check_interval_seconds + DIAG_SECONDS[fleet.health.dcgm_diag_level]


def unknown_release_seconds(fleet: Fleet) -> int:
    """How long a node the remediator cordoned may go without any DCGMUnhealthy condition (NPD removed, the node
    object re-created) before the remediator gives it back: two stale windows, at least 30 minutes.

    Why: docs/telemetry-health-cost.md, "Design notes", health.unknown_release_seconds."""
    return max(1800, 2 * max_result_age_seconds(fleet))


def npd_values(fleet: Fleet) -> dict[str, Any]:
    """Values for deliveryhero node-problem-detector 2.4.1 (keys checked against its values.yaml in tests)."""
    h = fleet.health
    max_age = max_result_age_seconds(fleet)
    state = {"name": "gpufleet-health-state", "hostPath": {"path": STATE_DIR, "type": "DirectoryOrCreate"}}
    sidecar = {
        "name": "dcgm-health",
        "image": images.reference(fleet, "dcgm"),
        "command": ["/bin/bash", "/custom-config/dcgm-health-loop.sh"],
        "env": [
            {"name": "DCGM_HOST", "value": DCGM_HOST},
            {"name": "DCGM_DIAG_LEVEL", "value": str(h.dcgm_diag_level)},
            {"name": "DCGM_CHECK_INTERVAL_SECONDS", "value": str(h.check_interval_seconds)},
            {"name": "STATE_DIR", "value": STATE_DIR},
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "custom-config", "mountPath": "/custom-config", "readOnly": True},
            {"name": state["name"], "mountPath": STATE_DIR},
        ],
    }
    return {
        "settings": {
            # Mounted at /custom-config with mode 0755 (templates/daemonset.yaml: defaultMode 493).
            "custom_monitor_definitions": {
                "dcgm-health-monitor.json": json.dumps(plugin_monitor_config(), indent=2, sort_keys=True) + "\n",
                "check-dcgm-health.sh": data_file("check-dcgm-health.sh"),
                "dcgm-health-loop.sh": data_file("dcgm-health-loop.sh"),
            },
            "custom_plugin_monitors": ["/custom-config/dcgm-health-monitor.json"],
        },
        "env": [{"name": "STATE_DIR", "value": STATE_DIR}, {"name": "MAX_RESULT_AGE_SECONDS", "value": str(max_age)}],
        "extraVolumes": [state],
        "extraVolumeMounts": [{"name": state["name"], "mountPath": STATE_DIR, "readOnly": True}],
        "extraContainers": [sidecar],
        "tolerations": _all_tolerated(),
        "affinity": _on_gpu_groups(fleet),
    }


# --- remediation controller and planted-fault Job ---------------------------------------------------------


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**LABEL_MANAGED_BY, "app.kubernetes.io/name": name}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _rbac(name: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, NS_HEALTH)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(name), "rules": rules},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NS_HEALTH}],
        },
    ]


SCRIPTS_CONFIGMAP = "gpufleet-health-scripts"


def scripts_configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(SCRIPTS_CONFIGMAP, NS_HEALTH),
        "data": {
            name: data_file(name) for name in ("kube.py", "remediator.py", "planted_fault.py", "inject-dcgm-fault.sh")
        },
    }


def _python_container(fleet: Fleet, name: str, script: str, env: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "image": images.reference(fleet, "python"),
        "command": ["python", "-u", f"/opt/gpufleet/{script}"],
        "env": env,
        "volumeMounts": [{"name": "scripts", "mountPath": "/opt/gpufleet", "readOnly": True}],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        # The scripts write nothing but the planted fault's flags (an emptyDir); Python's bytecode cache is optional.
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


# Pod security context of the remediator and the planted-fault Job: nobody, under the runtime's default seccomp profile.
_NOBODY = {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534, "seccompProfile": {"type": "RuntimeDefault"}}
# Checkov checks that are wrong for these objects, with the reason (docs/policies-and-diff.md, "Checkov").
_REMEDIATOR_CHECKOV_SKIPS = {
    "CKV_K8S_8": (
        "a control loop with no endpoint: every API call times out after 30 s, errors are logged and retried on the "
        "next pass, and the kubelet restarts the process if it exits"
    ),
    "CKV_K8S_9": "no Service selects the remediator, so readiness has no consumer",
    "CKV_K8S_38": (
        "the controller cordons, uncordons and evicts through the Kubernetes API with its own ServiceAccount, bound to "
        "a least-privilege ClusterRole"
    ),
}
_PLANTED_FAULT_CHECKOV_SKIPS = {
    "CKV_K8S_38": (
        "the verification reads nodes and pods through the Kubernetes API with its own ServiceAccount (get and list"
        " only)"
    ),
}


def eks_repaired_reasons(fleet: Fleet) -> list[str]:
    """AcceleratedHardwareReady reasons EKS node auto repair reboots or replaces a node for, in some group: the
    remediator leaves those faults' pacing to the repair. None without auto repair."""
    if fleet.health.auto_repair != "Enabled":
        return []
    return sorted(
        {
            reason
            for group in fleet.node_groups
            for reason, action in node_monitoring.repair_actions(fleet, group)
            if action != node_monitoring.NO_ACTION
        }
    )


def remediator_objects(fleet: Fleet) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding and the single-replica Deployment."""
    name = "gpufleet-remediator"
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": ["get"]},
    ]
    container = _python_container(
        fleet,
        "remediator",
        "remediator.py",
        [
            {"name": "REMEDIATION", "value": fleet.health.remediation},
            {"name": "INTERACTIVE_GRACE_SECONDS", "value": "3600"},
            {"name": "UNKNOWN_RELEASE_SECONDS", "value": str(unknown_release_seconds(fleet))},
            {"name": "EKS_REPAIRED_REASONS", "value": ",".join(eks_repaired_reasons(fleet))},
            {"name": "INTERVAL_SECONDS", "value": "30"},
        ],
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**_meta(name, NS_HEALTH), "annotations": checkov.skip_annotations(_REMEDIATOR_CHECKOV_SKIPS)},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},  # never two controllers acting on the same nodes
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                # The scripts are read at start: a changed script rolls the controller.
                "metadata": {
                    "labels": {"app.kubernetes.io/name": name},
                    "annotations": {"gpufleet.io/scripts-sha256": data_sha256(scripts_configmap()["data"])},
                },
                "spec": {
                    "serviceAccountName": name,
                    "priorityClassName": "system-cluster-critical",
                    "securityContext": _NOBODY,
                    "containers": [container],
                    "volumes": [{"name": "scripts", "configMap": {"name": SCRIPTS_CONFIGMAP}}],
                },
            },
        },
    }
    return [*_rbac(name, rules), deployment]


def gate_group(fleet: Fleet) -> NodeGroup:
    """Where the planted fault lands: a group that always has a node (minSize >= 1), preferring Training/Batch
    (drained at once, so the requeue is observable), then the largest minSize."""
    order = {
        WorkloadClass.TRAINING: 0,
        WorkloadClass.BATCH: 1,
        WorkloadClass.INTERACTIVE: 2,
        WorkloadClass.INFERENCE: 3,
    }
    return min(fleet.node_groups, key=lambda g: (g.min_size < 1, order[g.workload_class], -g.min_size, g.name))


# Karpenter's node repair (aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go RepairPolicies @ v1.14.1):
# AcceleratedHardwareReady=False tolerated 10 minutes, counted from the condition's lastTransitionTime, whatever its
# reason (no per-reason override, no reboot); then the NodeClaim is deleted with its termination time set to now, so its
# pods go without waiting (kubernetes-sigs/karpenter pkg/controllers/node/health/controller.go
# annotateTerminationGracePeriod @ v1.14.1).
KARPENTER_REPAIR_TOLERATION_SECONDS = 600
KARPENTER_UNHEALTHY_PERCENT = 20
# How long before Karpenter's toleration ends the gate stops its fault, for the agent to report the GPU ready again.
KARPENTER_HOLD_MARGIN_SECONDS = 300
EKS, KARPENTER = "EKS", "Karpenter"


def repair_owner(fleet: Fleet, group: NodeGroup) -> str | None:
    """Who repairs a node of the group for AcceleratedHardwareReady: EKS node auto repair on a managed node group
    (node_repair_config), Karpenter's node repair on a Karpenter pool (the controller's nodeRepair feature gate, set
    from the same health.autoRepair); None without auto repair."""
    if fleet.health.auto_repair != "Enabled":
        return None
    return provisioning(group).repairs


def repair_hold_seconds(fleet: Fleet, group: NodeGroup) -> int:
    """How long the gate keeps the injected fault once the agent reports it, to see the repair owner stand
    back; 0 without auto repair.

    Why: docs/telemetry-health-cost.md, "Design notes", health.repair_hold_seconds."""
    owner = repair_owner(fleet, group)
    if owner is None:
        return 0
    if owner == KARPENTER:
        return KARPENTER_REPAIR_TOLERATION_SECONDS - KARPENTER_HOLD_MARGIN_SECONDS
    return REPAIR_WAIT_MINUTES[group.workload_class] * 60 + 300


def planted_fault_objects(fleet: Fleet) -> list[dict[str, Any]]:
    """RBAC and the verification Job, pinned to one node of gate_group(fleet): the checker (planted_fault.py) and
    the DCGM fault injector as a native sidecar (inject-dcgm-fault.sh, the operator's DCGM image, so `dcgmi`
    matches the host engine), sharing an emptyDir of flags."""
    name = "gpufleet-planted-fault"
    group = gate_group(fleet)
    step_timeout = 3 * fleet.health.check_interval_seconds + 300
    hold = repair_hold_seconds(fleet, group)
    rules = [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]}]
    fault = {"name": "fault", "mountPath": FAULT_DIR}
    container = _python_container(
        fleet,
        "verify",
        "planted_fault.py",
        [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "FAULT_DIR", "value": FAULT_DIR},
            {"name": "REMEDIATION", "value": fleet.health.remediation},
            {"name": "WORKLOAD_CLASS", "value": group.workload_class.value},
            {"name": "STEP_TIMEOUT_SECONDS", "value": str(step_timeout)},
            {"name": "REPAIR_HOLD_SECONDS", "value": str(hold)},
            {"name": "REPAIR_OWNER", "value": repair_owner(fleet, group) or "None"},
        ],
    )
    container["volumeMounts"] = [*container["volumeMounts"], fault]
    injector = {
        **_python_container(
            fleet,
            "inject",
            "inject-dcgm-fault.sh",
            [
                {"name": "DCGM_HOST", "value": DCGM_HOST},
                {"name": "FAULT_DIR", "value": FAULT_DIR},
                {"name": "GPU_ID", "value": "0"},
                {"name": "HOME", "value": "/tmp"},
            ],
        ),
        "image": images.reference(fleet, "dcgm"),
        "command": ["/bin/bash", "/opt/gpufleet/inject-dcgm-fault.sh"],
        # A native sidecar (restartPolicy Always in initContainers, Kubernetes 1.29+): it ends with the checker.
        "restartPolicy": "Always",
    }
    injector["volumeMounts"] = [*injector["volumeMounts"], fault, {"name": "tmp", "mountPath": "/tmp"}]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {**_meta(name, NS_HEALTH), "annotations": checkov.skip_annotations(_PLANTED_FAULT_CHECKOV_SKIPS)},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 6 * step_timeout + hold,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                # The scripts are read at start: a changed script rolls the controller.
                "metadata": {
                    "labels": {"app.kubernetes.io/name": name},
                    "annotations": {"gpufleet.io/scripts-sha256": data_sha256(scripts_configmap()["data"])},
                },
                "spec": {
                    "serviceAccountName": name,
                    "restartPolicy": "Never",
                    "nodeSelector": {LABEL_NODE_GROUP: group.name},
                    "tolerations": _all_tolerated(),
                    "securityContext": _NOBODY,
                    "initContainers": [injector],
                    "containers": [container],
                    "volumes": [
                        {"name": "scripts", "configMap": {"name": SCRIPTS_CONFIGMAP}},
                        {"name": "fault", "emptyDir": {"sizeLimit": "1Mi"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                },
            },
        },
    }
    return [*_rbac(name, rules), job]
