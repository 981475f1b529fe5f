"""Storage stage, checkpoints.mountpoint: the Mountpoint for Amazon S3 CSI driver, the teams' S3 volumes
(gpufleet.plan.manifests.mountpoint) and their weight prefetch (gpufleet.plan.manifests.prefetch), and plan.md's
tables of them."""

from __future__ import annotations

from gpufleet.plan.builders import serving_start
from gpufleet.plan.builders.common import helm, k8s
from gpufleet.plan.manifests import mountpoint as mp
from gpufleet.plan.manifests import prefetch
from gpufleet.plan.manifests import storage as st
from gpufleet.plan.parts import Resource
from gpufleet.spec.fleet import Fleet


def content(fleet: Fleet) -> tuple[list[Resource], list[str], list[str]]:
    """The release, each PV and its PVC (the PVC after its PV, so it binds at once), plan.md's notes, and a warning
    where an Inference group's cache cannot hold the weights a node of a replica loads (workloads.servingModelGB)."""
    options = mp.enabled(fleet)
    cp = fleet.checkpoints
    if options is None or cp is None:
        return [], [], []
    warnings: list[str] = []
    version = fleet.versions.mountpoint_s3_csi
    release = helm(
        "mountpointS3Csi", version, fleet=fleet, release=mp.RELEASE, namespace=mp.NAMESPACE, values=mp.values()
    )
    resources: list[Resource] = [release]
    claims: dict[tuple[str, str], str] = {}
    rows = [
        "",
        (
            f"Mountpoint for Amazon S3 CSI driver {version} (`{mp.NAMESPACE}`; its node plugin tolerates every taint,"
            " so it runs on every group): each team's prefix as a PersistentVolumeClaim per node group of its quotas."
            f" Pods mount it with `serviceAccountName: {st.CHECKPOINT_SERVICE_ACCOUNT}` (pod-level credentials: the"
            f" team's role), as uid {options.uid} / gid {options.gid}."
        ),
        "",
        "| team | claim (namespace/name) | node group | S3 prefix | access | Mountpoint throughput | local cache |",
        "|---|---|---|---|---|---|---|",
    ]
    for team, group, pv, pvc in mp.volumes(fleet):
        pv_resource = k8s(pv)
        pvc_resource = k8s(pvc, depends_on=(pv_resource.id,))
        resources += [pv_resource, pvc_resource]
        claims[(team.name, group.name)] = pvc_resource.id
        cache = mp.cache_gb(fleet, options, group)
        share = serving_start.weights_per_node_gb(fleet, group)
        if cache is not None and share is not None and share > cache:
            warnings.append(
                f"claim {team.namespace}/{mp.claim_name(group)}: its Mountpoint cache on node group {group.name}"
                f" ({cache} GB) cannot hold the {share:g} GB of weights a node of a replica loads"
                " (workloads.servingModelGB): every load reads from S3; raise checkpoints.mountpoint.cacheFraction"
            )
        rows.append(
            f"| {team.name} | `{team.namespace}/{mp.claim_name(group)}` | {group.name} |"
            f" `s3://{cp.bucket}/{st.team_prefix(team)}` | {'read-only' if mp.read_only(group) else 'read-write'} |"
            f" {mp.throughput_gbps(group)} Gbps |"
            f" {f'{cache} GB on the NVMe array (emptyDir)' if cache is not None else 'none (no RAID0 array)'} |"
        )
    prefetch_resources, prefetch_rows = _prefetch(fleet, claims, release.id)
    return resources + prefetch_resources, rows + prefetch_rows, warnings


def _prefetch(fleet: Fleet, claims: dict[tuple[str, str], str], release: str) -> tuple[list[Resource], list[str]]:
    """Per team with teams[].prefetch: its script's ConfigMap, then a DaemonSet per group after the group's claim and
    the driver's release (an upgrade of the driver rolls the DaemonSet after it: prefetch.DRIVER_ANNOTATION)."""
    entries = prefetch.entries(fleet)
    if not entries:
        return [], []
    resources: list[Resource] = []
    scripts: dict[str, str] = {}
    rows = [
        "",
        (
            "Weight prefetch (teams[].prefetch): on every node of the group, a pod of the team's DaemonSet mounts the"
            " claim and reads the paths into the node's Mountpoint cache as the node starts, then every"
            f" {prefetch.INTERVAL_SECONDS // 60} minutes what is new or changed; its mount keeps the node's Mountpoint"
            " Pod, and the cache, between serving pods. Serving pods share it only with the same service account and"
            " no fsGroup (docs/inference.md). The DaemonSet rolls with the CSI driver: the driver gives new pods no"
            " Mountpoint Pod another driver version created."
        ),
        "",
        "| team | DaemonSet (namespace/name) | node group | paths (under the claim) | cache per node |",
        "|---|---|---|---|---|",
    ]
    options = mp.enabled(fleet)
    assert options is not None
    for team, group, entry in entries:
        if team.name not in scripts:
            config = k8s(prefetch.configmap(team))
            resources.append(config)
            scripts[team.name] = config.id
        resources.append(
            k8s(
                prefetch.daemonset(fleet, team, group, entry),
                depends_on=(claims[(team.name, group.name)], scripts[team.name], release),
            )
        )
        cache = mp.cache_gb(fleet, options, group)
        rows.append(
            f"| {team.name} | `{team.namespace}/{prefetch.daemonset_name(group)}` | {group.name} |"
            f" {', '.join(f'`{p}`' for p in entry.paths)} | {f'{cache} GB' if cache is not None else 'none'} |"
        )
    rows.append("")
    return resources, rows
