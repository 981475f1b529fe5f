"""`gpufleet diagnose` through add_arguments() and run(): exit codes, output, ranking across inputs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gpufleet.commands.diagnose import add_arguments, run
from gpufleet.diagnose.findings import LogFinding, rank, render

FIXTURES = Path(__file__).parent / "fixtures"


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet diagnose")
    add_arguments(parser)
    return run(parser.parse_args(list(argv)))


def fx(name: str) -> str:
    return str(FIXTURES / name)


def test_clean_inputs_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli("--nccl-log", fx("efa_p5_nccl2.26.log"), "--node-describe", fx("node_p5_healthy.txt"))
    out = capsys.readouterr()
    assert (code, out.out, out.err) == (0, "gpufleet diagnose: no findings\n", "")


def test_findings_exit_1_most_important_first(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(
        "--nccl-log",
        fx("socket_fallback_nccl2.24.log"),
        "--node-describe",
        fx("node_p5_disk_pressure.txt"),
        "--node-describe",
        fx("node_p4d_zero_allocatable.txt"),
    )
    out = capsys.readouterr().out
    assert code == 1
    heads = [line for line in out.splitlines() if line.startswith("[")]
    assert heads == [
        (
            f"[critical] {fx('node_p4d_zero_allocatable.txt')}: ip-10-1-88-41.us-west-2.compute.internal: "
            "Ready but advertises no allocatable nvidia.com/gpu: the device plugin never registered"
        ),
        (
            f"[critical] {fx('socket_fallback_nccl2.24.log')}: all ranks: "
            "the net plugin failed to load: libfabric.so.1: cannot open shared object file: No such file or directory"
        ),
        (
            f"[critical] {fx('socket_fallback_nccl2.24.log')}: all ranks: "
            "inter-node channels use NET/Socket (TCP fallback) over eth0"
        ),
        (
            f"[warning] {fx('node_p5_disk_pressure.txt')}: ip-10-1-41-66.us-west-2.compute.internal: DiskPressure=True"
            " (KubeletHasDiskPressure: kubelet has disk pressure): the kubelet evicts pods and rejects new ones"
        ),
        (
            f"[info] {fx('socket_fallback_nccl2.24.log')}: all ranks: "
            "NCCL_SOCKET_IFNAME is not set: NCCL picked eth0 by its own interface order"
        ),
        f"[info] {fx('socket_fallback_nccl2.24.log')}: job: NCCL 2.24.3+cuda12.6",
    ]
    assert out.count("\n  fix: ") == 5  # every finding but the version says what to change


def test_info_only_findings_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli("--node-describe", fx("node_g5_untainted.txt"))
    out = capsys.readouterr().out
    assert code == 0
    node = "ip-10-1-20-7.us-west-2.compute.internal: "
    assert [line.split(node)[-1] for line in out.splitlines() if line.startswith("[")] == [
        "no nvidia.com/gpu taint: pods that do not ask for GPUs can land here and take its CPU and memory",
        "no nvidia.com/gpu.product label: GPU Feature Discovery has not labelled this node",
        "pods from 2 team namespaces share this GPU node: nlp, recsys",
    ]
    assert all(line.startswith("[info]") for line in out.splitlines() if line.startswith("["))


def test_unreadable_file_exits_2_without_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    assert run_cli("--nccl-log", fx("efa_p5_nccl2.26.log"), "--nccl-log", str(missing)) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == f"gpufleet diagnose: error: cannot read {missing}: No such file or directory\n"
    assert run_cli("--node-describe", str(tmp_path)) == 2
    assert (
        capsys.readouterr().err
        == f"gpufleet diagnose: error: cannot read {tmp_path}: a directory, not a regular file\n"
    )


def test_no_input_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli() == 2
    assert (
        capsys.readouterr().err
        == "gpufleet diagnose: error: give at least one --nccl-log FILE, --node-describe FILE, --dataloader-log FILE"
        " or --pull-log FILE\n"
    )


def test_undecodable_bytes_do_not_stop_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_bytes((FIXTURES / "efa_p5_nccl2.26.log").read_bytes() + b"\xff\xfe progress \xe2\x96\n")
    assert run_cli("--nccl-log", str(log)) == 0
    assert capsys.readouterr().out == "gpufleet diagnose: no findings\n"


def test_render_and_rank() -> None:
    findings = rank(
        [
            LogFinding("info", "a.log", "job", "NCCL 2.26.2+cuda12.8", "", "nccl.version"),
            LogFinding("warning", "n.txt", "node-1", "no nvidia.com/gpu taint", "taint it", "node.no-gpu-taint"),
            LogFinding("warning", "a.log", "all ranks", "GPUDirect RDMA is off", "load peermem", "nccl.gdr-off"),
            LogFinding(
                "critical", "n.txt", "node-1", "AcceleratedHardwareReady=False", "drain", "node.accelerated-hardware"
            ),
        ]
    )
    assert (
        render(findings) == "[critical] n.txt: node-1: AcceleratedHardwareReady=False\n  fix: drain\n\n"
        "[warning] a.log: all ranks: GPUDirect RDMA is off\n  fix: load peermem\n\n"
        "[warning] n.txt: node-1: no nvidia.com/gpu taint\n  fix: taint it\n\n"
        "[info] a.log: job: NCCL 2.26.2+cuda12.8"
    )
