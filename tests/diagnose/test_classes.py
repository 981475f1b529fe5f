"""The classes of issue 19, each pinned on a small input: real lines from tests/diagnose/real where the corpus has
them, otherwise lines built from the upstream format strings named next to each pattern in gpufleet/diagnose."""

from __future__ import annotations

from pathlib import Path

from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose.nccl import parse_nccl
from gpufleet.diagnose.node import parse_nodes

REAL = Path(__file__).parent / "real"
HELDOUT = REAL / "heldout"
FIXTURES = Path(__file__).parent / "fixtures"
HEALTHY = (FIXTURES / "node_p5_healthy.txt").read_text()


def checks(nccl: str = "", node: str = "") -> list[tuple[str, str]]:
    found = diagnose({"j.log": nccl} if nccl else {}, {"n.txt": node} if node else {})
    return [(f.severity, f.check) for f in found]


# ---- log formats ---------------------------------------------------------------------------------------------------


def test_cloudwatch_glued_timestamps_make_no_phantom_host() -> None:
    log = parse_nccl((REAL / "aws-ofi-nccl-889-cloudwatch-glued-fi-getinfo-empty.log").read_text())
    assert set(log.processes) == {("ip-10-36-29-253", 79)}
    p = log.processes[("ip-10-36-29-253", 79)]
    assert (p.bootstrap_iface, p.env) == ("eth0", {"NCCL_SOCKET_IFNAME": "eth0"})
    assert log.bare_versions == ["2.21.5+cuda12.8"]
    assert log.libfabric == ["fi_getinfo: provider efa output empty list"]  # the " | " repeat is not a second line


def test_lines_without_host_prefix_are_nccl_output() -> None:
    text = (
        "[1] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).\n"
        "NCCL INFO Using network Socket\n"
        "transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"
    )
    p = parse_nccl(text).processes[("", 0)]
    assert p.plugin_missing and p.network == "Socket"
    assert p.warnings == ["transport/nvls.cc:165 Cuda failure 'invalid argument'"]


def test_a_log_pasted_twice_reads_as_once() -> None:
    for name in ("nccl-899-gdr-no-module-pre212-channels.log", "aws-k8s-tester-454-mpi-ofi-init-failed-socket.log"):
        text = (REAL / name).read_text()
        assert diagnose({"j.log": text + text}, {}) == diagnose({"j.log": text}, {})


def test_pre_2_12_ring_lines_are_channels() -> None:
    log = parse_nccl((REAL / "aws-ofi-nccl-24-couldnt-open-av-pre212-rings.log").read_text())
    p = log.processes[("ip-172-32-38-1", 21471)]
    assert (p.channel_ranks, dict(p.net_channels)) == ({7}, {"AWS Libfabric": 1})
    inside = log.processes[("ip-172-32-36-209", 8716)]  # "Ring 00 : 26[2] -> 30[6] via P2P/IPC": no network
    assert (inside.channel_ranks, dict(inside.net_channels)) == ({26}, {})
    old = parse_nccl("h:1:2 [0] NCCL INFO Ring 00 : 6 -> 2 [receive] via NET/IB/0\n").processes[("h", 1)]
    assert (old.channel_ranks, dict(old.net_channels), old.gdr_channels) == ({2}, {"IB": 1}, 0)


# ---- init failures -------------------------------------------------------------------------------------------------


def test_every_warn_is_evidence_and_benign_ones_are_not() -> None:
    warn = "h:1:2 [0] graph/search.cc:765 NCCL WARN Could not find a path for pattern 4, falling back to simple order\n"
    assert checks(warn) == []
    err = (
        "h:1:2 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4711> with status=12\n"
    )
    assert checks(err) == [("critical", "nccl.error")]
    [f] = diagnose({"j.log": err}, {})
    assert "ib_write_bw" in f.hint


def test_fabric_manager_signatures() -> None:
    loose = "RuntimeError: CUDA error: system not yet initialized (Cuda failure 802)\n"
    assert checks(loose) == [("critical", "nccl.fabric-manager")]
    nvls = (REAL / "nccl-1488-nvls-after-fabricmanager-restart.log").read_text()
    [f] = diagnose({"j.log": nvls}, {})
    assert "nvidia-fabricmanager" in f.hint and "reboot" in f.hint and "NCCL_NVLS_ENABLE=0" in f.hint


def test_any_nvls_warning_points_at_the_fabric_manager() -> None:
    # NCCL prints an NVLS multicast bind failure as "CUDA error 401", not "Cuda failure" (held-out, p5en).
    bind = (HELDOUT / "agentic-harness-173-p5en-nvls-bind-401.log").read_text()
    [f] = diagnose({"j.log": bind}, {})
    assert (f.check, f.message) == (
        "nccl.fabric-manager",
        "NCCL failed in NVLink SHARP setup: transport/nvls.cc:287 Failed to bind NVLink SHARP (NVLS) Multicast memory",
    )
    assert checks("h:1:2 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion with status=12\n") == [
        ("critical", "nccl.error")
    ]


def test_a_static_topology_file_error_names_the_plugin_upgrade() -> None:
    for name in ("aws-ofi-nccl-785-p5-static-topology-arch.log", "aws-ofi-nccl-476-p5-mpirun-arch-not-found.log"):
        [f] = [f for f in diagnose({"j.log": (HELDOUT / name).read_text()}, {}) if f.severity != "info"]
        assert f.check == "nccl.error" and "upgrade aws-ofi-nccl" in f.hint and "NCCL_TOPO_FILE" in f.hint


def test_ray_repeat_suffix_is_not_part_of_the_message() -> None:
    log = parse_nccl((HELDOUT / "awsome-distributed-ai-386-ray-ofi-init-failed.log").read_text())
    p = log.processes[("ini-worker-ray-worker-p5", 954)]
    assert p.warnings == ["nccl_net_ofi_create_plugin:1067 NET/OFI aws-ofi-nccl initialization failed"]
    assert (p.network, p.socket_ifaces, p.nranks) == ("Socket", ["eth0"], 16)


def test_libfabric_empty_list_is_benign_once_efa_is_selected() -> None:
    glued = (REAL / "aws-ofi-nccl-889-cloudwatch-glued-fi-getinfo-empty.log").read_text()
    selected = "ip-10-36-29-253:79:79 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)\n"
    assert checks(glued)[0] == ("critical", "nccl.efa-unavailable")
    assert [c for c in checks(glued + selected) if c[0] != "info"] == []


# ---- GPUDirect RDMA and topology -----------------------------------------------------------------------------------


def test_gdr_disabled_forms() -> None:
    for line, reason in [
        ("h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n", None),
        ("h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n", "no module"),
        ("h:1:2 [2] NCCL INFO GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)\n", "distance 3 >= 2"),
    ]:
        p = parse_nccl(line).processes[("h", 1)]
        assert (p.gdr_disabled, p.gdr_reason) == (True, reason)
        assert checks(line) == [("warning", "nccl.gdr-off")]
    enabled = "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
    assert checks("h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'\n" + enabled) == []


def test_a_pod_with_fewer_efa_devices_than_its_gpus_need() -> None:
    # aws-ofi-nccl platform-aws.cpp / nccl_ofi_net.cpp lines of one full-node pod on p5.48xlarge (32 EFA interfaces).
    def pod(nics: int, local: int) -> str:
        return "".join(
            f"w0:{40 + r}:41 [{r}] NCCL INFO NET/OFI Running on p5.48xlarge platform, Setting"
            f" NCCL_TOPO_FILE\nw0:{40 + r}:41 [{r}] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct"
            f" (found {nics} nics)\nw0:{40 + r}:41 [{r}] NCCL INFO comm 0x1 rank {r} nRanks 16 nNodes 2 localRanks"
            f" {local} localRank {r} MNNVL 0\n"
            for r in range(local)
        )

    found = diagnose({"j.log": pod(4, 8)}, {})
    assert [(f.severity, f.check) for f in found] == [("warning", "nccl.efa-devices")]
    assert found[0].message.startswith(
        "aws-ofi-nccl found 4 EFA device(s) on p5.48xlarge, which has 32: these ranks need 32"
    )
    assert "vpc.amazonaws.com/efa: 32" in found[0].hint
    assert checks(pod(32, 8)) == [] and checks(pod(4, 1)) == []  # all of them; a 1-GPU pod's share is 4
    assert checks((REAL / "aws-ofi-nccl-889-cloudwatch-p4d-efa-selected.log").read_text()) == []  # p4d: 4 of 4


def test_one_gpu_pods_on_an_eight_gpu_instance() -> None:
    # aws-ofi-nccl platform-aws.cpp and NCCL init.cc lines, one per pod: four 1-GPU pods on one p4d.24xlarge.
    lines = []
    for rank in range(4):
        h = f"trainer-{rank}:40:41 [0] NCCL INFO"
        lines += [
            (
                f"{h} NET/OFI Running on p4d.24xlarge platform, Setting NCCL_TOPO_FILE environment variable to "
                "/opt/amazon/ofi-nccl/share/aws-ofi-nccl/xml/p4d-24xl-topo.xml"
            ),
            f"{h} comm 0x55d0 rank {rank} nRanks 4 nNodes 4 localRanks 1 localRank 0 MNNVL 0",
            f"{h} NCCL_SOCKET_IFNAME set by environment to eth0",
        ]
    found = diagnose({"j.log": "\n".join(lines) + "\n"}, {})
    assert [(f.severity, f.check) for f in found] == [("warning", "nccl.one-gpu-per-pod")]
    assert found[0].message.startswith("4 ranks on 4 nodes with 1 GPU each, on p4d.24xlarge instances with 8 GPUs")
    assert "nvidia.com/gpu: 8" in found[0].hint
    eight = "\n".join(
        line.replace("nRanks 4 nNodes 4 localRanks 1", "nRanks 8 nNodes 1 localRanks 8") for line in lines
    )
    assert checks(eight + "\n") == []


# ---- node descriptions ---------------------------------------------------------------------------------------------


def zero_allocatable(age: str) -> str:
    alloc = HEALTHY.index("Allocatable:")
    text = HEALTHY[:alloc] + HEALTHY[alloc:].replace(
        "  nvidia.com/gpu:         8\n", "  nvidia.com/gpu:         0\n", 1
    )
    plugin = (
        "nvidia-device-plugin-daemonset-m5t2r             0 (0%)        0 (0%)      0 (0%)           0 (0%)         "
    )
    return text.replace(plugin + "2d3h", plugin + age)


def test_a_device_plugin_restarted_seconds_ago_is_not_a_dead_node() -> None:
    assert (
        "nvidia-device-plugin-daemonset-m5t2r             0 (0%)        0 (0%)      0 (0%)           0 (0%)        "
        " 2d3h" in HEALTHY
    )
    assert checks(node=zero_allocatable("12s")) == [("warning", "node.device-plugin-restarting")]
    assert checks(node=zero_allocatable("3m4s")) == [("warning", "node.device-plugin-restarting")]
    assert checks(node=zero_allocatable("2d3h")) == [("critical", "node.gpu-not-allocatable")]


def test_a_lost_node_cut_before_its_conditions_is_not_ready() -> None:
    # The node controller's unreachable taint says Ready=Unknown even when the paste stops at the Conditions header.
    lost = (HELDOUT / "microsoft-pai-4589-p100-notready-unreachable.txt").read_text()
    [f] = diagnose({}, {"n.txt": lost})
    assert (f.severity, f.check, f.subject) == ("critical", "node.not-ready", "p100")
    assert f.message == "not ready: tainted node.kubernetes.io/unreachable by the node controller"
    # A node seconds old carries node.kubernetes.io/not-ready (and Karpenter's startup taint): not a fault.
    new = checks(node=(REAL / "karpenter-1476-g5-new-node-taints.txt").read_text())
    assert "node.not-ready" not in [c for _, c in new]


def test_a_paste_cut_anywhere_keeps_what_it_shows() -> None:
    for end in range(0, len(HEALTHY), 97):
        found = diagnose({}, {"n.txt": HEALTHY[:end]})
        assert all(f.severity == "info" or f.check == "input.not-node-describe" for f in found), (end, found)
    cut = HEALTHY[: HEALTHY.index("Allocatable:") + len("Allocatable:\n")]
    [node] = parse_nodes(cut)
    assert (node.cut, node.capacity is not None, node.allocatable) == ("Allocatable", True, {})


def test_operator_namespaces_are_not_teams_and_time_slicing_is_sharing() -> None:
    managed = HEALTHY
    pods = managed.index("  gpu-operator                nvidia-device-plugin")
    row = "  {ns:<27} {name:<48} 0 (0%)        0 (0%)      0 (0%)           0 (0%)         1d\n"
    extra = "".join(row.format(ns=ns, name=f"p-{ns}") for ns in ("gpu-operator-resources", "default", "nlp"))
    text = managed[:pods] + extra + managed[pods:]
    assert [c for c in checks(node=text) if c[1] == "node.several-teams"] == [("warning", "node.several-teams")]
    [f] = [f for f in diagnose({}, {"n.txt": text}) if f.check == "node.several-teams"]
    assert f.message == "pods from 2 team namespaces share this GPU node: nlp, vision"
    shared = text.replace("nvidia.com/gpu.replicas=1", "nvidia.com/gpu.replicas=4").replace(
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-SHARED"
    )
    assert [c for c in checks(node=shared) if c[1] == "node.several-teams"] == [("info", "node.several-teams")]


def test_fixes_name_the_setting_to_change() -> None:
    eks = diagnose({"j.log": (REAL / "aws-do-eks-54-efa-init-failed-pod-identity-link.log").read_text()}, {})
    assert [f.check for f in eks] == ["nccl.efa-unavailable", "nccl.socket-interface"]
    assert "vpc.amazonaws.com/efa" in eks[0].hint and "fabric: efa" in eks[0].hint
    assert eks[1].hint.startswith("set NCCL_SOCKET_IFNAME=enp73s0 ")
    [xid] = diagnose({}, {"n.txt": (REAL / "gpu-operator-1065-xid94-capacity8-allocatable7.txt").read_text()})
    assert "restarting the device plugin pod advertises the GPU again" in xid.hint
