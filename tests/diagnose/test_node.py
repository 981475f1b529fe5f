"""`kubectl describe node` parsing and checks, over realistic node descriptions (fixtures/node_*.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose.node import Condition, NodeTaint, parse_nodes

FIXTURES = Path(__file__).parent / "fixtures"
HEALTHY = (FIXTURES / "node_p5_healthy.txt").read_text()
P5 = "ip-10-1-37-120.us-west-2.compute.internal"


def summary(name: str, text: str | None = None) -> list[tuple[str, str, str, str]]:
    body = text if text is not None else (FIXTURES / name).read_text()
    return [(f.severity, f.check, f.subject, f.message) for f in diagnose({}, {name: body})]


def relabel(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def test_parse_healthy_p5() -> None:
    [node] = parse_nodes(HEALTHY)
    assert node.name == P5
    assert node.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert node.labels["node.kubernetes.io/instance-type"] == "p5.48xlarge"
    assert len(node.labels) == 57
    assert node.taints == [
        NodeTaint("nvidia.com/gpu", "true", "NoSchedule"),
        NodeTaint("vpc.amazonaws.com/efa", "true", "NoSchedule"),
    ]
    assert node.conditions["Ready"] == Condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
    assert node.conditions["AcceleratedHardwareReady"].reason == "NvidiaAcceleratedHardwareIsReady"
    assert node.capacity is not None and node.allocatable is not None
    assert (node.capacity["nvidia.com/gpu"], node.allocatable["vpc.amazonaws.com/efa"]) == ("8", "32")
    assert node.pods is not None and len(node.pods) == 13 and node.pods[-1] == ("vision", "llama-train-worker-0")
    assert node.allocated == {
        "cpu": "96195m",
        "memory": "1048790Mi",
        "ephemeral-storage": "0",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "nvidia.com/gpu": "8",
        "vpc.amazonaws.com/efa": "32",
    }


def test_healthy_p5_has_no_findings() -> None:
    assert summary("node_p5_healthy.txt") == []


def test_ready_node_with_zero_allocatable_gpus() -> None:
    assert summary("node_p4d_zero_allocatable.txt") == [
        (
            "critical",
            "node.gpu-not-allocatable",
            "ip-10-1-88-41.us-west-2.compute.internal",
            "Ready but advertises no allocatable nvidia.com/gpu: the device plugin never registered",
        )
    ]
    [f] = diagnose({}, {"n.txt": (FIXTURES / "node_p4d_zero_allocatable.txt").read_text()})
    assert "nvidia-device-plugin-daemonset" in f.hint and "nvidia-operator-validator" in f.hint


def test_untainted_node_without_gfd_labels_shared_by_two_teams() -> None:
    node = "ip-10-1-20-7.us-west-2.compute.internal"
    expected = [
        (
            "node.no-gpu-taint",
            node,
            "no nvidia.com/gpu taint: pods that do not ask for GPUs can land here and take its CPU and memory",
        ),
        (
            "node.no-product-label",
            node,
            "no nvidia.com/gpu.product label: GPU Feature Discovery has not labelled this node",
        ),
        ("node.several-teams", node, "pods from 2 team namespaces share this GPU node: nlp, recsys"),
    ]
    # Not a gpufleet node: fleet hygiene is context only.
    assert summary("node_g5_untainted.txt") == [("info", *e) for e in expected]
    # The same node in a gpufleet node group: gpufleet's own rules, so warnings.
    managed = relabel(
        (FIXTURES / "node_g5_untainted.txt").read_text(),
        "Labels:             ",
        "Labels:             gpufleet.io/node-group=g5-inference\n                    ",
    )
    assert summary("n.txt", managed) == [("warning", *e) for e in expected]


def test_mig_pending_and_mig_on_a_gpu_without_mig() -> None:
    a, b = "ip-10-1-90-12.us-west-2.compute.internal", "ip-10-1-91-200.us-west-2.compute.internal"
    assert summary("node_mig_pending.txt") == [  # `kubectl describe nodes`: two nodes in one file
        (
            "warning",
            "node.mig-pending",
            a,
            "nvidia.com/mig.config=all-1g.5gb but nvidia.com/mig.config.state=pending: the MIG layout is not applied",
        ),
        (
            "warning",
            "node.mig-pending",
            b,
            "nvidia.com/mig.config=all-1g.10gb but nvidia.com/mig.config.state=failed: the MIG layout is not applied",
        ),
        (
            "warning",
            "node.mig-not-capable",
            b,
            "nvidia.com/mig.config=all-1g.10gb on a node whose GPUs are not MIG-capable (nvidia.com/mig.capable=false)",
        ),
    ]


def test_disk_pressure() -> None:
    assert summary("node_p5_disk_pressure.txt") == [
        (
            "warning",
            "node.pressure",
            "ip-10-1-41-66.us-west-2.compute.internal",
            (
                "DiskPressure=True (KubeletHasDiskPressure: kubelet has disk pressure): the kubelet evicts pods and"
                " rejects new ones"
            ),
        )
    ]


def test_xid_fault_and_a_withdrawn_gpu() -> None:
    node = "ip-10-1-45-203.us-west-2.compute.internal"
    assert summary("node_p5_xid.txt") == [
        (
            "critical",
            "node.accelerated-hardware",
            node,
            (
                "AcceleratedHardwareReady=False (NvidiaXID79Error: XID error 79 detected on GPU 0000:97:00.0: GPU has"
                " fallen off the bus)"
            ),
        ),
        (
            "warning",
            "node.gpu-unhealthy",
            node,
            "nvidia.com/gpu: capacity 8 but allocatable 7: 1 device(s) marked unhealthy",
        ),
    ]


def test_not_ready_node() -> None:
    text = relabel(
        HEALTHY,
        "  Ready                     True    Wed, 04 Mar 2026 12:03:38 +0000   Mon, 02 Mar 2026 08:16:04 +0000  "
        " KubeletReady                        kubelet is posting ready status",
        "  Ready                     Unknown Wed, 04 Mar 2026 12:03:38 +0000   Wed, 04 Mar 2026 12:04:20 +0000  "
        " NodeStatusUnknown                   Kubelet stopped posting node status.",
    )
    assert summary("n.txt", text) == [
        ("critical", "node.not-ready", P5, "Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)")
    ]


def test_all_gpus_withdrawn_is_critical_not_a_mismatch() -> None:
    alloc = HEALTHY.index("Allocatable:")
    text = HEALTHY[:alloc] + relabel(HEALTHY[alloc:], "  nvidia.com/gpu:         8\n", "  nvidia.com/gpu:         0\n")
    assert summary("n.txt", text) == [
        ("critical", "node.gpu-not-allocatable", P5, "Ready but all 8 GPUs are unhealthy (capacity 8, allocatable 0)")
    ]


def test_shared_gpus_count_as_allocatable() -> None:
    alloc = HEALTHY.index("Allocatable:")
    text = HEALTHY[:alloc] + relabel(HEALTHY[alloc:], "  nvidia.com/gpu:         8\n", "  nvidia.com/gpu.shared:  32\n")
    text = relabel(text, "nvidia.com/gpu.replicas=1", "nvidia.com/gpu.replicas=4")
    text = relabel(text, "nvidia.com/gpu.sharing-strategy=none", "nvidia.com/gpu.sharing-strategy=time-slicing")
    text = relabel(text, "gpufleet.io/sharing=Exclusive", "gpufleet.io/sharing=TimeSlicing")
    assert summary("n.txt", text) == []


@pytest.mark.parametrize(
    ("changes", "what"),
    [
        (
            {
                "nvidia.com/gpu.sharing-strategy=none": "nvidia.com/gpu.sharing-strategy=time-slicing",
                "gpufleet.io/sharing=Exclusive": "gpufleet.io/sharing=TimeSlicing",
            },
            "nvidia.com/gpu.sharing-strategy=time-slicing but nvidia.com/gpu.replicas=1",
        ),
        (
            {"gpufleet.io/sharing=Exclusive": "gpufleet.io/sharing=MPS"},
            "gpufleet.io/sharing=MPS but nvidia.com/gpu.sharing-strategy=none",
        ),
        (
            {
                "gpufleet.io/sharing=Exclusive": (
                    "gpufleet.io/sharing=Exclusive\n                    nvidia.com/device-plugin.config=mps-4"
                )
            },
            "nvidia.com/device-plugin.config=mps-4 but nvidia.com/gpu.sharing-strategy=none",
        ),
        (
            {"nvidia.com/mig.config=all-disabled": "nvidia.com/mig.config=all-3g.40gb"},
            "gpufleet.io/sharing=Exclusive but nvidia.com/mig.config=all-3g.40gb",
        ),
    ],
)
def test_sharing_labels_that_disagree(changes: dict[str, str], what: str) -> None:
    text = HEALTHY
    for old, new in changes.items():
        text = relabel(text, old, new)
    assert summary("n.txt", text) == [("warning", "node.sharing-inconsistent", P5, what)]


def test_truncated_description_reports_only_what_it_shows() -> None:
    cut = HEALTHY[: HEALTHY.index("Allocatable:") + 40]  # ends inside the Allocatable block
    [node] = parse_nodes(cut)
    assert node.capacity is not None and node.pods is None and node.allocated is None
    assert summary("n.txt", cut) == []
    assert summary("n.txt", HEALTHY[: HEALTHY.index("Taints:")]) == []  # no taint section: not "untainted"


def test_crlf_and_not_a_node_description() -> None:
    assert summary("n.txt", HEALTHY.replace("\n", "\r\n")) == []
    assert summary("pods.txt", "NAME   READY   STATUS\ntrainer-0   1/1   Running\n") == [
        (
            "warning",
            "input.not-node-describe",
            "input",
            (
                "not `kubectl describe node` output (no Name:, Labels:, Conditions:, Capacity:, Allocatable: or pods"
                " section)"
            ),
        )
    ]


@pytest.mark.parametrize("count", ["8²", "①", "٨"])
def test_a_gpu_count_in_other_digits_is_unknown(count: str) -> None:
    """Issue 47 item 9: "8²" passed str.isdigit() and int() refused it (exit 3); "٨" is no count kubectl prints. A
    count the kubelet reports is ASCII digits: anything else is unknown, as a count the paste does not show."""
    text = (FIXTURES / "node_g5_untainted.txt").read_text()
    lines = text.splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if line.strip().startswith("nvidia.com/gpu:"))
    lines[at] = lines[at].replace(lines[at].split()[-1], count)
    assert summary("g5.txt", "".join(lines)) == summary("g5.txt", "".join(lines[:at] + lines[at + 1 :]))
