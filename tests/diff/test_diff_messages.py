"""What `gpufleet diff` says for two changes a reviewer must not miss (issue 46 item 7), on real synth trees: the
monthly cost of an FSx for Lustre file system that grows, and the Kueue controller that restarts when a new team
changes Kueue's values."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.commands.synth import synth_tree
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.tree.output import write_tree

ROOT = Path(__file__).resolve().parents[2]
LUSTRE = ROOT / "tests" / "golden" / "cases" / "fsx-lustre" / "fleet.yaml"
ROBOTICS = """\
  - name: robotics
    cohort: research
    members: [{principalArn: "arn:aws:iam::111122223333:role/robotics"}]
    quotas: [{nodeGroup: notebooks, gpus: 2}]
"""


def _diff(tmp: Path, old: str, new: str, capsys: pytest.CaptureFixture[str]) -> str:
    for name, text in (("old", old), ("new", new)):
        fleet = load_fleet_text(text).environments["prod"]
        write_tree(synth_tree(fleet, "prod")[1], str(tmp / name))
    assert main(["diff", str(tmp / "old"), str(tmp / "new")]) == 0
    return capsys.readouterr().out


def test_a_larger_file_system_shows_in_the_cost_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = LUSTRE.read_text()
    new = old.replace("storageCapacityGiB: 19200", "storageCapacityGiB: 24000")
    out = _diff(tmp_path, old, new, capsys)
    # 19,200 GiB and 24,000 GiB x USD 0.340 (PERSISTENT_2 at 500 MB/s/TiB, gpufleet.facts.pricing)
    assert (
        "  FSx for Lustre fsx-lustre: PERSISTENT_2, 19,200 GiB at 500 MB/s/TiB ($6,528) -> PERSISTENT_2, 24,000 GiB"
        " at 500 MB/s/TiB ($8,160): min +$1,632, max +$1,632\n"
    ) in out
    assert "  fleet: min $" in out and "(+$1,632), max $" in out


def test_a_new_team_says_the_kueue_controller_restarts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = (ROOT / "fleet.yaml").read_text()
    assert "\n\nadmission:\n" in old
    new = old.replace("\n\nadmission:\n", "\n" + ROBOTICS + "\nadmission:\n", 1)
    out = _diff(tmp_path, old, new, capsys)
    assert (
        "   Helm release kueue (kueue-system) is upgraded (values managerConfig.controllerManagerConfigYaml): the"
        " Kueue controller restarts (its pod template carries the checksum of its Configuration): its replicas roll"
        " one at a time, admission waits while the leader changes, and admitted workloads keep running (helm-kueue)\n"
    ) in out
