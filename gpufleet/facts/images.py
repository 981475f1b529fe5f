"""The containers gpufleet renders itself that hold power over nodes or other tenants, in one table with the reason
each is privileged, and the image each runs.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/facts/images.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpufleet.facts.stages import StageName

# The remediation controller's and the planted-fault checker's image (stdlib-only Python scripts).
PYTHON_IMAGE = "python:3.13.5-slim-bookworm"
# The spec field that takes a digest for each image key; the gate's image is the spec's own (a rule requires its
# digest: gpufleet.rules.network `network`).
GATE_IMAGE_FIELD = "network.bandwidthGate.image"


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivilegedImage:
    """An image gpufleet renders into privileged containers: `images.<key>` takes its digest."""

    key: str
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivilegedContainer:
    """One privileged container as it sits in a synth tree."""

    component: str  # what docs and plan.md call it
    kind: str  # the Kubernetes kind of the object holding it, or "HelmRelease" (a container in chart values)
    name: str  # the object's (or release's) name; a trailing * matches a prefix (one gate Job per node group)
    container: str
    image: str  # a PrivilegedImage key, or GATE_IMAGE_FIELD
    stage: StageName  # the stage that renders it
    why: str  # what makes it privileged


IMAGES: Mapping[str, PrivilegedImage] = MappingProxyType(
    {
        "python": PrivilegedImage(key="python", title="Python"),
        "dcgm": PrivilegedImage(key="dcgm", title="DCGM"),
        "multus": PrivilegedImage(key="multus", title="Multus CNI"),
    }
)

PRIVILEGED: tuple[PrivilegedContainer, ...] = (
    *(
        PrivilegedContainer(
            component="MultiKueue credential renewal",
            kind=kind,
            name="gpufleet-multikueue-credentials" + suffix,
            stage="admission",
            container="renew",
            image="python",
            why=(
                "mints each worker's MultiKueue token (which creates the dispatched jobs there) and writes the"
                " manager's kubeconfig Secrets; its ClusterRole reads the MultiKueueClusters"
            ),
        )
        for kind, suffix in (("CronJob", ""), ("Job", "-first"))
    ),
    PrivilegedContainer(
        component="remediation controller",
        kind="Deployment",
        name="gpufleet-remediator",
        stage="health",
        container="remediator",
        image="python",
        why="its ClusterRole patches every node (cordon) and evicts any pod of any namespace",
    ),
    PrivilegedContainer(
        component="planted-fault checker",
        kind="Job",
        name="gpufleet-planted-fault",
        stage="health",
        container="verify",
        image="python",
        why=(
            "its verdict is the health stage's gate; it tolerates every taint on a GPU node and its ClusterRole reads"
            " every node and pod"
        ),
    ),
    PrivilegedContainer(
        component="planted-fault injector",
        kind="Job",
        name="gpufleet-planted-fault",
        stage="health",
        container="inject",
        image="dcgm",
        why=(
            "injects errors into the node's DCGM host engine (`dcgmi test --inject`), which the health loop turns"
            " into a cordon and drain"
        ),
    ),
    PrivilegedContainer(
        component="DCGM health sidecar",
        kind="HelmRelease",
        name="node-problem-detector",
        stage="health",
        container="dcgm-health",
        image="dcgm",
        why=(
            "runs as root (no securityContext) beside the chart's privileged Node Problem Detector container on"
            " every GPU node and writes the verdict"
            " (a hostPath) that cordons and drains the node; runs `dcgmi diag` on its GPUs"
        ),
    ),
    PrivilegedContainer(
        component="Multus installer",
        kind="DaemonSet",
        name="kube-multus-ds",
        stage="network",
        container="install-multus-binary",
        image="multus",
        why="privileged on the host network and PID namespace; writes the CNI binary into the host's /opt/cni/bin",
    ),
    PrivilegedContainer(
        component="Multus daemon",
        kind="DaemonSet",
        name="kube-multus-ds",
        stage="network",
        container="kube-multus",
        image="multus",
        why=(
            "privileged on the host network and PID namespace with the host root mounted; attaches every pod's"
            " network on RDMA nodes"
        ),
    ),
    PrivilegedContainer(
        component="NCCL bandwidth gate",
        kind="Job",
        name="nccl-gate-*",
        stage="network",
        container="nccl-tests",
        image=GATE_IMAGE_FIELD,
        why=(
            "runs as root with NET_BIND_SERVICE, SETGID, SETUID and SYS_CHROOT added (sshd) on the fabric's devices;"
            " its result passes or stops the network stage"
        ),
    ),
)


def matches(entry: PrivilegedContainer, kind: str, name: str) -> bool:
    """Whether an object of `kind` and `name` holds the entry's container."""
    if entry.kind != kind:
        return False
    return name.startswith(entry.name[:-1]) if entry.name.endswith("*") else name == entry.name


def digest_field(image: str) -> str:
    """The spec field that takes the digest of an image key."""
    return image if image == GATE_IMAGE_FIELD else f"images.{image}"


def digest_commands(reference: str) -> str:
    """How to read the digest a tag resolves to now, without pulling it."""
    return f"`crane digest {reference}` or `docker buildx imagetools inspect {reference}`"
