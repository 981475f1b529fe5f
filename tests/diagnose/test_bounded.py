"""Parsing is linear in the input (issue 14 item 6): generated megabyte lines that once backtracked for hours."""

from __future__ import annotations

import time

import pytest

from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose.nccl import parse_nccl
from gpufleet.diagnose.node import parse_nodes

MB = 1 << 20
BUDGET_S = 0.5  # each input; the quadratic parsers needed 28-35 s for a tenth of this size

LINES = {
    "no colon": "a" * MB,
    "no colon before an NCCL marker": "a" * MB + " NCCL INFO x",
    "a run of spaces": " " * MB + "x",
    "a key and a run of spaces": "Name: x" + " " * MB + "y",  # 157 s at 100 KB with the old node pattern
    "a header and a run of spaces": "h:1:1 [0] NCCL INFO Using network" + " " * MB + "x",
    "colons": "a:" * (MB // 2),
    "digits and colons": "1:" * (MB // 2),
    "a library name": "a" * MB + ".so: cannot open shared object file",
    "brackets": "[0]" * (MB // 3),
    "timestamps": "2025-01-01T00:00:00" * (MB // 19),
    "a libfabric prefix": "libfabric:1:1::" + "a" * MB,
    "capital letters": "A" * MB,
    "an indented resource": " " + "a" * MB,
    "a condition row": "  Ready True " + " " * MB + "x",
}


@pytest.mark.parametrize("name", sorted(LINES))
@pytest.mark.parametrize("newline", ["\n", ""])
def test_a_megabyte_line_parses_fast(name: str, newline: str) -> None:
    for prefix in ("", "Conditions:\n", "Capacity:\n"):
        text = prefix + LINES[name] + newline
        start = time.perf_counter()
        parse_nccl(text)
        parse_nodes(text)
        diagnose({"f.log": text}, {"f.txt": text})
        assert time.perf_counter() - start < BUDGET_S, (name, prefix)


def test_many_lines_scale_linearly() -> None:
    line = "host-a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n"
    small, large = line * 2_000, line * 20_000

    def took(text: str) -> float:
        # The best of three: a busy machine only ever adds time, so the minimum is the parser's own.
        times = []
        for _ in range(3):
            start = time.perf_counter()
            parse_nccl(text)
            times.append(time.perf_counter() - start)
        return min(times)

    took(small)  # warm up
    assert took(large) < 25 * max(took(small), 0.005)  # ten times the lines, about ten times the time


def test_overlong_lines_are_cut_not_dropped() -> None:
    long_tail = "host-a:1:1 [0] NCCL INFO Using network IB " + "x" * (2 * MB) + "\n"
    p = parse_nccl(long_tail).processes[("host-a", 1)]
    assert p.network is not None and p.network.startswith("IB x") and len(p.network) < 20_000


# Issue 26 item 3: an IB device list whose port is a run of digits without the "/IB" after it took 5.5 s for one
# 16 KB line (56 s for 160 KB) through _IB_DEV. A megabyte of such lines, cut anywhere, stays far under 5 s.
IB_DIGITS = "host-a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:"


@pytest.mark.parametrize("line_kb", [16, 160, 1024])
def test_a_megabyte_of_ib_device_digits_parses_fast(line_kb: int) -> None:
    line = IB_DIGITS + "1" * (line_kb * 1024 - len(IB_DIGITS) - 1) + "\n"
    text = line * (MB // len(line))
    start = time.perf_counter()
    findings = diagnose({"f.log": text}, {})
    assert time.perf_counter() - start < 5.0
    assert parse_nccl(line).processes[("host-a", 1)].ib_devices == []
    assert isinstance(findings, list)
