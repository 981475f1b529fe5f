"""diagnose on p5 (issue 29 item 16): aws-ofi-nccl prints `NET/OFI Running on <type> platform` only where a topology
file or platform tuning applies (src/platform-aws.cpp), not on p5, p5e or p5en, so the EFA-device and GPUDirect checks,
which read the instance from that line, never fired there. The platform is now inferred from the provider line's NIC
count ("Selected provider is efa ... (found N nics)", src/nccl_ofi_net.cpp) and NCCL's localRanks, or diagnose says
that it cannot tell. The real p5 fixture (efa_p5_nccl2.26.log) has no platform line."""

from __future__ import annotations

from pathlib import Path

from gpufleet.commands.diagnose import diagnose

FIXTURE = (Path(__file__).parent / "fixtures" / "efa_p5_nccl2.26.log").read_text()


def pod(nics: int, local: int = 8, gdr: bool = True, host: str = "w0") -> str:
    """One full pod's lines, as aws-ofi-nccl 1.16 and NCCL 2.26 print them on p5 (no platform line)."""
    suffix = "/GDRDMA" if gdr else ""
    return "".join(
        f"{host}:{40 + r}:41 [{r}] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found {nics}"
        f" nics)\n{host}:{40 + r}:41 [{r}] NCCL INFO comm 0x1 rank {r} nRanks 16 nNodes 2 localRanks {local} localRank"
        f" {r} MNNVL 0\n{host}:{40 + r}:41 [{r}] NCCL INFO Channel 00/0 : {r}[{r}] -> {8 + r}[{r}] [send] via"
        f" NET/Libfabric/{r}{suffix}\n"
        for r in range(local)
    )


def checks(text: str) -> list[tuple[str, str]]:
    return [(f.severity, f.check) for f in diagnose({"j.log": text}, {})]


def test_the_real_p5_log_has_no_platform_line_and_stays_clean() -> None:
    assert "Running on" not in FIXTURE and "(found 32 nics)" in FIXTURE
    assert [c for c in checks(FIXTURE) if c[0] != "info"] == []


def test_gdr_off_on_p5_without_a_platform_line() -> None:
    # 32 nics with 8 GPUs: p5.48xlarge or p5e.48xlarge, both with GPUDirect RDMA over EFA. Before: no finding.
    assert ("warning", "nccl.gdr-off") in checks(pod(32, gdr=False))
    assert ("warning", "nccl.gdr-off") in checks(FIXTURE.replace("/GDRDMA", ""))
    assert checks(pod(32)) == []


def test_too_few_efa_devices_without_a_platform_line() -> None:
    # No instance with 8 GPUs has exactly 2 EFA interfaces: the pod got fewer than its instance has.
    (found,) = [f for f in diagnose({"j.log": pod(2)}, {}) if f.check == "nccl.efa-devices"]
    assert found.severity == "warning"
    assert found.message == (
        "aws-ofi-nccl found 2 EFA device(s) and printed no platform line (it prints none on p5, p5e or p5en); no EFA"
        " instance type has exactly 2 with this many GPUs, so the pods got fewer than their instance has (the fewest"
        " any such type has is 4, g6e.48xlarge) and their traffic shares the NICs they have"
    )
    # A full count of some instance type is every device of it: nothing to say.
    assert [c for c in checks(pod(16)) if c[1] == "nccl.efa-devices"] == []


def test_when_the_nic_count_cannot_tell_gdr_it_says_so() -> None:
    # 4 nics with 8 GPUs fit p4d/p4de (GPUDirect) and g6e.48xlarge (none): no gdr-off, an info finding instead.
    found = [f for f in diagnose({"j.log": pod(4, gdr=False)}, {}) if f.severity != "info" or "platform" in f.check]
    assert [(f.severity, f.check) for f in found] == [("info", "nccl.platform-unknown")]
    assert found[0].message == (
        "aws-ofi-nccl printed no `NET/OFI Running on <type> platform` line, and 4 EFA device(s) with 8 GPU(s) per"
        " node fit g6e.48xlarge, p4d.24xlarge, p4de.24xlarge: whether the EFA channels should carry GPUDirect RDMA"
        " (none do) cannot be told from the log"
    )
