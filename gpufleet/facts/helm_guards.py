"""The Helm value paths a spec's values overlay (`helm.<component>.values`) may not set, with the reason for each.

Why, with sources: docs/helm-values.md, "Design notes", gpufleet/facts/helm_guards.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

Path = tuple[str, ...]

_ESCAPE = (
    "it closes the container escape (a pod setting NVIDIA_VISIBLE_DEVICES=all would see every GPU of its node;"
    " docs/admission-and-sharing.md, gpufleet check's gpu-operator-escape-closed)"
)
_DRIVER = "it follows versions.driver (source Preinstalled or Operator): set that instead"
_SHARING = "it points the operand at the sharing stage's ConfigMaps and their hash (nodeGroups[].sharing: set that)"
_OPERANDS = (
    "every operand tolerates each taint gpufleet puts on GPU nodes (GPU, EFA and nodeGroups[].taints), so the device"
    " plugin reaches every GPU group (the model checks it)"
)
_DCGM = (
    "the operator's standalone DCGM host engine is the node's only one, on the host network at port 5555 where the EKS"
    " node monitoring agent dials; dcgm-exporter and the health checks use it (gpufleet.plan.manifests.node_monitoring)"
)
_EVERY_GROUP = (
    "the DaemonSet runs on every node group it serves; the model assumes so and reads only its tolerations, so a"
    " narrower placement would leave groups without it unseen"
)
_SYSTEM_NODES = "it runs on the system nodes gpufleet creates (every GPU group is tainted; the model checks it)"

# component key (gpufleet.facts.versions.COMPONENTS) -> value path -> why an overlay may not set it
GUARDED: Mapping[str, Mapping[Path, str]] = MappingProxyType(
    {
        # gpufleet.plan.manifests.gpu_operator values(), with telemetry.operator_telemetry_values and
        # sharing.operator_sharing_values merged in.
        "gpuOperator": MappingProxyType(
            {
                ("cdi",): (
                    "CDI stays off: the EKS NVIDIA AMI's toolkit runs the legacy runtime, and gpufleet closes the"
                    " container escape the legacy way (device lists as volume mounts)"
                ),
                ("toolkit", "env"): _ESCAPE,
                ("devicePlugin", "env"): _ESCAPE + "; it also holds the sharing config hash",
                ("devicePlugin", "enabled"): "the device plugin advertises the GPUs every queue and the model count",
                ("driver", "enabled"): _DRIVER,
                ("driver", "version"): _DRIVER,
                ("toolkit", "enabled"): _DRIVER,
                ("toolkit", "version"): _DRIVER,
                ("gdrcopy", "enabled"): "it follows versions.driver.gdrCopy: set that instead",
                ("devicePlugin", "config"): _SHARING,
                ("migManager", "config"): _SHARING,
                ("migManager", "env"): _SHARING,
                ("mig", "strategy"): "it follows nodeGroups[].sharing.migStrategy, and the model reads it",
                ("dcgm", "enabled"): _DCGM,
                ("dcgm", "hostNetwork"): _DCGM,
                # nv-hostengine's arguments and environment can move its port or bind address off the node's 5555.
                ("dcgm", "args"): _DCGM,
                ("dcgm", "env"): _DCGM,
                ("dcgm", "version"): (
                    "the health stage's dcgmi runs the same DCGM release as the host engine"
                    " (gpufleet.facts.versions GpuOperatorRelease.dcgm_image): pin versions.gpuOperator instead"
                ),
                ("dcgmExporter", "enabled"): "the telemetry stage, its rules and the cost stage read its series",
                ("dcgmExporter", "config"): "it selects the DCGM fields the telemetry rules read (telemetry stage)",
                ("dcgmExporter", "env"): (
                    "KUBERNETES_VIRTUAL_GPUS gives each pod sharing a GPU its own series, which idle GPU-hours by"
                    " team count (cost stage)"
                ),
                ("dcgmExporter", "serviceMonitor"): (
                    "the telemetry stage creates the exporter's ServiceMonitor itself, once the Prometheus Operator"
                    " CRDs exist"
                ),
                ("daemonsets", "tolerations"): _OPERANDS,
                ("node-feature-discovery", "worker", "tolerations"): (
                    "NFD labels every GPU node (nvidia.com/gpu.present) for the operands: its workers tolerate each"
                    " GPU taint"
                ),
                ("nfd", "enabled"): "the operands run where NFD labels GPU nodes, and the model reads it",
                ("validator", "plugin", "env"): (
                    "WITH_WORKLOAD runs a CUDA workload on every node before it takes jobs"
                ),
            }
        ),
        # gpufleet.plan.manifests.kueue helm_values()
        "kueue": MappingProxyType(
            {
                ("managerConfig",): (
                    "gpufleet's Kueue Configuration (integrations, waitForPodsReady, managed namespaces), which the"
                    " model reads: set admission instead"
                ),
                ("enablePrometheus",): "on exactly when the telemetry stage (the ServiceMonitor CRD) comes first",
            }
        ),
        # gpufleet.plan.manifests.autoscaler values()
        "clusterAutoscaler": MappingProxyType(
            {
                ("cloudProvider",): "the AWS auto-discovery of this cluster's node groups",
                ("awsRegion",): "it follows cluster.region",
                ("autoDiscovery",): "it discovers exactly this cluster's node groups (cluster.name)",
                ("image", "tag"): "the autoscaler's minor must match cluster.kubernetesVersion",
                ("fullnameOverride",): "the Pod Identity association names the ServiceAccount it derives",
                ("rbac", "serviceAccount", "name"): "the Pod Identity association names it",
                ("nodeSelector",): _SYSTEM_NODES,
                ("extraArgs", "expander"): "gpufleet's scale-up choice (least-waste)",
                ("extraArgs", "scale-down-gpu-utilization-threshold"): (
                    "a node holding any GPU is never scaled down under running work"
                ),
                ("extraArgs", "scale-down-unneeded-time"): "about one cold start of a GPU node",
                ("extraArgs", "max-node-provision-time"): "a cold GPU node pulls its images before it registers",
            }
        ),
        # gpufleet.plan.manifests.karpenter values()
        "karpenter": MappingProxyType(
            {
                ("settings", "clusterName"): "it follows cluster.name",
                ("settings", "interruptionQueue"): "the SQS interruption queue the foundation stage creates",
                ("settings", "featureGates", "nodeRepair"): (
                    "the health stage decides who repairs nodes (health.autoRepair)"
                ),
                ("serviceAccount", "name"): "the Pod Identity association names it",
                ("nodeSelector",): _SYSTEM_NODES,
            }
        ),
        # gpufleet.plan.manifests.network efa_device_plugin_values()
        "efaDevicePlugin": MappingProxyType(
            {
                (
                    "nodeSelector",
                ): "it runs on exactly the EFA node groups with devices DevicePlugin (the model checks it)",
                ("supportedInstanceLabels",): "it runs on exactly the EFA node groups with devices DevicePlugin",
                ("tolerations",): "it tolerates each taint of the EFA groups, so their EFA devices are advertised",
            }
        ),
        # gpufleet.plan.manifests.dra nvidia_dra_driver_values()
        "nvidiaDraDriver": MappingProxyType(
            {
                ("gpuResourcesEnabledOverride",): (
                    "the device plugin is off on DRA nodes (gpufleet.io/device-manager), which the chart asks before"
                    " it hands out GPUs"
                ),
                ("kubeletPlugin", "nodeSelector"): (
                    "the kubelet plugin runs on DRA nodes only, never beside a device plugin (nodeGroups[].devices)"
                ),
                ("resourceApiVersion",): "the claim templates and DeviceClasses are resource.k8s.io/v1",
            }
        ),
        # gpufleet.plan.manifests.dra efa_dra_driver_values()
        "efaDraDriver": MappingProxyType(
            {
                (
                    "nodeSelector",
                ): "it runs on exactly the EFA groups with devices DRA, never beside the EFA device plugin",
                ("supportedInstanceLabels",): "it runs on exactly the EFA groups with devices DRA",
                ("tolerations",): "it tolerates each taint of those groups, so their EFA interfaces are published",
            }
        ),
        # gpufleet.plan.manifests.network network_operator_values()
        "networkOperator": MappingProxyType(
            {
                ("nfd",): "the GPU Operator runs the fleet's one Node Feature Discovery; two would fight over labels",
            }
        ),
        # gpufleet.plan.manifests.health npd_values()
        "nodeProblemDetector": MappingProxyType(
            {
                ("settings", "custom_monitor_definitions"): "the DCGM health check the health stage runs",
                ("settings", "custom_plugin_monitors"): "the DCGM health check the health stage runs",
                ("env",): "the DCGM health check's state and result age",
                ("extraVolumes",): "the DCGM health check's state directory",
                ("extraVolumeMounts",): "the DCGM health check's state directory",
                ("extraContainers",): "the DCGM health loop beside the detector",
                ("tolerations",): "it runs on every GPU node, whatever its taints (the model checks it)",
                ("affinity",): "it runs on the GPU node groups (the model reads it)",
                ("nodeSelector",): _EVERY_GROUP,
            }
        ),
        # gpufleet.plan.manifests.telemetry kube_prometheus_stack_values()
        "kubePrometheusStack": MappingProxyType(
            {
                ("prometheus", "prometheusSpec", "ruleSelectorNilUsesHelmValues"): (
                    "Prometheus selects gpufleet's rules in every namespace"
                ),
                ("prometheus", "prometheusSpec", "serviceMonitorSelectorNilUsesHelmValues"): (
                    "Prometheus selects gpufleet's ServiceMonitors in every namespace"
                ),
                ("prometheus", "prometheusSpec", "podMonitorSelectorNilUsesHelmValues"): (
                    "Prometheus selects gpufleet's and the jobs' PodMonitors in every namespace"
                ),
                ("kube-state-metrics", "metricLabelsAllowlist"): (
                    "the node labels the cost and telemetry rules join on"
                ),
                ("prometheus-node-exporter", "tolerations"): _OPERANDS.replace("the device plugin", "node exporter"),
                ("prometheus-node-exporter", "nodeSelector"): _EVERY_GROUP,
                ("prometheus-node-exporter", "affinity"): _EVERY_GROUP,
                ("grafana", "rbac", "namespaced"): "Grafana may not read every Secret of the cluster",
                ("grafana", "sidecar", "dashboards"): (
                    "Grafana loads dashboards from the monitoring namespace only, where no team can inject one"
                ),
            }
        ),
        # gpufleet.plan.manifests.inference keda_values()
        "keda": MappingProxyType(
            {
                ("crds", "install"): "the ScaledObjects of the inference recipe need KEDA's CRDs",
                ("prometheus", "operator", "serviceMonitor", "additionalLabels"): "the fleet's Prometheus selects it",
                ("prometheus", "metricServer", "serviceMonitor", "additionalLabels"): (
                    "the fleet's Prometheus selects it"
                ),
            }
        ),
        # gpufleet.plan.manifests.mountpoint values()
        "mountpointS3Csi": MappingProxyType(
            {
                ("node", "tolerateAllTaints"): (
                    "its node plugin runs wherever a team's pod mounts a volume: every GPU group, whatever its taints"
                    " (the model checks it)"
                ),
                ("node", "nodeSelector"): _EVERY_GROUP,
                ("node", "affinity"): _EVERY_GROUP,
            }
        ),
        # gpufleet.plan.manifests.fsx values()
        "fsxCsiDriver": MappingProxyType(
            {
                ("node", "tolerateAllTaints"): (
                    "the node plugin runs on every GPU node, whatever its taints, so pods there can mount the file"
                    " system (the model checks it)"
                ),
                ("controller", "serviceAccount", "name"): "the Pod Identity association names it",
                ("controller", "region"): "it follows cluster.region (pods do not reach the instance metadata service)",
            }
        ),
        # gpufleet.plan.manifests.workloads jobset_values(), trainer_values(), lws_values()
        "jobSet": MappingProxyType({("image", "tag"): "it follows versions.jobSet: pin that instead"}),
        "trainer": MappingProxyType(
            {
                ("jobset", "install"): "gpufleet's own JobSet release is the fleet's JobSet",
                ("dataCache", "enabled"): "gpufleet's own LeaderWorkerSet release is the fleet's LWS",
            }
        ),
        "leaderWorkerSet": MappingProxyType(
            {
                ("image", "manager", "tag"): "it follows versions.leaderWorkerSet: pin that instead",
                ("gangSchedulingManagement",): "Kueue does the gang admission",
            }
        ),
    }
)


def guard(component: str, path: Path, replaces: bool) -> tuple[Path, str] | None:
    """The guarded path an overlay key at `path` would set, and why; `replaces`: the overlay's value there is not a
    map, so it replaces everything below."""
    for guarded, reason in GUARDED.get(component, {}).items():
        if path[: len(guarded)] == guarded or (replaces and guarded[: len(path)] == path):
            return guarded, reason
    return None
