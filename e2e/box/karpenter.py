"""Karpenter for real: its own controllers, built with its kwok cloud provider, launch the fleet's Karpenter pools.

The box runs sigs.k8s.io/karpenter (e2e/karpenter: upstream's kwok main plus the AWS provider's reservation label)
with the settings gpufleet writes: the AWS provider's chart, rendered from its module with the tree's values, gives
the controller's environment (FEATURE_GATES, BATCH_*_DURATION, ...) as on EKS. What the box supplies in place of
AWS, and what that leaves untested:

- Instance types: the kwok provider reads them from a file. Each of the pools' types gets the capacity the AWS
  provider computes from EC2's DescribeInstanceTypes (computeCapacity in aws/karpenter-provider-aws
  pkg/providers/instancetype/types.go @v1.14.1: cpu, memory less the VM overhead, ephemeral-storage, pods,
  nvidia.com/gpu, vpc.amazonaws.com/efa), ported here onto EC2's data as moto ships it, with the EC2NodeClass
  the pool names; the kwok provider's own overhead (100m CPU, 10Mi) stands in for the AWS provider's
  kube-reserved and eviction figures. Offerings: on-demand and spot in each zone, and one reserved offering per
  capacity reservation an EC2NodeClass selects by id, with as many instances as the spec says it holds.
- Node classes: the kwok provider launches only for KWOKNodeClass (karpenter.kwok.sh), and a NodePool's
  nodeClassRef group and kind are immutable (its CRD's CEL), so each NodePool is applied pointing at a KWOKNodeClass
  of its EC2NodeClass's name, marked Ready as the AWS provider's node class controller would mark the EC2NodeClass.
  The EC2NodeClass objects themselves are applied unchanged and validated by the API server; no AWS API is called.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from e2e.box import apply, build, charts, processes
from e2e.box.cluster import Cluster, free_port
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.nodes import fleet_nodes
from gpufleet.simulate.workload import quantity

AWS_PROVIDER = "github.com/aws/karpenter-provider-aws"
KWOK_GROUP, KWOK_KIND = "karpenter.kwok.sh", "KWOKNodeClass"
# aws/karpenter-provider-aws pkg/apis/v1/labels.go @v1.14.1
ZONE_ID = "topology.k8s.aws/zone-id"
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
# pkg/operator/options/options.go @v1.14.1: VM_MEMORY_OVERHEAD_PERCENT's default, which the chart's
# settings.vmMemoryOverheadPercent (0.075) repeats.
VM_MEMORY_OVERHEAD = 0.075


def managed_by_karpenter(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "NodePool" and str(obj.get("apiVersion", "")).startswith("karpenter.sh/")


def to_kwok(obj: dict[str, Any]) -> dict[str, Any]:
    """A NodePool as the box applies it when Karpenter runs: its nodeClassRef on the KWOKNodeClass of that name."""
    if not managed_by_karpenter(obj):
        return obj
    out = copy.deepcopy(obj)
    ref = out["spec"]["template"]["spec"]["nodeClassRef"]
    ref.update(group=KWOK_GROUP, kind=KWOK_KIND)
    return out


def _zone_prefix(region: str) -> str:
    """us-east-1 -> use1, as EC2's zone ids are spelt (use1-az4)."""
    parts = region.split("-")
    return parts[0] + "".join(p[0] for p in parts[1:-1]) + parts[-1]


def _requirement(pool: dict[str, Any], key: str) -> list[str]:
    for req in pool["spec"]["template"]["spec"].get("requirements", []):
        if req["key"] == key and req["operator"] == "In":
            return list(req["values"])
    return []


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


@dataclass(frozen=True)
class Zone:
    name: str
    id: str


def zones(region: str, pools: list[dict[str, Any]]) -> list[Zone]:
    prefix = _zone_prefix(region)
    ids = sorted({z for p in pools for z in _requirement(p, ZONE_ID)} | {f"{prefix}-az1", f"{prefix}-az2"})
    return [Zone(f"{region}{chr(ord('a') + i)}", zid) for i, zid in enumerate(ids)]


def capacity(info: dict[str, Any], node_class: dict[str, Any]) -> dict[str, str]:
    """computeCapacity of the AWS provider (types.go @v1.14.1) for one instance type and EC2NodeClass."""
    spec = node_class["spec"]
    mib = info["MemoryInfo"]["SizeInMiB"]
    memory = mib - math.ceil(mib * VM_MEMORY_OVERHEAD)
    storage = info.get("InstanceStorageInfo", {}).get("TotalSizeInGB")
    if spec.get("instanceStorePolicy") == "RAID0" and storage:
        ephemeral = f"{storage}G"
    else:
        root = [b for b in spec.get("blockDeviceMappings", []) if b.get("rootVolume")]
        ephemeral = root[0]["ebs"]["volumeSize"] if root else "20Gi"  # amifamily.DefaultEBS
    interfaces = spec.get("networkInterfaces")
    network = info["NetworkInfo"]
    if interfaces is not None:
        efas = sum(1 for n in interfaces if n["interfaceType"] == "efa-only")
    else:
        efas = (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)
    max_pods = (spec.get("kubelet") or {}).get("maxPods")
    if max_pods is None:
        # ENILimitedPods: default card's ENIs, less EFA-only ones on card 0, times (addresses - 1), plus 2.
        efa_only_card0 = sum(
            1 for n in interfaces or [] if n["interfaceType"] == "efa-only" and n["networkCardIndex"] == 0
        )
        default_card = network["NetworkCards"][network["DefaultNetworkCardIndex"]]
        enis = max(default_card["MaximumNetworkInterfaces"] - efa_only_card0, 0)
        max_pods = enis * (network["Ipv4AddressesPerInterface"] - 1) + 2 if enis else 0
    gpus = sum(g["Count"] for g in (info.get("GpuInfo") or {}).get("Gpus", []) if g["Manufacturer"] == "NVIDIA")
    return {
        "cpu": str(info["VCpuInfo"]["DefaultVCpus"]),
        "memory": f"{memory}Mi",
        "ephemeral-storage": str(ephemeral),
        "pods": str(max_pods),
        "nvidia.com/gpu": str(gpus),
        "vpc.amazonaws.com/efa": str(efas),
    }


def _minimum(a: dict[str, str], b: dict[str, str]) -> dict[str, str]:
    """Where two node classes give one instance type different figures, the smaller: the kwok provider has one
    capacity per instance type, and what fits the smaller fits both."""
    return {k: min(a[k], b[k], key=lambda q: quantity(k, q, "instance type")) for k in a}


def instance_types(plan: RolloutPlan, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kwok provider's instance-types file for the tree's NodePools (kwok/cloudprovider/helpers.go
    InstanceTypeOptions @v1.14.1)."""
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    pools = [o for o in objects if managed_by_karpenter(o)]
    classes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "EC2NodeClass"}
    reserved = {m.node_pool: m.reserved or m.max_size for m in fleet_nodes(plan) if m.node_pool}
    all_zones = zones(plan.fleet.cluster.region, pools)
    by_type: dict[str, dict[str, Any]] = {}
    for pool in pools:
        node_class = classes[pool["spec"]["template"]["spec"]["nodeClassRef"]["name"]]
        pool_zones = [z for z in all_zones if z.id in _requirement(pool, ZONE_ID)] or all_zones
        reservations = [t["id"] for t in node_class["spec"].get("capacityReservationSelectorTerms", []) if "id" in t]
        for name in _requirement(pool, "node.kubernetes.io/instance-type"):
            info = INSTANCE_TYPES[name]
            resources = capacity(info, node_class)
            entry = by_type.setdefault(
                name,
                {
                    "name": name,
                    "architecture": "amd64",
                    "operatingSystems": ["linux"],
                    "resources": resources,
                    "offerings": _open_offerings(name, info, all_zones),
                },
            )
            entry["resources"] = _minimum(entry["resources"], resources)
            for rid in reservations:
                zone = pool_zones[0]
                entry["offerings"].append(
                    {
                        "Price": _price(info, "reserved"),
                        "Available": True,
                        "ReservationCapacity": reserved[pool["metadata"]["name"]],
                        "Requirements": [
                            _in("karpenter.sh/capacity-type", "reserved"),
                            _in("topology.kubernetes.io/zone", zone.name),
                            _in(ZONE_ID, zone.id),
                            _in(RESERVATION_ID, rid),
                        ],
                    }
                )
    return list(by_type.values())


def _price(info: dict[str, Any], capacity_type: str) -> float:
    """A price that orders as EC2's do (spot below on-demand, reserved below both); Karpenter picks the cheapest
    compatible offering, and no test here asserts a price."""
    gpus = sum(g["Count"] for g in (info.get("GpuInfo") or {}).get("Gpus", []))
    on_demand = 0.05 * info["VCpuInfo"]["DefaultVCpus"] + 4.0 * gpus
    return round(on_demand * {"on-demand": 1.0, "spot": 0.4, "reserved": 0.01}[capacity_type], 4)


def _open_offerings(name: str, info: dict[str, Any], all_zones: list[Zone]) -> list[dict[str, Any]]:
    return [
        {
            "Price": _price(info, ct),
            "Available": True,
            "Requirements": [
                _in("karpenter.sh/capacity-type", ct),
                _in("topology.kubernetes.io/zone", z.name),
                _in(ZONE_ID, z.id),
            ],
        }
        for z in all_zones
        for ct in ("on-demand", "spot")
    ]


def node_classes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = sorted({o["spec"]["template"]["spec"]["nodeClassRef"]["name"] for o in objects if managed_by_karpenter(o)})
    return [{"apiVersion": f"{KWOK_GROUP}/v1alpha1", "kind": KWOK_KIND, "metadata": {"name": n}} for n in names]


def _crds() -> list[dict[str, Any]]:
    """The KWOKNodeClass CRD, from the module the box builds Karpenter from."""
    root = build.module_dir("sigs.k8s.io/karpenter", build.required(build.KARPENTER, "sigs.k8s.io/karpenter"))
    return list(charts.docs((root / "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml").read_text()))


def controller_env(
    helm: Path, values: dict[str, Any], namespace: str, version: str, kube_version: str
) -> dict[str, str]:
    """The controller container's literal environment as the AWS provider's chart renders it with the tree's
    values (aws/karpenter-provider-aws charts/karpenter/templates/deployment.yaml at the chart's release)."""
    tag = "v" + version.lstrip("v")
    subprocess.run(
        ["go", "mod", "download", f"{AWS_PROVIDER}@{tag}"], env=build.go_env(), capture_output=True, check=True
    )
    source = charts.ChartSource(AWS_PROVIDER, "charts/karpenter", version, pinned=tag)
    rendered = charts.render(helm, "karpenter", namespace, source, values, kube_version)
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}


# What a node's device plugins and kubelet register beyond the instance type (the NVIDIA device plugin's GPUs, MIG
# slices or time-sliced replicas, the EFA plugin's interfaces, the kubelet's huge pages): the kwok provider gives a
# node only its instance type's figures and the NodeClaim's requests ("NodeOverlay will not apply",
# kwok/cloudprovider/cloudprovider.go toNode @v1.14.1), so the box registers these as gpufleet's node model says the
# group's nodes do, as it does for the pre-created nodes (e2e.box.nodes).
REGISTERED = ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "hugepages-2Mi", "hugepages-1Gi")
MARK = "gpufleet.io/box-registered"


class Running:
    """The Karpenter process, and a thread registering each node it launches as the group's node model says."""

    def __init__(self, cluster: Cluster, process: processes.Process, env: dict[str, str], plan: RolloutPlan) -> None:
        self.process, self.env, self.cluster = process, env, cluster
        self.models = {m.node_pool: m for m in fleet_nodes(plan) if m.node_pool}
        self.registered: list[str] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._register_loop, name="box-karpenter-nodes", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _register_loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                for node in self.cluster.admin.list("v1", "Node", labelSelector="karpenter.sh/nodepool"):
                    if MARK not in node["metadata"].get("annotations", {}):
                        self._register(node)
            except Exception as exc:  # noqa: BLE001 - the box shuts down under it; recorded, printed by the test
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def _register(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        model = self.models.get(node["metadata"]["labels"]["karpenter.sh/nodepool"])
        extra = (
            {}
            if model is None
            else {r: _quantity(r, model.allocatable[r]) for r in REGISTERED if model.allocatable.get(r)}
        )
        status = {k: {**node["status"].get(k, {}), **extra} for k in ("capacity", "allocatable")}
        self.cluster.admin.request(
            "PATCH", f"/api/v1/nodes/{name}/status", {"status": status}, content_type="application/merge-patch+json"
        )
        self.cluster.admin.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"metadata": {"annotations": {MARK: "true"}}},
            content_type="application/merge-patch+json",
        )
        self.registered.append(name)


def _quantity(resource: str, value: int) -> str:
    return f"{value}Mi" if resource.startswith("hugepages-") else str(value)


def release(tree: Path) -> dict[str, Any]:
    """The karpenter Helm release of a synth tree (chart, version, namespace, values)."""
    for path in sorted(tree.glob("*/helm/karpenter.yaml")):
        return dict(yaml.safe_load(path.read_text()))
    raise RuntimeError(f"{tree} has no karpenter release: the spec has no Karpenter node group")


def start(cluster: Cluster, plan: RolloutPlan, tree: Path, kube_version: str) -> Running:
    """Karpenter against the box: its kwok node class CRD and classes, the instance types, then the controller."""
    objects = apply.objects(tree)
    helm = release(tree)
    root = cluster.root / "karpenter"
    root.mkdir(parents=True, exist_ok=True)
    for crd in _crds():
        cluster.admin.apply(crd)
    cluster.admin.wait_for_kind(f"{KWOK_GROUP}/v1alpha1", KWOK_KIND)
    for node_class in node_classes(objects):
        cluster.admin.apply(node_class)
        cluster.admin.request(
            "PATCH",
            f"/apis/{KWOK_GROUP}/v1alpha1/kwoknodeclasses/{node_class['metadata']['name']}/status",
            {"status": {"conditions": [_ready()]}},
            content_type="application/merge-patch+json",
        )
    types_file = root / "instance-types.json"
    types_file.write_text(json.dumps(instance_types(plan, objects), indent=2))
    namespace = helm["namespace"]
    env = controller_env(
        cluster.binaries["helm"], helm.get("values") or {}, namespace, str(helm["version"]), kube_version
    )
    health = free_port()
    env.update(
        KUBECONFIG=str(
            cluster.kubeconfig_for("karpenter", f"system:serviceaccount:{namespace}:karpenter", ("system:masters",))
        ),
        INSTANCE_TYPES_FILE_PATH=str(types_file),
        SYSTEM_NAMESPACE=namespace,
        METRICS_PORT=str(free_port()),
        HEALTH_PROBE_PORT=str(health),
        DISABLE_LEADER_ELECTION="true",
        HOME=str(root),
        PATH="/usr/bin:/bin",
    )
    proc = cluster.start("karpenter", [str(cluster.binaries["karpenter"])], env=env)
    processes.wait_for(
        "karpenter ready",
        lambda: requests.get(f"http://127.0.0.1:{health}/readyz", timeout=2).status_code == 200,
        proc,
        timeout=120,
    )
    return Running(cluster, proc, env, plan)


def _ready() -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1,
    }
