"""What `gpufleet diff` says for changes a reviewer must not miss, on real synth trees: the monthly cost of an FSx for
Lustre file system that grows and the Kueue controller that restarts when a new team changes Kueue's values (issue
46 item 7), and a managed node group moved to Karpenter in one change, against the two-step migration of
docs/karpenter.md (issue 46 item 6)."""

from __future__ import annotations

import re
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


# docs/karpenter.md, "Migrating from a managed node group", on the karpenter-mixed case: its l40s group as a managed
# node group before, as a Karpenter pool after.
KARPENTER = (ROOT / "tests" / "golden" / "cases" / "karpenter-mixed" / "fleet.yaml").read_text()
L40S = KARPENTER[KARPENTER.index("- name: l40s\n") : KARPENTER.index("- name: a100-mig\n")]
assert L40S.endswith("  provisioner: Karpenter\n")
MANAGED = KARPENTER.replace(L40S, L40S.replace("  provisioner: Karpenter\n", ""))
# Step 1: the pool beside the group under a new name (with the group's other settings), and each team's quota on
# the group repeated on the pool: running jobs keep their nodes and quota, new ones select the pool by name.
POOL = L40S.replace("- name: l40s\n", "- name: l40s-k\n")
QUOTAS = re.findall(r"  - nodeGroup: l40s\n(?:    .*\n)*", MANAGED)
assert len(QUOTAS) == 2
STEP_1 = MANAGED.replace("- name: a100-mig\n", POOL + "- name: a100-mig\n", 1)
for quota in QUOTAS:
    STEP_1 = STEP_1.replace(quota, quota + quota.replace("nodeGroup: l40s\n", "nodeGroup: l40s-k\n"))
STEP_1 = STEP_1.replace("    l40s: 8\n", "    l40s: 8\n    l40s-k: 8\n").replace(
    "    l40s: 2.35\n", "    l40s: 2.35\n    l40s-k: 2.35\n"
)
# Step 2, once the group's jobs have finished: the managed group and its quotas gone.
STEP_2 = STEP_1.replace(L40S.replace("  provisioner: Karpenter\n", ""), "", 1)
for quota in QUOTAS:
    STEP_2 = STEP_2.replace(quota, "", 1)
STEP_2 = STEP_2.replace("    l40s: 8\n", "").replace("    l40s: 2.35\n", "")
MIGRATION_WARNING = (
    "!! managed node group l40s (L40S) is removed in the same change that adds Karpenter NodePool l40s for the same"
    " GPUs: `pulumi up` creates the pool, then deletes the group, whose nodes are drained and terminated with their"
    ' jobs before the pool has a node; migrate in two steps (docs/karpenter.md, "Migrating from a managed node'
    ' group") (l40s-node-group)\n'
)


def test_a_managed_group_moved_to_karpenter_in_one_change_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _diff(tmp_path, MANAGED, KARPENTER, capsys)
    assert MIGRATION_WARNING in out
    assert "!! GPU node group l40s (l40s-node-group) REMOVED: its nodes are drained and terminated\n" in out


def test_the_two_step_migration_removes_a_group_only_once_the_pool_is_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _diff(tmp_path / "1", MANAGED, STEP_1, capsys)
    assert "!!" not in first  # nothing removed, replaced or stopped
    assert "  language / l40s-k: nominalQuota - -> 32 GPUs\n" in first and "language / l40s:" not in first
    second = _diff(tmp_path / "2", STEP_1, STEP_2, capsys)
    assert "!! GPU node group l40s (l40s-node-group) REMOVED" in second
    assert "in the same change that adds Karpenter" not in second
