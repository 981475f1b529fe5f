"""The workload layer as plain data: the Helm values of JobSet, Kubeflow Trainer v2 and LeaderWorkerSet, the
ClusterTrainingRuntimes teams start TrainJobs from, and the Kueue integrations that follow what is installed.

Why, with sources: docs/workloads.md, "Design notes", gpufleet/plan/manifests/workloads.py.
"""

from __future__ import annotations

from typing import Any

from gpufleet.facts import catalog
from gpufleet.plan.manifests import dra, kueue, network
from gpufleet.spec import defaults
from gpufleet.spec.devices import device_managing
from gpufleet.spec.fleet import Fabric, Fleet, NodeGroup, WorkloadClass
from gpufleet.spec.names import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    LABEL_MANAGED_BY,
    LABEL_NODE_GROUP,
    group_taints,
    tolerations_for,
)

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
NS_JOBSET = "jobset-system"  # the namespaces of each project's own install docs
NS_TRAINER = "kubeflow-system"
NS_LWS = "lws-system"
JOBSET_RELEASE = "jobset"
TRAINER_RELEASE = "kubeflow-trainer"
LWS_RELEASE = "lws"
# Images the published charts carry (the release scripts rewrite the git values.yaml's `main` tags:
# kubernetes-sigs/jobset hack/helm-chart-package.sh, kubernetes-sigs/lws hack/push-chart.sh).
JOBSET_IMAGES = {"0.12.0": ("registry.k8s.io/jobset/jobset", "v0.12.0")}
LWS_IMAGES = {"0.10.0": ("registry.k8s.io/lws/lws", "v0.10.0")}

# --- Helm values -----------------------------------------------------------------------------------------------


def jobset_values(version: str) -> dict[str, Any]:
    """Values of the jobset chart (keys checked against the chart's values.yaml at v<version>)."""
    repository, tag = JOBSET_IMAGES[version]
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"},
        # Two replicas with leader election: the second serves the JobSet webhooks (failurePolicy Fail) while the
        # leader moves during a node drain, so JobSet and TrainJob creation keeps working.
        "controller": {"replicas": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}},
    }


def trainer_values() -> dict[str, Any]:
    """Values of the kubeflow-trainer chart (keys checked against the chart's values.yaml at v<version>)."""
    return {
        # gpufleet's own JobSet release owns JobSet (module docstring).
        "jobset": {"install": False},
        "manager": {"replicas": 2},
        # The data cache (and the LWS subchart it brings, lws 0.8.0) stays off: gpufleet's LWS release is the one.
        "dataCache": {"enabled": False},
    }


def lws_values(version: str) -> dict[str, Any]:
    """Values of the lws chart (keys checked against the chart's values.yaml at v<version>)."""
    repository, tag = LWS_IMAGES[version]
    return {
        "image": {"manager": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}},
        "replicaCount": 2,
        # Empty on purpose: Kueue does the gang admission (module docstring).
        "gangSchedulingManagement": {},
    }


# --- ClusterTrainingRuntimes ------------------------------------------------------------------------------------

FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
# The container the Trainer applies a TrainJob's spec.trainer to (pkg/constants: Node = "node"), in the replicated job
# labelled ancestor trainer (pkg/runtime/framework/plugins/jobset/builder.go Trainer).
NODE = "node"
TORCH_RUNTIME = "torch-distributed"
DEEPSPEED_RUNTIME = "deepspeed-distributed"
# charts/kubeflow-trainer/files/runtimes/torch-distributed.yaml at v2.3.0.
TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def deepspeed_image(trainer_version: str) -> str:
    """trainer.runtimeImage of runtimes.deepspeedDistributed.image: ghcr.io/kubeflow/trainer/deepspeed-runtime at
    the chart version as a tag (charts/kubeflow-trainer/templates/_helpers.tpl trainer.defaultImageTag: v<version>)."""
    return f"ghcr.io/kubeflow/trainer/deepspeed-runtime:v{trainer_version}"


def _runtime_meta(name: str, framework: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {FRAMEWORK_LABEL: framework, **LABEL_MANAGED_BY, **(labels or {})}}


def torch_runtime() -> dict[str, Any]:
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": _runtime_meta(TORCH_RUNTIME, "torch"),
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {"template": {"spec": {"containers": [{"name": NODE, "image": TORCH_IMAGE}]}}},
                            },
                        }
                    ]
                }
            },
        },
    }


def deepspeed_runtime(trainer_version: str) -> dict[str, Any]:
    image = deepspeed_image(trainer_version)
    node_container = {
        "name": NODE,
        "image": image,
        "securityContext": {"runAsUser": 1000},
        "command": ["/usr/sbin/sshd"],
        "args": ["-De", "-f", "/home/mpiuser/.sshd_config"],
        "readinessProbe": {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5},
    }
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": _runtime_meta(DEEPSPEED_RUNTIME, "deepspeed"),
        "spec": {
            "mlPolicy": {
                "numNodes": 1,
                "mpi": {
                    "numProcPerNode": 1,
                    "mpiImplementation": "OpenMPI",
                    "sshAuthMountPath": "/home/mpiuser/.ssh",
                    "runLauncherAsNode": True,
                },
            },
            "template": {
                "spec": {
                    "network": {"publishNotReadyAddresses": True},
                    "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {"securityContext": {"fsGroup": 1000}, "containers": [node_container]}
                                    }
                                }
                            },
                        },
                        {
                            "name": "launcher",
                            "dependsOn": [{"name": NODE, "status": "Ready"}],
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "securityContext": {"fsGroup": 1000},
                                            "containers": [
                                                {"name": NODE, "image": image, "securityContext": {"runAsUser": 1000}}
                                            ],
                                        }
                                    }
                                },
                            },
                        },
                    ],
                }
            },
        },
    }


def efa_groups(fleet: Fleet) -> list[NodeGroup]:
    """The groups that get a gpufleet-efa-<group> runtime: Training groups with fabric EFA (on devices DRA its pods
    claim each GPU with an EFA interface on its PCIe root, efa_runtime)."""
    return [g for g in fleet.node_groups if g.fabric is Fabric.EFA and g.workload_class is WorkloadClass.TRAINING]


def efa_runtime_name(group: NodeGroup) -> str:
    return f"gpufleet-efa-{group.name}"


def _runtime_image(fleet: Fleet, group: NodeGroup) -> str:
    """The first image the group pre-pulls (its image sets), else torch-distributed's; a TrainJob's trainer.image
    replaces it (it must carry libfabric and aws-ofi-nccl for EFA)."""
    sets = {s.name: s.images for s in fleet.image_sets}
    for name in group.images:
        if sets.get(name):
            return sets[name][0]
    return TORCH_IMAGE


def _mib(quantity: str) -> int:
    assert quantity.endswith("Mi"), quantity
    return int(quantity[:-2])


def efa_runtime(fleet: Fleet, group: NodeGroup) -> dict[str, Any]:
    """Multi-node torch on one EFA Training group: a node's every GPU and EFA interface per pod, one rank per GPU."""
    info = catalog.lookup(group.instance_type)
    assert info is not None, group.instance_type
    # What Kueue's quota gives a whole node (gpufleet.plan.manifests.kueue.per_gpu), so a node's pod fits one node's
    # quota; the huge pages come out of the node's memory (the kubelet subtracts pre-allocated huge pages from
    # allocatable).
    shape = kueue.per_gpu(group)
    claimed = device_managing(group).claims
    # devices DRA: one claim per PCIe root from the team namespace's aligned template (the root's GPUs with its EFA
    # interfaces, gpufleet.plan.manifests.dra.claim_templates), which every team with quota on the group holds by the
    # same name: the node's every GPU and interface; the container uses them all.
    claims = [{"name": f"gpu-efa-{i}", "resourceClaimTemplateName": dra.aligned_template_name(group)} for i in range(
        dra.aligned_claims_per_node(group) if claimed else 0
    )]  # fmt: skip
    devices = {} if claimed else {GPU_RESOURCE: info.gpu_count, EFA_RESOURCE: info.max_efa_interfaces}
    limits: dict[str, Any] = {
        **devices,
        # EFA pods request the huge pages the EFA driver pre-allocates (gpufleet.plan.manifests.network.EFA_HUGEPAGES);
        # huge pages need a memory or CPU request beside them (Kubernetes pod validation), and requests equal limits.
        "hugepages-2Mi": network.EFA_HUGEPAGES,
        "memory": f"{shape.memory_mib * info.gpu_count - _mib(network.EFA_HUGEPAGES)}Mi",
    }
    requests = {**limits, "cpu": str(shape.cpu_milli * info.gpu_count // 1000)}
    env = [{"name": k, "value": v} for k, v in sorted(network.nccl_env(Fabric.EFA).items())]
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": _runtime_meta(efa_runtime_name(group), "torch", {LABEL_NODE_GROUP: group.name}),
        "spec": {
            # One rank per GPU: with no numProcPerNode on the TrainJob the torch plugin sets PET_NPROC_PER_NODE=auto,
            # which torchrun resolves to the node's GPUs (pkg/runtime/framework/plugins/torch/torch.go); a TrainJob's
            # trainer.numNodes sets the nodes.
            "mlPolicy": {"numNodes": 2, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "nodeSelector": {LABEL_NODE_GROUP: group.name},
                                            "tolerations": tolerations_for(group_taints(group)),
                                            "containers": [
                                                {
                                                    "name": NODE,
                                                    "image": _runtime_image(fleet, group),
                                                    "env": env,
                                                    "resources": {
                                                        "limits": limits,
                                                        "requests": requests,
                                                        **(
                                                            {"claims": [{"name": c["name"]} for c in claims]}
                                                            if claims
                                                            else {}
                                                        ),
                                                    },
                                                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                                                }
                                            ],
                                            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                                            **({"resourceClaims": claims} if claims else {}),
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def runtimes(fleet: Fleet) -> list[dict[str, Any]]:
    """Every ClusterTrainingRuntime gpufleet renders (the Trainer installed)."""
    # Every worker's EFA groups on every cluster of clusters[] (defaults.dispatch_groups): a TrainJob names its runtime
    # wherever it is dispatched; on a worker without the group no flavor admits it and the dispatcher moves on.
    groups = defaults.dispatch_groups(fleet)
    return [torch_runtime(), deepspeed_runtime(fleet.versions.trainer)] + [
        efa_runtime(fleet, g) for g in groups if g.fabric is Fabric.EFA and g.workload_class is WorkloadClass.TRAINING
    ]
