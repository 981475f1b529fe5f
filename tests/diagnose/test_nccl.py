"""NCCL_DEBUG=INFO parsing and checks, over realistic logs (fixtures/*.log) and small edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose.nccl import parse_nccl

FIXTURES = Path(__file__).parent / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def summary(nccl: dict[str, str]) -> list[tuple[str, str, str, str]]:
    return [(f.severity, f.check, f.subject, f.message) for f in diagnose(nccl, {})]


def log(name: str) -> list[tuple[str, str, str, str]]:
    return summary({name: read(name)})


# ---- parsing ---------------------------------------------------------------------------------------------------


def test_efa_p5_log_is_summarised_per_process() -> None:
    parsed = parse_nccl(read("efa_p5_nccl2.26.log"))
    procs = sorted(parsed.processes.values(), key=lambda p: p.rank_list)
    assert [p.rank_list for p in procs] == [[r] for r in range(16)]
    assert {p.host for p in procs[:8]} == {"llama-train-worker-0"}
    p = procs[9]
    assert (p.host, p.pid, p.nranks) == ("llama-train-worker-1", 216, 16)
    assert p.version == "2.26.2+cuda12.8"
    assert (p.plugin, p.plugin_missing, p.plugin_error) == ("Libfabric", False, None)
    assert (p.ofi_version, p.ofi_provider, p.ofi_nics) == ("1.14.2", "efa", 32)
    assert (p.network, p.bootstrap_iface) == ("Libfabric", "eth0")
    assert p.env == {"NCCL_SOCKET_IFNAME": "^lo,docker,veth"}
    assert p.gdr_enabled and not p.gdr_disabled
    assert set(p.net_channels) == {"Libfabric"} and p.gdr_channels == sum(p.net_channels.values())
    assert parsed.bare_versions == []


def test_nccl_2_18_format_with_mpirun_prefixes() -> None:
    parsed = parse_nccl(read("mpi_ib_nccl2.18.log"))
    assert parsed.bare_versions == ["2.18.3+cuda12.2"]  # rank 0 printf()s it without the header
    assert len(parsed.processes) == 16
    p = parsed.processes[("dgx-a100-04", 2240)]
    assert p.rank_list == [14]  # 2.18 "comm %p rank %d nranks %d cudaDev %d busId %lx ... - Init COMPLETE"
    assert p.plugin_missing and p.plugin is None and p.plugin_error is None
    assert p.ib_devices == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    assert (p.oob_iface, p.bootstrap_iface) == ("ib0", "ib0")
    assert p.env["NCCL_IB_HCA"].startswith("mlx5_0,") and p.env["NCCL_P2P_LEVEL"] == "NVL"
    pxn = parsed.processes[("dgx-a100-03", 2234)]  # rank 3 has a "via NET/IB/3(2)/GDRDMA" proxy route
    assert pxn.net_channels["IB"] == pxn.gdr_channels >= 1


def test_truncated_log_drops_the_cut_line_and_keeps_the_rest() -> None:
    text = read("truncated_socket_nccl2.28.log")
    parsed = parse_nccl(text)
    assert not text.endswith("\n") and text.endswith("NCCL INFO Bootstra")
    cut = "\nh:1:2 [0] NCCL INFO Using network Socket"  # a whole line, but the paste stops in it
    assert ("h", 1) not in parse_nccl(text + cut).processes and ("h", 1) in parse_nccl(text + cut + "\n").processes
    # An error on the last line is kept: a paste without a final newline, or the last line a dying job wrote.
    for last in (
        "h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 802 'system not yet initialized'",
        "[rank0]: Cuda failure 802 'system not yet initialized'",
    ):
        found = diagnose({"j.log": last}, {})
        assert [(f.severity, f.check) for f in found] == [("critical", "nccl.fabric-manager")]
    assert len(parsed.processes) == 16
    assert all(p.network == "Socket" and not p.net_channels for p in parsed.processes.values())
    assert all(
        p.plugin_missing and p.plugin_error is None for p in parsed.processes.values()
    )  # IB init failing is normal


def test_torchrun_prefixes_timestamps_and_two_writers_on_one_line() -> None:
    w0, w1 = parse_nccl(read("prefixed_worker0.log")), parse_nccl(read("prefixed_worker1.log"))
    assert len(w0.processes) == len(w1.processes) == 8
    p = w1.processes[("mistral-ft-worker-1", 150)]
    assert p.rank_list == [11] and p.network == "AWS Libfabric"
    assert set(p.net_channels) == {"AWS Libfabric"}  # the net name holds a space: "via NET/AWS Libfabric/0/GDRDMA"
    assert (p.ofi_provider, p.ofi_nics, p.ofi_version) == ("efa", 4, "1.13.2-aws")  # "Selected Provider is efa"
    joined = next(line for line in read("prefixed_worker0.log").splitlines() if line.count("NCCL INFO") == 2)
    first, second = joined.split("[rank")[1:3]
    for pid in (int(first.split(":")[2]), int(second.split(":")[2])):  # both writers' channel lines were read
        p = w0.processes[("mistral-ft-worker-0", pid)]
        assert p.channel_ranks == set(p.rank_list)


def test_two_ranks_interleaved_on_one_line_are_read_as_the_ranks_wrote_them() -> None:
    # torchrun's ranks share one stdout: rank 0's bare version line and rank 2's header line, glued (issue 47 item 10)
    glued = "NCCL version 2.26.2[rank2]:host-a:12:12 [2] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    apart = "NCCL version 2.26.2\n[rank2]:host-a:12:12 [2] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    assert parse_nccl(glued) == parse_nccl(apart)
    assert parse_nccl(glued).bare_versions == ["2.26.2"]
    mpi = "[1,0]<stdout>:NCCL version 2.26.2+cuda12.8[1,1]<stdout>:NCCL version 2.26.2x\n"
    assert parse_nccl(mpi).bare_versions == ["2.26.2+cuda12.8", "2.26.2x"]
    assert summary({"mpi.log": mpi}) == []  # one release, whatever is glued after it
    assert summary({"a.log": "NCCL version 2.26.2+cuda12.8\n", "b.log": glued}) == [
        (
            "warning",
            "nccl.mixed-versions",
            "job",
            "ranks run different NCCL versions: 2.21.5 on host-a; 2.26.2 on a.log, b.log",
        )
    ]


def test_header_variants_and_plugin_errors() -> None:
    text = "\n".join(
        [
            "[2026-03-04 12:00:01] host-a:10:12 [0] NCCL INFO NET/Plugin: Plugin load returned 11 : "
            "libnccl-net.so: undefined symbol: fi_getinfo : when loading libnccl-net.so",
            "host-a:10:12 [0] transport.cc:12 (ncclTransportP2pSetup) NCCL WARN Connect to 10.0.0.6<4122> failed",
            "host-a:10:12 [0] NCCL INFO NCCL_NCHANNELS_PER_NET_PEER set by environment to 4.",
            "pod/trainer-0 host-a:10:12 [0] NCCL INFO Using network Socket",
            "random text host-a: not a header [0] NCCL INFO",
            "",
        ]
    )
    p = parse_nccl(text).processes[("host-a", 10)]
    assert p.plugin_error is not None and "undefined symbol" in p.plugin_error
    assert p.env == {"NCCL_NCHANNELS_PER_NET_PEER": "4"}
    assert p.network == "Socket"


# ---- checks over the fixtures ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["efa_p5_nccl2.26.log", "mpi_ib_nccl2.18.log"])
def test_healthy_jobs_have_no_findings(name: str) -> None:
    assert log(name) == []


def test_per_pod_logs_are_one_job() -> None:
    assert summary({n: read(n) for n in ("prefixed_worker0.log", "prefixed_worker1.log")}) == []


def test_socket_fallback_with_a_broken_plugin() -> None:
    assert log("socket_fallback_nccl2.24.log") == [  # the cause first, then the symptom
        (
            "critical",
            "nccl.plugin-failed",
            "all ranks",
            "the net plugin failed to load: libfabric.so.1: cannot open shared object file: No such file or directory",
        ),
        (
            "critical",
            "nccl.socket-fallback",
            "all ranks",
            "inter-node channels use NET/Socket (TCP fallback) over eth0",
        ),
        (
            "info",
            "nccl.socket-ifname-unset",
            "all ranks",
            "NCCL_SOCKET_IFNAME is not set: NCCL picked eth0 by its own interface order",
        ),
        ("info", "nccl.version", "job", "NCCL 2.24.3+cuda12.6"),
    ]
    plugin = diagnose({"s.log": read("socket_fallback_nccl2.24.log")}, {})[0]
    assert "install libfabric.so.1" in plugin.hint and "LD_LIBRARY_PATH" in plugin.hint


def test_one_rank_fell_back_to_socket() -> None:
    assert log("mixed_fallback_nccl2.27.log") == [
        (
            "critical",
            "nccl.efa-unavailable",
            "train-worker-1 (rank 13)",
            "EFA is not usable: NET/OFI Unable to find a protocol that worked. Failing initialization.",
        ),
        (
            "critical",
            "nccl.transport-mismatch",
            "train-worker-1 (rank 13)",
            "NET/Socket (TCP fallback) selected while 15 other ranks use NET/Libfabric",
        ),
        ("info", "nccl.version", "job", "NCCL 2.27.3+cuda12.9, aws-ofi-nccl 1.14.2"),
    ]


def test_infiniband_without_pinned_hcas() -> None:
    assert log("ib_nccl2.21.log") == [
        (
            "info",
            "nccl.ib-hca-unset",
            "all ranks",
            "NCCL_IB_HCA is not set: NCCL uses every HCA it finds (mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, "
            "mlx5_6, mlx5_7, mlx5_8)",
        ),
        ("info", "nccl.version", "job", "NCCL 2.21.5+cuda12.4"),  # from the bare version line
    ]


def test_pinned_hcas_clear_the_infiniband_warning() -> None:
    text = read("ib_nccl2.21.log")
    pids = sorted(parse_nccl(text).processes)
    pinned = text + "".join(f"{h}:{pid}:{pid} [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1\n" for h, pid in pids)
    assert summary({"ib.log": pinned}) == []


def test_infiniband_without_gpudirect() -> None:
    text = read("ib_nccl2.21.log").replace("/GDRDMA", "")
    checks = [(sev, check, subject) for sev, check, subject, _ in summary({"ib.log": text})]
    assert checks == [
        ("warning", "nccl.gdr-off", "all ranks"),
        ("info", "nccl.ib-hca-unset", "all ranks"),
        ("info", "nccl.version", "job"),
    ]


def test_truncated_socket_log_is_still_diagnosed() -> None:
    assert [(s, c, subj) for s, c, subj, _ in log("truncated_socket_nccl2.28.log")] == [
        ("critical", "nccl.plugin-failed", "all ranks"),
        ("critical", "nccl.socket-fallback", "all ranks"),
        ("info", "nccl.version", "job"),
    ]
    assert log("truncated_socket_nccl2.28.log")[0][3] == (
        "no net plugin found (libnccl-net.so): NCCL fell back to its internal transports"
    )


def test_a_pod_on_socket_among_per_pod_logs_names_its_file_and_ranks() -> None:
    w1 = read("prefixed_worker1.log").replace("NET/AWS Libfabric/", "NET/Socket/").replace("/GDRDMA", "")
    found = diagnose({"prefixed_worker0.log": read("prefixed_worker0.log"), "prefixed_worker1.log": w1}, {})
    top = found[0]
    assert (top.check, top.source, top.subject) == (
        "nccl.transport-mismatch",
        "prefixed_worker1.log",
        "mistral-ft-worker-1 (ranks 8-15)",
    )
    assert top.message == "NET/Socket (TCP fallback) selected while 8 other ranks use NET/AWS Libfabric"


def test_mixed_nccl_versions() -> None:
    w1 = read("prefixed_worker1.log").replace("NCCL version 2.23.4+cuda12.4", "NCCL version 2.21.5+cuda12.4")
    found = summary({"prefixed_worker0.log": read("prefixed_worker0.log"), "prefixed_worker1.log": w1})
    assert found == [
        (
            "warning",
            "nccl.mixed-versions",
            "job",
            "ranks run different NCCL versions: 2.21.5 on mistral-ft-worker-1; 2.23.4 on mistral-ft-worker-0",
        )
    ]


# ---- small cases -----------------------------------------------------------------------------------------------


def socket_job(ifaces: str, extra: str = "") -> str:
    lines = []
    for host, rank, peer in (("node-a", 0, 1), ("node-b", 1, 0)):
        h = f"{host}:7:7 [0] NCCL INFO"
        lines += [
            f"{h} Bootstrap: Using eth0:10.0.0.{rank + 5}<0>",
            f"{h} NET/Socket : Using {ifaces}",
            f"{h} Using network Socket",
            extra.format(h=h),
            f"{h} Channel 00/0 : {rank}[0] -> {peer}[0] [send] via NET/Socket/0",
        ]
    return "\n".join(line for line in lines if line) + "\n"


def test_management_interface_chosen_among_several() -> None:
    found = summary({"j.log": socket_job("[0]eth0:10.0.0.5<0> [1]net1:192.168.7.5<0>")})
    assert found == [
        (
            "critical",
            "nccl.socket-fallback",
            "all ranks",
            "inter-node channels use NET/Socket (TCP fallback) over eth0, net1",
        ),
        (
            "warning",
            "nccl.management-interface",
            "all ranks",
            "NCCL bootstrap/socket traffic uses eth0 (the pod's management interface) although net1 is available",
        ),
    ]  # no separate NCCL_SOCKET_IFNAME finding: the interface finding already says what to set


def test_pinned_socket_interface_is_not_reported_as_unset() -> None:
    found = summary({"j.log": socket_job("[0]eth0:10.0.0.5<0>", "{h} NCCL_SOCKET_IFNAME set by environment to eth0")})
    assert [c for _, c, _, _ in found] == ["nccl.socket-fallback"]


def test_single_node_job_on_socket_network_is_fine() -> None:
    text = (
        "\n".join(
            [
                "box:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>",
                "box:1:1 [0] NCCL INFO Using network Socket",
                "box:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
                "box:2:2 [1] NCCL INFO Using network Socket",
                "box:2:2 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct",
            ]
        )
        + "\n"
    )
    assert summary({"one.log": text}) == []


def test_a_file_without_nccl_lines() -> None:
    assert summary({"app.log": 'Traceback (most recent call last):\n  File "train.py", line 3\n'}) == [
        ("warning", "input.no-nccl-lines", "log", "no NCCL_DEBUG=INFO lines found")
    ]
