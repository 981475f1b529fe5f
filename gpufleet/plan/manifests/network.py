"""Network (stage 5) as plain data: EFA device plugin values, the NVIDIA Network Operator's NicClusterPolicy,
Multus (thick plugin), NetworkAttachmentDefinitions, the nccl-env ConfigMaps and the bandwidth gate.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/manifests/network.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpufleet.base.render import render
from gpufleet.facts import catalog
from gpufleet.facts.versions import NETWORK_OPERATOR
from gpufleet.plan.manifests import checkov, node_bootstrap
from gpufleet.spec import defaults, images
from gpufleet.spec.devices import DEVICE_PLUGIN, LABEL_DEVICE_MANAGER
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, NodeGroup, Rdma, RdmaNetwork
from gpufleet.spec.names import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    LABEL_FABRIC,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    NS_NETWORK,
    SKIP_AWAIT,
    group_taints,
    tolerations_for,
)

# EFA_RESOURCE is advertised by the AWS EFA device plugin (aws/eks-charts stable/aws-efa-k8s-device-plugin
# templates/NOTES.txt).
# Why: docs/network-and-storage.md, "Design notes", network.EFA_HUGEPAGES.
EFA_HUGEPAGES = "5120Mi"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

# The Network Operator deploys its operands (device plugin, CNI plugins, nv-ipam) into its release namespace;
# nv-ipam IPPools live there too.
NS_NETWORK_OPERATOR = "nvidia-network-operator"
# The operator reconciles only the NicClusterPolicy of this name (Mellanox/network-operator
# controllers/nicclusterpolicy_controller.go @v26.4.1, consts.NicClusterPolicyResourceName).
NIC_CLUSTER_POLICY = "nic-cluster-policy"
MELLANOX_VENDOR_ID = "15b3"

NCCL_ENV = "nccl-env"
# NCCL's name of the aws-ofi-nccl plugin when NCCL_NET selects it.
EFA_NET = "AWS Libfabric"
RDMA_NET = "IB"  # NCCL's built-in verbs transport (NVIDIA/nccl src/transport/net_ib/common.cc)

GATE_LABEL = "gpufleet.io/gate"
# nccl-tests fails a run whose average bus bandwidth is below 0.9 x NCCL_TESTS_MIN_BW (NVIDIA/nccl-tests
# src/common.cu: `bw[0] < check_avg_bw*(0.9)`).
NCCL_TESTS_SLACK = 0.9
# Message sizes of the gate: the bandwidth plateau only (the average is over every size tested, so small
# messages would measure latency, not the fabric).
GATE_SIZES = ("1G", "4G")
SSH_PORT = 22
KEY_PORT = 8022
# All the gate keeps of the runtime's capabilities: sshd, as root, needs SETUID/SETGID/SYS_CHROOT for privilege
# separation and NET_BIND_SERVICE for port 22 (checked against OpenSSH with PAM under no_new_privs).
GATE_CAPABILITIES = ("NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT")


def fabric_groups(fleet: Fleet, fabric: Fabric) -> list[NodeGroup]:
    return [g for g in fleet.node_groups if g.fabric is fabric]


def _unique(tolerations: list[dict[str, str]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for t in tolerations:
        if t not in out:
            out.append(t)
    return out


def group_tolerations(groups: list[NodeGroup]) -> list[dict[str, str]]:
    """Tolerations matching every taint of every given group, each once, in group order."""
    return _unique([t for g in groups for t in tolerations_for(group_taints(g))])


def fabric_selector(fabric: Fabric) -> dict[str, str]:
    return {LABEL_FABRIC: fabric.value}


# --- EFA -------------------------------------------------------------------------------------------------------


def efa_device_plugin_values(groups: list[NodeGroup]) -> dict[str, Any]:
    """Values of the aws-efa-k8s-device-plugin chart: only the EFA groups whose devices the device plugin hands out
    (`groups`; not those with devices DRA, where the EFA DRA driver does), tolerating all of their taints.

    Why: docs/network-and-storage.md, "Design notes", network.efa_device_plugin_values."""
    return {
        "nodeSelector": {**fabric_selector(Fabric.EFA), LABEL_DEVICE_MANAGER: DEVICE_PLUGIN.name},
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": sorted({g.instance_type for g in groups})},
        "tolerations": group_tolerations(groups),
    }


# --- NCCL settings -------------------------------------------------------------------------------------------


def nccl_env(fabric: Fabric, rdma: Rdma | None = None) -> dict[str, str]:
    """The NCCL/libfabric settings pinned per fabric (docs/network-and-storage.md explains each one).

    Why: docs/network-and-storage.md, "Design notes", network.nccl_env."""
    if fabric is Fabric.EFA:
        return {"FI_PROVIDER": "efa", "NCCL_NET": EFA_NET, "NCCL_SOCKET_IFNAME": "=eth0"}
    if fabric is Fabric.RDMA:
        assert rdma is not None
        return {
            "NCCL_IB_HCA": "=" + ",".join(n.hca for n in rdma.networks),
            "NCCL_NET": RDMA_NET,
            "NCCL_SOCKET_IFNAME": "=" + rdma.socket_interface,
        }
    raise ValueError(f"no NCCL settings for fabric {fabric}")


def nccl_env_name(fabric: Fabric) -> str:
    return f"{NCCL_ENV}-{fabric.value.lower()}"


def nccl_env_configmap(fabric: Fabric, namespace: str, env: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": nccl_env_name(fabric),
            "namespace": namespace,
            "labels": {**LABEL_MANAGED_BY, LABEL_FABRIC: fabric.value},
            "annotations": {"gpufleet.io/usage": f"envFrom: [{{configMapRef: {{name: {nccl_env_name(fabric)}}}}}]"},
        },
        "data": dict(sorted(env.items())),
    }


# --- RDMA: Network Operator, Multus, secondary networks --------------------------------------------------------


def rdma_resource(rdma: Rdma) -> str:
    """The extended resource pods request for the RDMA devices (the plugin's default prefix is rdma)."""
    return f"rdma/{rdma.resource_name}"


def network_operator_values() -> dict[str, Any]:
    """Chart values: no second Node Feature Discovery (the GPU Operator runs one with the NodeFeature API), but
    keep the chart's NodeFeatureRule that labels nodes with NVIDIA NICs (feature.node.kubernetes.io/pci-15b3.present),
    which the operator reads."""
    return {"nfd": {"enabled": False, "deployNodeFeatureRules": True}}


def rdma_device_plugin_config(rdma: Rdma) -> str:
    """k8s-rdma-shared-dev-plugin config: one shared resource over the fleet's RDMA ports (selected by netdev)."""
    config = {
        "configList": [
            {
                "resourceName": rdma.resource_name,
                "rdmaHcaMax": rdma.hca_max,
                "selectors": {"vendors": [MELLANOX_VENDOR_ID], "ifNames": [n.interface for n in rdma.networks]},
            }
        ]
    }
    return json.dumps(config, indent=2)


def _image(version: str, component: str) -> dict[str, str]:
    repository, image, tag = NETWORK_OPERATOR[version].operand_images[component]
    return {"repository": repository, "image": image, "version": tag}


def nic_cluster_policy(fleet: Fleet, version: str) -> dict[str, Any]:
    """The NicClusterPolicy (mellanox.com/v1alpha1): RDMA shared device plugin, CNI plugins (+ IPoIB on
    InfiniBand) and nv-ipam, on RDMA groups only.

    Why: docs/network-and-storage.md, "Design notes", network.nic_cluster_policy."""
    rdma = fleet.network.rdma
    assert rdma is not None
    groups = fabric_groups(fleet, Fabric.RDMA)
    secondary: dict[str, Any] = {"cniPlugins": _image(version, "cniPlugins")}
    if rdma.link_type == "InfiniBand":
        secondary["ipoib"] = _image(version, "ipoib")
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": NIC_CLUSTER_POLICY, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": LABEL_FABRIC, "operator": "In", "values": [Fabric.RDMA.value]}]}
                    ]
                }
            },
            "tolerations": group_tolerations(groups),
            "rdmaSharedDevicePlugin": {
                **_image(version, "rdmaSharedDevicePlugin"),
                "config": rdma_device_plugin_config(rdma),
            },
            "secondaryNetwork": secondary,
            "nvIpam": {**_image(version, "nvIpam"), "enableWebhook": False},
        },
    }


def network_attachment(rdma: Rdma, net: RdmaNetwork) -> dict[str, Any]:
    """One secondary network on one RDMA port: IPoIB on InfiniBand, macvlan on RoCE; addresses from nv-ipam.

    Why: docs/network-and-storage.md, "Design notes", network.network_attachment."""
    config: dict[str, Any] = {"cniVersion": "0.3.1", "name": net.name}
    if rdma.link_type == "InfiniBand":
        config.update({"type": "ipoib", "master": net.interface})
    else:
        config.update({"type": "macvlan", "master": net.interface, "mode": "bridge"})
    config["ipam"] = {"type": "nv-ipam", "poolName": net.ip_pool}
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": net.name, "namespace": NS_NETWORK, "labels": dict(LABEL_MANAGED_BY)},
        "spec": {"config": json.dumps(config, indent=2)},
    }


def networks_annotation(rdma: Rdma) -> str:
    """The pod annotation value attaching every secondary network (namespace-qualified)."""
    return ",".join(f"{NS_NETWORK}/{n.name}" for n in rdma.networks)


# Checkov checks that are wrong for the Multus daemon, with the reason (docs/policies-and-diff.md, "Checkov"): it is
# upstream's thick-plugin DaemonSet, part of every RDMA node's pod networking, and privileged by design.
_MULTUS_CHECKOV_SKIPS = {
    "CKV_K8S_16": (
        "the thick Multus daemon runs the delegate CNI plugins for every pod on the node, entering pod network "
        "namespaces and the host root (/hostroot); upstream's multus-daemonset-thick.yml runs it privileged"
    ),
    "CKV_K8S_17": (
        "upstream's thick-plugin manifest runs the daemon in the host PID namespace, as part of the node's pod"
        " networking"
    ),
    "CKV_K8S_19": (
        "a CNI daemon cannot use the pod network it sets up: it runs in the host network namespace, as upstream's"
        " manifest does"
    ),
    "CKV_K8S_20": (
        "privileged containers always allow privilege escalation; the API rejects allowPrivilegeEscalation false with"
        " privileged true"
    ),
    "CKV_K8S_22": (
        "a privileged container can remount its root filesystem, so read-only would not contain it; upstream does not"
        " run it read-only"
    ),
    "CKV_K8S_23": (
        "it installs the CNI shim into the host's /opt/cni/bin and writes the host's CNI configuration, both owned by"
        " root"
    ),
    "CKV_K8S_40": (
        "runs as root on purpose (see CKV_K8S_23): it writes root-owned CNI binaries and configuration on the host"
    ),
    "CKV_K8S_28": (
        "a privileged container holds every capability; the runtime applies capability lists only to unprivileged"
        " containers"
    ),
    "CKV_K8S_37": (
        "a privileged container holds every capability; the runtime applies capability lists only to unprivileged"
        " containers"
    ),
    "CKV_K8S_29": "both containers are privileged root by design, so a pod security context could not restrict them",
    "CKV_K8S_31": "Kubernetes runs privileged containers Unconfined whatever seccomp profile the pod names",
    "CKV_K8S_38": (
        "the daemon reads NetworkAttachmentDefinitions and pods and writes pod network status through the API"
    ),
    "CKV_K8S_8": (
        "the daemon has no health endpoint, only the CNI shim's Unix socket on the host, and upstream defines no probe;"
        " the kubelet restarts it if it exits"
    ),
    "CKV_K8S_9": "no Service selects the Multus daemon, so readiness has no consumer",
}


def multus_objects(fleet: Fleet) -> list[dict[str, Any]]:
    """Multus thick plugin, as k8snetworkplumbingwg/multus-cni deployments/multus-daemonset-thick.yml at the
    release, with the image pinned to the release's thick tag (upstream's file says :snapshot-thick) and the spec's
    digest of it where images.multus gives one (gpufleet.spec.images), in the network namespace, on RDMA nodes only.

    Why: docs/network-and-storage.md, "Design notes", network.multus_objects."""
    labels = {"app": "multus", "name": "multus", "tier": "node"}
    image = images.reference(fleet, "multus")
    daemon_config = {
        "chrootDir": "/hostroot",
        "cniVersion": "0.3.1",
        "logLevel": "verbose",
        "logToStderr": True,
        "cniConfigDir": "/host/etc/cni/net.d",
        "multusAutoconfigDir": "/host/etc/cni/net.d",
        "multusConfigFile": "auto",
        "socketDir": "/host/run/multus/",
    }
    host_paths = {
        "cni": "/etc/cni/net.d",
        "cnibin": "/opt/cni/bin",
        "hostroot": "/",
        "host-run": "/run",
        "host-var-lib-cni-multus": "/var/lib/cni/multus",
        "host-var-lib-kubelet": "/var/lib/kubelet",
        "host-run-k8s-cni-cncf-io": "/run/k8s.cni.cncf.io",
        "host-run-netns": "/run/netns/",
        "multus-conf-dir": "/etc/cni/multus/net.d",
    }
    volumes: list[dict[str, Any]] = [{"name": name, "hostPath": {"path": path}} for name, path in host_paths.items()]
    volumes.append(
        {
            "name": "multus-daemon-config",
            "configMap": {
                "name": "multus-daemon-config",
                "items": [{"key": "daemon-config.json", "path": "daemon-config.json"}],
            },
        }
    )
    mounts = [
        {"name": "cni", "mountPath": "/host/etc/cni/net.d"},
        # multus-daemon expects the CNI bin path to be identical in the pod and on the host.
        {"name": "cnibin", "mountPath": "/opt/cni/bin"},
        {"name": "host-run", "mountPath": "/host/run"},
        {"name": "host-var-lib-cni-multus", "mountPath": "/var/lib/cni/multus"},
        {"name": "host-var-lib-kubelet", "mountPath": "/var/lib/kubelet", "mountPropagation": "HostToContainer"},
        {"name": "host-run-k8s-cni-cncf-io", "mountPath": "/run/k8s.cni.cncf.io"},
        {"name": "host-run-netns", "mountPath": "/run/netns", "mountPropagation": "HostToContainer"},
        {"name": "multus-daemon-config", "mountPath": "/etc/cni/net.d/multus.d", "readOnly": True},
        {"name": "hostroot", "mountPath": "/hostroot", "mountPropagation": "HostToContainer"},
        {"name": "multus-conf-dir", "mountPath": "/etc/cni/multus/net.d"},
    ]
    meta = {"namespace": NS_NETWORK, "labels": {**LABEL_MANAGED_BY, **labels}}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "multus", **meta}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "multus", "labels": meta["labels"]},
            "rules": [
                # Upstream grants every verb on every k8s.cni.cncf.io resource; the daemon only reads
                # NetworkAttachmentDefinitions (an informer plus gets, pkg/k8sclient and pkg/server at the release).
                {
                    "apiGroups": ["k8s.cni.cncf.io"],
                    "resources": ["network-attachment-definitions"],
                    "verbs": ["get", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "list", "update", "watch"]},
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "multus", "labels": meta["labels"]},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "multus"},
            "subjects": [{"kind": "ServiceAccount", "name": "multus", "namespace": NS_NETWORK}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "multus-daemon-config", **meta},
            "data": {"daemon-config.json": json.dumps(daemon_config, indent=4) + "\n"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": "kube-multus-ds",
                **meta,
                "annotations": checkov.skip_annotations(_MULTUS_CHECKOV_SKIPS),
            },
            "spec": {
                "selector": {"matchLabels": {"name": "multus"}},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "hostNetwork": True,
                        "hostPID": True,
                        "nodeSelector": fabric_selector(Fabric.RDMA),
                        "priorityClassName": "system-node-critical",
                        "tolerations": [
                            {"operator": "Exists", "effect": "NoSchedule"},
                            {"operator": "Exists", "effect": "NoExecute"},
                        ],
                        "serviceAccountName": "multus",
                        "terminationGracePeriodSeconds": 10,
                        "initContainers": [
                            {
                                "name": "install-multus-binary",
                                "image": image,
                                "command": [
                                    "/usr/src/multus-cni/bin/install_multus",
                                    "-d",
                                    "/host/opt/cni/bin",
                                    "-t",
                                    "thick",
                                ],
                                # Upstream sets no memory limit here; the daemon's own limit is ample for copying the
                                # shim binary.
                                "resources": {
                                    "requests": {"cpu": "10m", "memory": "15Mi"},
                                    "limits": {"memory": "50Mi"},
                                },
                                "securityContext": {"privileged": True},
                                "terminationMessagePolicy": "FallbackToLogsOnError",
                                "volumeMounts": [
                                    {
                                        "name": "cnibin",
                                        "mountPath": "/host/opt/cni/bin",
                                        "mountPropagation": "Bidirectional",
                                    }
                                ],
                            }
                        ],
                        "containers": [
                            {
                                "name": "kube-multus",
                                "image": image,
                                "command": ["/usr/src/multus-cni/bin/multus-daemon"],
                                "env": [
                                    {
                                        "name": "MULTUS_NODE_NAME",
                                        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                                    }
                                ],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "50Mi"},
                                    "limits": {"cpu": "100m", "memory": "50Mi"},
                                },
                                "securityContext": {"privileged": True},
                                "terminationMessagePolicy": "FallbackToLogsOnError",
                                "volumeMounts": mounts,
                            }
                        ],
                        "volumes": volumes,
                    },
                },
            },
        },
    ]


# --- the bandwidth gate ----------------------------------------------------------------------------------------


def line_rate_gbytes(info: catalog.InstanceType) -> float:
    """The instance's rated network bandwidth in GB/s (nccl-tests reports bytes: Gbit/s / 8)."""
    return info.network_gbps / 8


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """One published healthy all_reduce_perf run across two instances: its bus bandwidth (GB/s, out-of-place and
    in-place) at the message sizes it printed within the gate's, as the source prints them."""

    instance_type: str
    where: str  # how it was launched: Slurm, AWS Batch, EKS (MPIJob)
    source: str  # repository file (and commit) that prints it
    rows: Mapping[str, tuple[float, float]]

    def average(self) -> float:
        """The mean over the rows, as nccl-tests averages bus bandwidth over every size it runs."""
        values = [v for row in self.rows.values() for v in row]
        return sum(values) / len(values)


_ADT = "aws-samples/awsome-distributed-training@7217859 micro-benchmarks/nccl-tests"
# Every healthy two-node run AWS publishes, at the gate's sizes (GATE_SIZES: 1, 2 and 4 GiB).
# Why: docs/network-and-storage.md, "Design notes", network.PUBLISHED_RUNS.
PUBLISHED_RUNS: tuple[PublishedRun, ...] = (
    PublishedRun(
        "p5.48xlarge",
        "Slurm",
        f"{_ADT}/README.md, Results",
        {"1G": (436.95, 440.96), "2G": (443.72, 442.06), "4G": (465.87, 464.33)},
    ),
    PublishedRun(
        "p5.48xlarge",
        "AWS Batch",
        f"{_ADT}/aws-batch/README.md",
        {"1G": (441.81, 441.57), "2G": (444.02, 443.88), "4G": (475.97, 476.51)},
    ),
    PublishedRun(
        "p5.48xlarge",
        "EKS",
        f"{_ADT}/README.md, Amazon EKS step 4",
        {"1G": (313.29, 313.29), "2G": (437.79, 437.89)},
    ),
    PublishedRun(
        "p4de.24xlarge",
        "Slurm",
        f"{_ADT}/README.md, Results (the run stops at 2 GiB)",
        {"1G": (76.79, 76.86), "2G": (78.33, 78.33)},
    ),
)

# Instance types without a published run take the floor of the type with the same EFA fabric and NVSwitch board,
# with the reason (EC2 accelerated instance specifications, https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html).
SIBLINGS: dict[str, tuple[str, str]] = {
    "p4d.24xlarge": (
        "p4de.24xlarge",
        "the same 4 x 100 Gbit/s EFA and 8 x A100 NVSwitch board (40 GB, not 80 GB, GPUs)",
    ),
    "p5e.48xlarge": ("p5.48xlarge", "the same 32 x 100 Gbit/s EFA and 8-GPU NVSwitch board (H200, not H100)"),
    "p5en.48xlarge": (
        "p5.48xlarge",
        "the same 3200 Gbit/s of EFA (16 x 200 Gbit/s EFAv3, not 32 x 100) and 8-GPU NVSwitch board (H200)",
    ),
}


def published_floor(instance_type: str) -> float | None:
    """The lowest average of the published runs of the type, rounded to 0.1 GB/s; None without a run."""
    runs = [r.average() for r in PUBLISHED_RUNS if r.instance_type == instance_type]
    return round(min(runs), 1) if runs else None


def min_bus_bandwidth(info: catalog.InstanceType, efficiency: float) -> float:
    """NCCL_TESTS_MIN_BW for a group: the lowest published healthy two-node all_reduce bus bandwidth of the instance
    type (or of its same-fabric sibling), else the rated line rate (GB/s) x efficiency; rounded to 0.1 GB/s.

    Why: docs/network-and-storage.md, "Design notes", network.min_bus_bandwidth."""
    published = published_floor(SIBLINGS[info.name][0] if info.name in SIBLINGS else info.name)
    return published if published is not None else round(line_rate_gbytes(info) * efficiency, 1)


def floor_source(info: catalog.InstanceType, efficiency: float) -> str:
    """Where a group's floor comes from, as plan.md states it."""
    if published_floor(info.name) is not None:
        where = ", ".join(f"{r.where} {r.average():.1f}" for r in PUBLISHED_RUNS if r.instance_type == info.name)
        return f"lowest published 2-node all_reduce bus bandwidth of {info.name} ({where}; {_ADT})"
    if info.name in SIBLINGS:
        sibling, why = SIBLINGS[info.name]
        return f"{sibling}'s published floor: {why}"
    return (
        f"{efficiency:g} x the {line_rate_gbytes(info):g} GB/s rated line rate: an estimate, as there is no published"
        f" measurement for {info.name} or a same-fabric sibling"
    )


def floor_is_estimate(info: catalog.InstanceType) -> bool:
    return published_floor(SIBLINGS[info.name][0] if info.name in SIBLINGS else info.name) is None


def gate_name(group: NodeGroup) -> str:
    return f"nccl-gate-{group.name}"


def gate_pods_per_node(group: NodeGroup) -> int:
    """Pods of the gate on each of its two nodes: one per NUMA node when the group's work is one NUMA node per pod
    (topology.podShape OneNumaNode: what single-numa-node admits), else one taking the whole node."""
    return node_bootstrap.numa_nodes(group) if defaults.pod_shape(group) == "OneNumaNode" else 1


def _gate_script(name: str, gpus: int, pods: int, net: str, env_names: list[str], wait_seconds: int) -> str:
    """The gate's script: gpufleet/templates/nccl-gate.sh.j2 (what each pod does, and why, is written there)."""
    return render(
        "nccl-gate.sh.j2",
        name=name,
        gpus=gpus,
        workers=[f"{name}-{i}.{name}" for i in range(1, pods)],
        net=net,
        env_names=env_names,
        sizes=GATE_SIZES,
        ssh_port=SSH_PORT,
        key_port=KEY_PORT,
        wait_seconds=wait_seconds,
    )


def _gate_checkov_skips(capabilities: list[str]) -> dict[str, str]:
    """Checkov checks that are wrong for the gate Job, with the reason (docs/policies-and-diff.md, "Checkov")."""
    added = ", ".join(capabilities)
    return {
        "CKV_K8S_22": (
            "the gate runs the spec's nccl-tests image as built: sshd's host keys are generated into /etc/ssh beside"
            " the image's config, and root's ~/.ssh, /run/sshd and Open MPI's session directories are written at run"
            " time"
        ),
        "CKV_K8S_23": (
            "mpirun reaches the worker through sshd, which needs root for privilege separation, and logs in as root "
            "(the launcher's key goes to /root/.ssh); capabilities are cut to what sshd needs"
        ),
        "CKV_K8S_40": (
            "runs as root on purpose (see CKV_K8S_23): sshd privilege separation and the root login mpirun uses"
        ),
        "CKV_K8S_25": (
            f"every capability is dropped but {added}: sshd as root needs SETUID, SETGID and SYS_CHROOT for privilege "
            "separation and NET_BIND_SERVICE for port 22"
            + ("; verbs need IPC_LOCK to pin memory" if "IPC_LOCK" in capabilities else "")
        ),
        "CKV_K8S_31": (
            "the gate measures the fabric as training pods get it, and they run with the kubelet's default seccomp"
            " profile; RuntimeDefault denies the NUMA memory-policy calls (mbind, set_mempolicy, get_mempolicy) that"
            " hwloc and libnuma in the MPI and NCCL stack make"
        ),
    }


def gate_objects(fleet: Fleet, group: NodeGroup) -> tuple[dict[str, Any], dict[str, Any]]:
    """The headless Service and the indexed Job of one group's bandwidth gate.

    Why: docs/network-and-storage.md, "Design notes", network.gate_objects."""
    info = catalog.lookup(group.instance_type)
    assert info is not None
    gate = fleet.network.bandwidth_gate
    name = gate_name(group)
    labels = {**LABEL_MANAGED_BY, GATE_LABEL: name, LABEL_NODE_GROUP: group.name}
    fabric = group.fabric
    env = nccl_env(fabric, fleet.network.rdma)
    per_node = gate_pods_per_node(group)
    pods = 2 * per_node
    gpus = info.gpu_count // per_node  # one NUMA node's GPUs, or all of them
    limits: dict[str, Any] = {GPU_RESOURCE: gpus, "memory": "32Gi"}
    capabilities = list(GATE_CAPABILITIES)
    pod_annotations: dict[str, str] = {}
    if fabric is Fabric.EFA:
        limits[EFA_RESOURCE] = info.max_efa_interfaces // per_node  # the EFA devices of those GPUs' NUMA node
        limits["hugepages-2Mi"] = EFA_HUGEPAGES
        net = EFA_NET
    else:
        rdma = fleet.network.rdma
        assert rdma is not None
        limits[rdma_resource(rdma)] = 1
        # Verbs pin memory (as the Network Operator's RDMA test pods do).
        capabilities.append("IPC_LOCK")
        pod_annotations["k8s.v1.cni.cncf.io/networks"] = networks_annotation(rdma)
        net = RDMA_NET
    min_bw = min_bus_bandwidth(info, gate.efficiency)
    gate_env = {"NCCL_DEBUG": "INFO", "NCCL_TESTS_MIN_BW": f"{min_bw}"}
    forwarded = sorted(
        set(env) | set(gate_env) | {"PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "OPAL_PREFIX", "PMIX_MCA_gds"}
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS_NETWORK, "labels": labels},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {GATE_LABEL: name}},
    }
    timeout = gate.timeout_minutes * 60
    spread = {"labelSelector": {"matchLabels": {GATE_LABEL: name}}, "topologyKey": "kubernetes.io/hostname"}
    # One pod per node: required anti-affinity.
    placement: dict[str, Any] = (
        {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [spread]}}}
        if per_node == 1
        else {"topologySpreadConstraints": [{**spread, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]}
    )
    block = group.capacity_type is CapacityType.CAPACITY_BLOCK
    # A Capacity Block group has nodes only inside its window: Pulumi does not wait (skipAwait) and the Job has no
    # deadline, so it runs when the window opens (gpufleet.plan.stages.network).
    awaiting = {SKIP_AWAIT: "true"} if block else {"pulumi.com/timeoutSeconds": str(timeout)}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS_NETWORK,
            "labels": labels,
            "annotations": {
                # How long `pulumi up` waits for the Job to complete (pulumi-kubernetes await logic; default 10 min).
                **awaiting,
                **checkov.skip_annotations(_gate_checkov_skips(capabilities)),
            },
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": pods,
            "parallelism": pods,
            "backoffLimit": 0,
            **({} if block else {"activeDeadlineSeconds": timeout}),
            "successPolicy": {"rules": [{"succeededIndexes": "0"}]},
            "template": {
                "metadata": {"labels": labels, **({"annotations": pod_annotations} if pod_annotations else {})},
                "spec": {
                    "restartPolicy": "Never",
                    "subdomain": name,
                    # Keys travel between the two pods over HTTP and SSH; nothing in the gate calls the Kubernetes API.
                    "automountServiceAccountToken": False,
                    # Root on purpose: sshd (privilege separation, root login for mpirun); see _gate_checkov_skips.
                    "securityContext": {"runAsUser": 0, "runAsGroup": 0},
                    "nodeSelector": {LABEL_NODE_GROUP: group.name},
                    "tolerations": tolerations_for(group_taints(group)),
                    **placement,
                    "containers": [
                        {
                            "name": "nccl-tests",
                            "image": gate.image,
                            "command": ["/bin/bash", "-c", _gate_script(name, gpus, pods, net, forwarded, timeout)],
                            "env": [{"name": k, "value": v} for k, v in sorted(gate_env.items())],
                            "envFrom": [{"configMapRef": {"name": nccl_env_name(fabric)}}],
                            "ports": [
                                {"name": "ssh", "containerPort": SSH_PORT},
                                {"name": "key", "containerPort": KEY_PORT},
                            ],
                            # A CPU per rank; no CPU limit (docs/policies-and-diff.md, CKV_K8S_11).
                            "resources": {"limits": limits, "requests": {**limits, "cpu": gpus}},
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"], "add": capabilities},
                            },
                            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                        }
                    ],
                    # NCCL's shared-memory transport needs more than the container runtime's 64 MiB /dev/shm.
                    "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                },
            },
        },
    }
    return service, job


def gate_threshold_row(fleet: Fleet, group: NodeGroup) -> str:
    """A plan.md table row: group, fabric, instance, line rate, NCCL_TESTS_MIN_BW, effective floor."""
    info = catalog.lookup(group.instance_type)
    assert info is not None
    efficiency = fleet.network.bandwidth_gate.efficiency
    min_bw = min_bus_bandwidth(info, efficiency)
    return (
        f"| {group.name} | {group.fabric.value} | {group.instance_type} | {info.network_gbps} Gbit/s ="
        f" {line_rate_gbytes(info):g} GB/s | {min_bw:g} ({floor_source(info, efficiency)}) |"
        f" {round(min_bw * NCCL_TESTS_SLACK, 1):g} |"
    )
