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
def test_young(write_s: float, mtbf_s: float, interval_s: float) -> None:
    """J. W. Young, CACM 17(9), 1974: T = sqrt(2 C M)."""
    assert c.young_seconds(write_s, mtbf_s) == pytest.approx(interval_s)


@pytest.mark.parametrize(
    ("write_s", "mtbf_s", "interval_s"),
    [
        # C/2M = 300/172800 = 1/576, sqrt = 1/24; sqrt(2CM) = 7200: 7200 x (1 + 1/72 + 1/5184) - 300
        # = 7200 + 100 + 1.3889 - 300 = 7001.3889 (Young: 7200)
        (300, 86_400, 7_001.388_889),
        # C = M/2: C/2M = 1/4, sqrt = 1/2; sqrt(2CM) = 3600: 3600 x (1 + 1/6 + 1/36) - 1800 = 4300 - 1800 = 2500
        # (Young: 3600, 44 % longer)
        (1_800, 3_600, 2_500.0),
        # C >= 2M: Daly's interval is M itself
        (100, 36, 36.0),
        (72, 36, 36.0),
        (0, 3_600, 0.0),
    ],
)
def test_daly(write_s: float, mtbf_s: float, interval_s: float) -> None:
    """J. T. Daly, FGCS 22(3), 2006: T = sqrt(2CM) [1 + (1/3) sqrt(C/2M) + (1/9)(C/2M)] - C for C < 2M, else M."""
    assert c.daly_seconds(write_s, mtbf_s) == pytest.approx(interval_s)


def test_waste_fraction_daly_model() -> None:
    # (T + C)/M = ln 2 makes e^((T+C)/M) - 1 = 1, so the loss is 1 - T/M: T = 2000, M = 3600 -> 1 - 5/9 = 4/9
    assert c.waste_fraction(2_000, 3_600 * math.log(2) - 2_000, 3_600) == pytest.approx(4 / 9)
    # Small C and T: Young's first-order C/T + T/2M = 1/24 + 1/24 = 0.0833; Daly's exponential model gives 0.0811
    assert c.waste_fraction(7_200, 300, 86_400) == pytest.approx(0.081064, abs=1e-6)
    # No checkpoint cost and T -> 0: nothing lost
    assert c.waste_fraction(1e-9, 0, 3_600) == pytest.approx(0, abs=1e-9)


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
    assert s.young_s == pytest.approx(4918.536)
    # C/2M = 560/43200 = 0.012963, sqrt 0.113855: 4918.536 x (1 + 0.037952 + 0.001440) - 560 = 4552.3 s
    assert s.daly_s == pytest.approx(4552.287, abs=1e-3)
    assert c.duration(s.daly_s) == "75.9 min"
    assert s.interval_s == s.recommended_interval_s == s.daly_s
    assert s.shard_bytes == 1_120_000_000_000
    assert s.waste == pytest.approx(0.2108, abs=1e-4)


def test_unstaged_sizing_blocks_on_the_bucket_write() -> None:
    s = seventy_b(staged=False, mtbf_hours=4)
    assert s.local_write_s is None and s.blocking_write_s == 896.0
    assert s.young_s == pytest.approx(math.sqrt(2 * 896 * 14_400))  # 5079.8 s = 84.7 min
    assert s.daly_s == pytest.approx(4500.069, abs=1e-3)


def test_interval_never_shorter_than_the_upload() -> None:
    # local 1.12 TB / (200 GB/s x 1) = 5.6 s; upload 896 s; MTBF 0.01 h = 36 s: Daly 16.5 s
    s = seventy_b(local_gbps=200, mtbf_hours=0.01)
    assert s.daly_s == pytest.approx(16.520, abs=1e-3)
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


def test_every_writer_node_and_the_whole_array() -> None:
    # 70B from 16 p5.48xlarge nodes, each a RAID0 of 8 devices x 2 GB/s = 16 GB/s:
    # 1.12 TB / (16 GB/s x 16) = 4.375 s to NVMe; 1.12 TB / (1.25 GB/s x 16) = 56 s to the bucket
    s = seventy_b(writer_nodes=16, local_gbps=16)
    assert (s.local_write_s, s.bucket_write_s, s.blocking_write_s) == (4.375, 56.0, 4.375)
    assert s.daly_s == pytest.approx(431.83, abs=0.01)  # sqrt(2 x 4.375 x 21600) = 434.74, x 1.00486 - 4.375
    assert s.waste == pytest.approx(0.0200, abs=1e-4)
    assert c.loss_warnings(s, "job") == []


def test_asynchronous_save_blocks_only_for_the_host_copy() -> None:
    # 8 GPUs x 10 GB/s = 80 GB/s per node; one node: 1.12 TB / 80 GB/s = 14 s blocking; the NVMe write (560 s)
    # and the upload (896 s) run in the background, and the interval never undercuts the upload
    s = seventy_b(host_copy_gbps=80)
    assert s.host_copy_s == 14.0 and s.blocking_write_s == 14.0
    assert s.daly_s == pytest.approx(c.daly_seconds(14.0, 21_600))
    assert s.recommended_interval_s == 896.0  # Daly's 773 s is shorter than the upload
    assert "asynchronous" in s.blocking_what


def test_large_loss_warns_with_what_lowers_it() -> None:
    (warning,) = c.loss_warnings(seventy_b(), "the largest job")
    assert warning.startswith("the largest job: about 21% of the time would be lost to checkpointing and rework")
    assert "save asynchronously (checkpoints.save: Asynchronous)" in warning
    assert c.LARGE_LOSS == 0.10
    assert c.loss_warnings(seventy_b(mtbf_hours=600), "the largest job") == []  # 2.3 % at 100 x the MTBF
