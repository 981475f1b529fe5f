"""The data loader check (issue 33 item 4): docs/examples/dataloader-check.yaml runs the team's step fed by its real
loader and by one batch held in memory and prints a line per rank; `gpufleet diagnose --dataloader-log` turns the
lines into a finding: starved (warning) from 10% of the step waiting on input, else it keeps up (info)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.commands.diagnose import diagnose
from gpufleet.diagnose import dataloader
from gpufleet.diagnose.findings import LogFinding
from tests.upstream import validate_object

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "dataloader-check.yaml"
HARNESS = ROOT / "gpufleet" / "data" / "dataloader" / "dataloader_check.py"
LINE = "gpufleet-dataloader-check rank={} steps=50 real_step_seconds={} synthetic_step_seconds={}"


def _log(*ranks: tuple[int, str, str], prefix: str = "") -> str:
    # As `kubectl logs --prefix` prints torchrun's ranks, among the lines the team's code prints.
    lines = ["W1201 torchrun: Setting OMP_NUM_THREADS environment variable for each process to be 1"]
    lines += [prefix + LINE.format(*r) for r in ranks]
    return "\n".join(lines) + "\n"


def test_a_starved_loader_is_a_warning_with_the_measured_step_times() -> None:
    text = _log((0, "0.3000", "0.2050"), (1, "0.4120", "0.2050"), prefix="[pod/dataloader-check-x7k2p/check] ")
    assert dataloader.check({"check.log": text}) == [
        LogFinding(
            "warning",
            "check.log",
            "rank 1 (the most starved of 2 ranks)",
            "data loader starved: step time with real data 0.412 s vs synthetic 0.205 s (50% of the step waits on"
            " input)",
            dataloader.STORAGE_HINT,
            "job.dataloader-starved",
        )
    ]
    assert "nodeGroups[].localStorage: RAID0" in dataloader.STORAGE_HINT
    assert "docs/network-and-storage.md" in dataloader.STORAGE_HINT


def test_a_loader_that_keeps_up_is_info() -> None:
    assert dataloader.check({"check.log": _log((0, "0.2100", "0.2050"))}) == [
        LogFinding(
            "info",
            "check.log",
            "rank 0",
            "data loader keeps up: step time with real data 0.21 s vs synthetic 0.205 s (2% of the step waits on"
            " input; starved from 10%)",
            "",
            "job.dataloader-ok",
        )
    ]


@pytest.mark.parametrize(
    ("real", "synthetic", "check"),
    [
        ("1.0000", "0.9000", "job.dataloader-starved"),  # exactly 10%
        ("1.0000", "0.9010", "job.dataloader-ok"),  # 9.9%
        ("0.2000", "0.2500", "job.dataloader-ok"),  # synthetic slower (noise): nothing waits
        ("0.0000", "0.0000", "job.dataloader-ok"),
    ],
)
def test_the_threshold(real: str, synthetic: str, check: str) -> None:
    (finding,) = dataloader.check({"check.log": _log((0, real, synthetic))})
    assert finding.check == check


def test_a_log_without_a_result_says_so() -> None:
    (finding,) = dataloader.check({"check.log": "Traceback (most recent call last):\n  ...\nImportError: train\n"})
    assert (finding.severity, finding.check, finding.message) == (
        "info",
        "input.no-dataloader-result",
        "no gpufleet-dataloader-check result line: the check did not finish (or this is another log)",
    )


def test_diagnose_cli_reads_the_log_and_exits_by_severity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    starved, fine = tmp_path / "starved.log", tmp_path / "fine.log"
    starved.write_text(_log((0, "0.4120", "0.2050")))
    fine.write_text(_log((0, "0.2100", "0.2050")))
    assert main(["diagnose", "--dataloader-log", str(starved)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        f"[warning] {starved}: rank 0: data loader starved: step time with real data 0.412 s vs synthetic 0.205 s"
        " (50% of the step waits on input)\n  fix: the GPUs wait on input: "
    )
    assert main(["diagnose", "--dataloader-log", str(fine)]) == 0
    assert capsys.readouterr().out.startswith(f"[info] {fine}: rank 0: data loader keeps up:")


def test_diagnose_ranks_it_with_the_other_inputs() -> None:
    findings = diagnose({}, {}, {"check.log": _log((0, "0.4120", "0.2050"))})
    assert [f.check for f in findings] == ["job.dataloader-starved"]


def test_the_example_embeds_the_harness_and_validates() -> None:
    configmap, job = yaml.safe_load_all(EXAMPLE.read_text())
    assert configmap["data"]["dataloader_check.py"] == HARNESS.read_text()
    assert (configmap["kind"], job["kind"]) == ("ConfigMap", "Job")
    assert validate_object(configmap) == [] and validate_object(job) == []
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"][-1] == "/opt/gpufleet/dataloader_check.py"


def test_the_example_runs_on_the_example_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / "fleet.yaml")
    assert main(["explain", spec, "--env", "prod", str(EXAMPLE), "--format", "json"]) == 0
    (verdict,) = json.loads(capsys.readouterr().out)["workloads"]
    assert (verdict["name"], verdict["runs"], verdict["clusterQueue"], verdict["nodeGroup"]) == (
        "dataloader-check",
        True,
        "vision",
        "h100",
    )


ENTRY = """
import time


def build():
    def batches():
        for i in range(100):
            time.sleep(0.03)  # a slow loader: 30 ms per batch
            yield i

    def step(batch):
        time.sleep(0.01)  # a 10 ms step

    return batches(), step
"""


def test_the_harness_measures_a_slow_loader_end_to_end(tmp_path: Path) -> None:
    """The harness itself (no torch needed: it synchronises CUDA only where torch is loaded), on a loader three
    times slower than the step: its line is what diagnose reads as starved."""
    (tmp_path / "slow_entry.py").write_text(ENTRY)
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        "DATALOADER_CHECK_ENTRY": "slow_entry:build",
        "DATALOADER_CHECK_STEPS": "5",
        "DATALOADER_CHECK_WARMUP": "1",
        "RANK": "3",
    }
    done = subprocess.run([sys.executable, str(HARNESS)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (result,) = dataloader.parse(done.stdout)
    assert (result.rank, result.steps) == (3, 5)
    assert result.synthetic >= 0.01 and result.real >= 0.04
    (finding,) = dataloader.check({"check.log": done.stdout})
    assert (finding.check, finding.subject) == ("job.dataloader-starved", "rank 3")


def test_the_harness_refuses_a_missing_entry_and_a_short_loader(tmp_path: Path) -> None:
    (tmp_path / "short_entry.py").write_text("def build():\n    return [1, 2], lambda batch: None\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "DATALOADER_CHECK_STEPS": "5", "DATALOADER_CHECK_WARMUP": "1"}
    done = subprocess.run([sys.executable, str(HARNESS)], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (
        1,
        "gpufleet-dataloader-check: set DATALOADER_CHECK_ENTRY=module:function",
    )
    env["DATALOADER_CHECK_ENTRY"] = "short_entry:build"
    done = subprocess.run([sys.executable, str(HARNESS)], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (1, "gpufleet-dataloader-check: the loader gave 2 batches; need 6")
