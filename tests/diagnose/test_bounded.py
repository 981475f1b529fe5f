"""Parsing is linear in the input (issue 14 item 6): generated megabyte lines that once backtracked for hours."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose.nccl import parse_nccl
from gpufleet.diagnose.node import parse_nodes
from tests.scaling import assert_linear

MB = 1 << 20
# A ladder of line lengths up to a megabyte, in steps of 8 (then 2): below the 16 KiB every parser cuts a line at,
# where quadratic work inside the cut shows (1 to 8 KiB: the whole line, its last character too, is parsed), and
# beyond it, where it shows if the cut is gone.
SIZES = (1 << 10, 8 << 10, 64 << 10, 512 << 10, MB)

SHAPES: dict[str, Callable[[int], str]] = {
    "no colon": lambda n: "a" * n,
    "no colon before an NCCL marker": lambda n: "a" * n + " NCCL INFO x",
    "a run of spaces": lambda n: " " * n + "x",
    "a key and a run of spaces": lambda n: "Name: x" + " " * n + "y",  # 157 s at 100 KB with the old node pattern
    "a header and a run of spaces": lambda n: "h:1:1 [0] NCCL INFO Using network" + " " * n + "x",
    "colons": lambda n: "a:" * (n // 2),
    "digits and colons": lambda n: "1:" * (n // 2),
    "a library name": lambda n: "a" * n + ".so: cannot open shared object file",
    "brackets": lambda n: "[0]" * (n // 3),
    "timestamps": lambda n: "2025-01-01T00:00:00" * (n // 19),
    "a libfabric prefix": lambda n: "libfabric:1:1::" + "a" * n,
    "capital letters": lambda n: "A" * n,
    "an indented resource": lambda n: " " + "a" * n,
    "a condition row": lambda n: "  Ready True " + " " * n + "x",
    "a pulled event": lambda n: 'Successfully pulled image "x" in 1' + "1" * n,
    "a pulled event's size": lambda n: (
        'Successfully pulled image "x" in 1s (1s including waiting). Image size: ' + "1" * n
    ),
    "a soci line": lambda n: 'x: {"msg":' + '"a' * (n // 2),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("newline", ["\n", ""])
def test_a_megabyte_line_parses_fast(name: str, newline: str) -> None:
    """Each parser's time grows linearly with the line, measured against its own shorter lines in the same run
    (tests/scaling.py), so a busy machine does not fail it and a quadratic pattern does: the quadratic parsers took
    28-35 s for a tenth of a megabyte."""
    shape = SHAPES[name]

    def work(size: int) -> None:
        for prefix in ("", "Conditions:\n", "Capacity:\n"):
            text = prefix + shape(size) + newline
            parse_nccl(text)
            parse_nodes(text)
            diagnose({"f.log": text}, {"f.txt": text}, None, {"p.log": text}, 1000)

    assert_linear(work, SIZES, name)


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
