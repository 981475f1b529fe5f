"""Checkpoint sizing arithmetic, pinned against cases computed by hand."""

from __future__ import annotations

import math

import pytest

from gpufleet.facts import checkpoints as c


@pytest.mark.parametrize(
    ("parameters", "per_parameter", "nbytes", "text"),
    [
        (7_000_000_000, 16, 112_000_000_000, "112 GB"),  # "about 110 GB"
        (70_000_000_000, 16, 1_120_000_000_000, "1.12 TB"),  # "about 1.1 TB"
        (405_000_000_000, 16, 6_480_000_000_000, "6.48 TB"),
        (7_000_000_000, 2, 14_000_000_000, "14 GB"),  # bf16 weights only
    ],
)
def test_checkpoint_bytes(parameters: int, per_parameter: int, nbytes: int, text: str) -> None:
    assert c.checkpoint_bytes(parameters, per_parameter) == nbytes
    assert c.human_bytes(nbytes) == text


def test_sixteen_bytes_per_parameter_is_the_default() -> None:
    assert c.checkpoint_bytes(1_000) == 16_000


@pytest.mark.parametrize(
    ("nbytes", "gbps", "nodes", "seconds"),
    [
        (1_120_000_000_000, 2, 1, 560.0),  # 1.12 TB at 2 GB/s
        (1_120_000_000_000, 1.25, 1, 896.0),
        (1_120_000_000_000, 2, 4, 140.0),  # four nodes write a quarter each
        (112_000_000_000, 4, 2, 14.0),
    ],
)
def test_write_seconds(nbytes: int, gbps: float, nodes: int, seconds: float) -> None:
    assert c.write_seconds(nbytes, gbps, nodes) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("write_s", "mtbf_s", "interval_s"),
    [
        (300, 86_400, 7_200.0),  # sqrt(2 x 300 x 86400) = sqrt(51,840,000) = 7200
        (50, 36, 60.0),  # sqrt(3600)
        (560, 21_600, math.sqrt(24_192_000)),  # 70B at 2 GB/s, 6 h MTBF: 4918.5 s = 82.0 min
        (0, 3_600, 0.0),
    ],
)
def test_young_daly(write_s: float, mtbf_s: float, interval_s: float) -> None:
    assert c.young_daly_seconds(write_s, mtbf_s) == pytest.approx(interval_s)


def test_waste_fraction() -> None:
    # 300/7200 + 7200/(2 x 86400) = 1/24 + 1/24
    assert c.waste_fraction(7_200, 300, 86_400) == pytest.approx(1 / 12)


def seventy_b(**kw: object) -> c.Sizing:
    args: dict = dict(
        parameters=70_000_000_000,
        bytes_per_parameter=16,
        mtbf_hours=6,
        local_gbps=2,
        bucket_gbps=1.25,
        writer_nodes=1,
        staged=True,
    )
    args.update(kw)
    return c.sizing(**args)


def test_staged_sizing_blocks_on_the_local_write() -> None:
    s = seventy_b()
    assert (s.checkpoint_bytes, s.local_write_s, s.bucket_write_s, s.mtbf_s) == (
        1_120_000_000_000,
        560.0,
        896.0,
        21_600.0,
    )
    assert s.blocking_write_s == 560.0
    assert s.young_daly_s == pytest.approx(4918.536)
    assert c.duration(s.young_daly_s) == "82.0 min"
    assert s.interval_s == s.recommended_interval_s == s.young_daly_s
    assert s.shard_bytes == 1_120_000_000_000


def test_unstaged_sizing_blocks_on_the_bucket_write() -> None:
    s = seventy_b(staged=False, mtbf_hours=4)
    assert s.local_write_s is None and s.blocking_write_s == 896.0
    assert s.young_daly_s == pytest.approx(math.sqrt(2 * 896 * 14_400))  # 5079.8 s = 84.7 min


def test_interval_never_shorter_than_the_upload() -> None:
    # local 1.12 TB / (200 GB/s x 1) = 5.6 s; upload 896 s; MTBF 0.01 h = 36 s: Young/Daly sqrt(2 x 5.6 x 36) = 20.1 s
    s = seventy_b(local_gbps=200, mtbf_hours=0.01)
    assert s.young_daly_s == pytest.approx(math.sqrt(2 * 5.6 * 36))
    assert s.recommended_interval_s == 896.0


def test_writer_nodes_split_the_shard() -> None:
    s = seventy_b(writer_nodes=3)
    assert s.shard_bytes == 373_333_333_334  # ceil(1.12e12 / 3)
    assert s.local_write_s == pytest.approx(560 / 3)


@pytest.mark.parametrize(
    ("interval_minutes", "expected"),
    [
        (None, None),
        (5, "shorter than writing one checkpoint to node-local NVMe (9.3 min)"),  # 300 s < 560 s
        (10, "shorter than uploading one checkpoint to the bucket (14.9 min)"),  # 560 < 600 < 896
        (15, None),  # 900 s >= 896 s
        (120, None),
    ],
)
def test_interval_warnings_staged(interval_minutes: float | None, expected: str | None) -> None:
    warnings = c.interval_warnings(seventy_b(interval_minutes=interval_minutes))
    if expected is None:
        assert warnings == []
    else:
        (warning,) = warnings
        assert expected in warning and warning.startswith(f"checkpoints.intervalMinutes ({interval_minutes:.1f} min)")


def test_interval_warning_unstaged_names_the_bucket() -> None:
    (warning,) = c.interval_warnings(seventy_b(staged=False, interval_minutes=10))
    assert (
        "shorter than writing one checkpoint to the bucket (14.9 min): the job would do nothing but checkpoint"
        in warning
    )


@pytest.mark.parametrize(("seconds", "text"), [(45, "45 s"), (560, "9.3 min"), (4918.5, "82.0 min"), (21_600, "6.0 h")])
def test_duration(seconds: float, text: str) -> None:
    assert c.duration(seconds) == text
