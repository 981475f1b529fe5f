"""Stage 2: telemetry. DCGM exporter counters, Prometheus (installed or existing), the exporter's ServiceMonitor,
recording rules and alerts, and the utilization dashboard. See docs/telemetry-health-cost.md."""

from __future__ import annotations

from gpufleet.facts import catalog
from gpufleet.plan.builders import cluster_roles, serving_start
from gpufleet.plan.builders.common import helm, k8s, overlaid
from gpufleet.plan.manifests import dashboards, dra, inference, rules_promql, sharing, telemetry
from gpufleet.plan.manifests import network as net
from gpufleet.plan.parts import AtFoundation, BuildContext, Resource, StageContent
from gpufleet.spec.devices import GPU_DEVICE_CLASS, device_managing, quota_resource
from gpufleet.spec.fleet import Fabric
from gpufleet.spec.names import GPU_RESOURCE, NS_NETWORK

KPS_RELEASE = "kube-prometheus-stack"


def at_foundation(ctx: BuildContext) -> AtFoundation:
    """The operator's DCGM exporter reads its counters from a ConfigMap the operator mounts, and, with DRA groups,
    watches ResourceSlices with the ClusterRole gpufleet grants it (telemetry.exporter_maps_dra)."""
    rbac = tuple(telemetry.dcgm_exporter_resourceslices()) if telemetry.exporter_maps_dra(ctx.fleet) else ()
    return AtFoundation(
        operator_values=(telemetry.operator_telemetry_values(ctx.fleet),),
        operator_configmaps=(telemetry.dcgm_metrics_configmap(), *rbac),
    )


def prometheus_dependency(ctx: BuildContext) -> tuple[str, ...]:
    """Ids that Prometheus Operator objects must wait for: the stack's release (its CRDs) when installed."""
    return (f"helm-{KPS_RELEASE}",) if ctx.fleet.telemetry.prometheus == "Install" else ()


def devices_per_gpu(ctx: BuildContext) -> list[tuple[dict[str, str], int]]:
    """GPU devices per physical GPU, one figure per node group and device resource: the MIG instances of the
    resource's profile or the replicas once the sharing stage configures them, else whole GPUs.

    Why: docs/telemetry-health-cost.md, "Design notes", telemetry.devices_per_gpu."""
    out: list[tuple[dict[str, str], int]] = []
    for group in ctx.fleet.node_groups:
        per_gpu = sharing.devices_per_gpu(group, with_sharing=ctx.includes("sharing"))
        layout = sharing.mig_layout(group) if ctx.includes("sharing") else ()
        profiles = {sharing.mig_resource(group, p): p for _, p in layout}
        for name, n in per_gpu.items():
            # On a DRA group the pods' GPUs are counted under the DeviceClass's quota name (dra_allocation).
            resource = quota_resource(GPU_DEVICE_CLASS) if device_managing(group).claims else name
            labels = {"node_group": group.name, "resource": rules_promql.ksm_resource(resource)}
            if name in profiles:
                labels["GPU_I_PROFILE"] = profiles[name]
            out.append((labels, n))
    return out


def whole_gpu_groups(ctx: BuildContext) -> list[str]:
    """Node groups whose devices are whole GPUs (no time-slicing, MPS or MIG in this environment) on nodes of more
    than one GPU: the only groups where one pod can take a whole node, so the only ones fragmentation can block."""
    out = []
    for group in ctx.fleet.node_groups:
        info = catalog.lookup(group.instance_type)
        whole = sharing.devices_per_gpu(group, with_sharing=ctx.includes("sharing")) == {GPU_RESOURCE: 1}
        if whole and info is not None and info.gpu_count > 1:
            out.append(group.name)
    return out


def dra_allocation(ctx: BuildContext) -> rules_promql.DraAllocation | None:
    """The DRA groups' GPUs per node and the GPUs of every ResourceClaimTemplate gpufleet renders for them: each team's
    with quota on the group (gpufleet.plan.builders.device_managers), and the NCCL gate's of an EFA group (in the
    network namespace, under the gate's name: gpufleet.plan.manifests.dra.claiming_gate). None without DRA groups."""
    fleet = ctx.fleet
    groups = [g for g in fleet.node_groups if device_managing(g).claims]
    if not groups:
        return None
    node_gpus = {}
    templates: dict[tuple[str, str, str], int] = {}
    for group in groups:
        info = catalog.lookup(group.instance_type)
        node_gpus[group.name] = info.gpu_count if info else 1
        for team in fleet.teams:
            if any(q.node_group == group.name for q in team.quotas):
                for obj in dra.claim_templates(team, group):
                    templates[(team.namespace, obj["metadata"]["name"], group.name)] = dra.template_gpus(obj)
        if group.fabric is Fabric.EFA:
            templates[(NS_NETWORK, net.gate_name(group), group.name)] = dra.root_share(group)[0]
    return rules_promql.DraAllocation(
        node_gpus=node_gpus,
        template_gpus=templates,
        resource=rules_promql.ksm_resource(quota_resource(GPU_DEVICE_CLASS)),
    )


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    role = cluster_roles.of(fleet)
    if not role.runs_gpus:
        return _without_gpus(ctx, role)
    ns = telemetry.monitoring_namespace(fleet)
    resources: list[Resource] = []
    notes = []
    if fleet.telemetry.prometheus == "Install":
        # rules.py requires the version whenever an environment includes telemetry; without one the stage is
        # in no environment, and the plan only counts what it would bring.
        version = fleet.versions.kube_prometheus_stack
        resources.append(
            helm(
                "kubePrometheusStack",
                version,
                fleet=fleet,
                release=KPS_RELEASE,
                namespace=ns,
                values=telemetry.kube_prometheus_stack_values(fleet),
            )
        )
        notes.append(
            f"- Prometheus: kube-prometheus-stack {version} in `{ns}`; it selects ServiceMonitors, PodMonitors and"
            " PrometheusRules in every namespace."
        )
    else:
        notes.append(
            f"- Prometheus: existing, in `{ns}`. It must select objects labelled `gpufleet.io/monitoring=true` (or"
            " all), kube-state-metrics must export the node labels "
            + _and([f"`{label}`" for label in telemetry.ksm_node_labels(fleet)])
            + " (`--metric-labels-allowlist=nodes=[...]`), and Grafana's sidecar must load"
            " ConfigMaps labelled `grafana_dashboard=1`."
        )
    after = prometheus_dependency(ctx)
    resources.append(k8s(telemetry.dcgm_service_monitor(), depends_on=after))
    groups = rules_promql.telemetry_groups(
        fleet.telemetry.idle_sm_active_below, devices_per_gpu(ctx), whole_gpu_groups(ctx), dra_allocation(ctx)
    )
    resources.append(k8s(rules_promql.prometheus_rule("gpufleet-telemetry", ns, groups), depends_on=after))
    resources.append(
        k8s(
            telemetry.dashboard_configmap(
                "gpufleet-dashboard-gpu-truth", ns, "gpufleet-gpu-truth.json", dashboards.telemetry_dashboard()
            ),
            depends_on=after,
        )
    )
    notes += _inference(ctx, ns, after, resources)
    notes += _dra_notes(ctx)
    notes += [
        f"- DCGM exporter counters (ConfigMap `{telemetry.DCGM_METRICS_CONFIGMAP}`, created in stage 1 with the GPU"
        " Operator, which mounts it): "
        + ", ".join(f"`{f}`" for f, kind, _ in telemetry.DCGM_FIELDS if kind != "label")
        + ".",
        (
            "- A GPU counts as idle when its SM active ratio (5 m average) is below"
            f" {fleet.telemetry.idle_sm_active_below:g}."
        ),
        (
            "- Alerts: GPUNodeZeroAllocatable, GPUXidHardwareError, GPUXidError, GPUThermalThrottling,"
            " GPUPowerThrottling, GPUUtilizationMisleading, GPUAllocatedIdle, GPUNodeGroupFragmented."
        ),
    ]
    return StageContent(resources=tuple(resources), notes=tuple(notes))


def _dra_notes(ctx: BuildContext) -> list[str]:
    """What the figures of DRA groups come from (docs/dra.md, Telemetry and health)."""
    groups = telemetry.dra_groups(ctx.fleet)
    if not groups:
        return []
    names = ", ".join(f"`{g}`" for g in groups)
    idle = (
        "idle GPUs from dcgm-exporter, which maps each claimed GPU to its pod (`KUBERNETES_ENABLE_DRA`, with the"
        f" ClusterRole `{telemetry.DCGM_EXPORTER_RESOURCESLICES}` to watch ResourceSlices, created in stage 1)"
        if telemetry.exporter_maps_dra(ctx.fleet)
        else "no idle GPUs: dcgm-exporter maps no claimed GPU to its pod while `KUBERNETES_VIRTUAL_GPUS` is on for"
        " the time-sliced and MPS groups (it returns before its DRA mapping), so their series carry no pod"
    )
    return [
        f"- DRA groups ({names}): a pod's GPUs are its claims (`kube_pod_resourceclaim_info` of kube-state-metrics)"
        " times the GPUs of their ResourceClaimTemplate (`gpufleet:dra_template_gpus`, every template gpufleet"
        " renders; a claim of any other is not counted), a node's GPUs its instance type's (`gpufleet:dra_node_gpus`:"
        " the node advertises no `nvidia.com/gpu`, so GPUNodeZeroAllocatable leaves it out); " + idle + "."
    ]


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def _without_gpus(ctx: BuildContext, role: cluster_roles.ClusterRole) -> StageContent:
    """A cluster of no GPU node group (a MultiKueue manager): Prometheus, with what its role adds to
    kube-state-metrics, and the role's rules; nothing of DCGM."""
    fleet = ctx.fleet
    ns = telemetry.monitoring_namespace(fleet)
    resources: list[Resource] = []
    extra = role.kube_state_metrics_values(fleet)
    notes = []
    if fleet.telemetry.prometheus == "Install":
        version = fleet.versions.kube_prometheus_stack
        values = overlaid(telemetry.kube_prometheus_stack_values(fleet), {"kube-state-metrics": extra})
        resources.append(
            helm("kubePrometheusStack", version, fleet=fleet, release=KPS_RELEASE, namespace=ns, values=values)
        )
        notes.append(f"- Prometheus: kube-prometheus-stack {version} in `{ns}`; no GPU telemetry (no GPU node group).")
    else:
        notes.append(
            f"- Prometheus: existing, in `{ns}`; its kube-state-metrics must export the MultiKueueClusters' conditions"
            ' (docs/multi-cluster.md, "Rotating credentials").'
        )
    groups = role.rule_groups(fleet)
    if groups:
        resources.append(
            k8s(rules_promql.prometheus_rule("gpufleet-multikueue", ns, groups), depends_on=prometheus_dependency(ctx))
        )
        alerts = ", ".join(r["alert"] for g in groups for r in g["rules"] if "alert" in r)
        notes.append(f'- Alerts: {alerts} (docs/multi-cluster.md, "Rotating credentials").')
    return StageContent(resources=tuple(resources), notes=tuple(notes))


def _inference(ctx: BuildContext, ns: str, after: tuple[str, ...], resources: list[Resource]) -> list[str]:
    """Where the fleet has an Inference group: KEDA, the serving PodMonitor and the serving signals' rules."""
    groups = inference.inference_groups(ctx.fleet)
    if not groups:
        return []
    version = ctx.fleet.versions.keda
    resources.append(
        helm(
            "keda",
            version,
            fleet=ctx.fleet,
            release=inference.KEDA_RELEASE,
            namespace=inference.NS_KEDA,
            values=inference.keda_values(),
            # The chart renders the operator's and metrics server's ServiceMonitors (keda_values) unguarded by
            # .Capabilities (kedacore/charts keda/templates/manager/servicemonitor.yaml @ keda-2.20.2): Helm refuses
            # the whole install while the installed stack's CRD is missing.
            depends_on=after,
        )
    )
    resources.append(k8s(inference.serving_pod_monitor(ctx.fleet, ns), depends_on=after))
    resources.append(
        k8s(rules_promql.prometheus_rule("gpufleet-inference", ns, inference.serving_groups()), depends_on=after)
    )
    return [
        f"- Inference ({', '.join(groups)}): KEDA {version} in `{inference.NS_KEDA}`; serving pods labelled"
        f" `{inference.SERVING_METRICS_LABEL}=true` are scraped on their port `{inference.SERVING_METRICS_PORT}`,"
        f" and `{inference.QUEUE_DEPTH}`, `{inference.QUEUE_WAIT}` and `{inference.BATCH_SIZE}` are recorded per"
        " namespace from vLLM, Triton and TGI metrics for ScaledObjects to scale on (docs/inference.md).",
        *serving_start.notes(ctx.fleet),
    ]
