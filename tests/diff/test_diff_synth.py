"""`gpufleet diff` on real synth trees of the example fleet, each differing from the base in one spec change."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.commands.diff import diff_trees
from gpufleet.commands.synth import synth_tree
from gpufleet.plan.manifests import telemetry
from gpufleet.review.impact import Report
from gpufleet.rules.pipeline import load_fleet
from gpufleet.tree.output import write_tree
from gpufleet.tree.read import read_tree
from tests.synthesized import tree_of

ROOT = Path(__file__).resolve().parents[2]


def _group(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in spec["nodeGroups"] if g["name"] == name)


def _instance_type(spec: dict[str, Any]) -> None:
    _group(spec, "notebooks")["instanceType"] = "g5.2xlarge"  # same GPU (1 x A10G), more CPU and memory


def _labels(spec: dict[str, Any]) -> None:
    _group(spec, "h100")["labels"] = {"example.com/tier": "gold"}


def _quota_and_size(spec: dict[str, Any]) -> None:
    vision = next(t for t in spec["teams"] if t["name"] == "vision")
    vision["quotas"][0].update(gpus=32, borrowingLimit=16, lendingLimit=16)
    vision["quotas"][1].update(gpus=4)  # notebooks: one A10G time-sliced 4 ways
    _group(spec, "h100")["scaling"]["maxSize"] = 8


def _mig_profile(spec: dict[str, Any]) -> None:
    _group(spec, "a100-mig")["sharing"]["profile"] = "2g.10gb"


def _older_operator(spec: dict[str, Any]) -> None:
    spec["versions"]["gpuOperator"]["chart"] = "v26.3.3"


def _image_bump(spec: dict[str, Any]) -> None:
    training = next(s for s in spec["imageSets"] if s["name"] == "training")
    training["images"] = ["nvcr.io/nvidia/pytorch:25.09-py3"]


VARIANTS: dict[str, Callable[[dict[str, Any]], None] | None] = {
    "base": None, "instance-type": _instance_type, "labels": _labels, "quota-and-size": _quota_and_size,
    "mig-profile": _mig_profile, "older-operator": _older_operator, "dcgm-csv": None, "image-bump": _image_bump,
}  # fmt: skip
# A change in code rather than in the spec: one more DCGM counter in the exporter's CSV.
CODE_CHANGES = {
    "dcgm-csv": (
        telemetry,
        "DCGM_FIELDS",
        telemetry.DCGM_FIELDS + (("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe replays."),),
    )
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("diff")
    out = {}
    for name, change in VARIANTS.items():
        if name == "base":  # the example itself, as the other tests of the session synthesise it
            write_tree(tree_of(ROOT / "fleet.yaml", "prod"), str(root / name))
            out[name] = root / name
            continue
        spec = yaml.safe_load((ROOT / "fleet.yaml").read_text())
        if change is not None:
            change(spec)
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        fleet = load_fleet(str(path), "prod").environments["prod"]
        with pytest.MonkeyPatch.context() as patch:
            if name in CODE_CHANGES:
                patch.setattr(*CODE_CHANGES[name])
            write_tree(synth_tree(fleet, "prod")[1], str(root / name))
        out[name] = root / name
    return out


def report(trees: dict[str, Path], new: str, old: str = "base") -> Report:
    return diff_trees(read_tree(trees[old]), read_tree(trees[new]))


def _actions(r: Report, rtype: str) -> list[tuple[str, str]]:
    return [(c.id, c.action) for c in r.changes if c.type == rtype]


CM = "kubernetes:core/v1:ConfigMap"
RELEASE = "kubernetes:helm.sh/v3:Release"


def test_same_tree_has_no_changes(trees: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert report(trees, "base").changes == ()
    assert main(["diff", str(trees["base"]), str(trees["base"])]) == 0
    assert "no changes" in capsys.readouterr().out


def test_an_absent_old_tree_is_an_empty_fleet(
    trees: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new environment or the first pull request has no base tree: everything is added, exit 0 (issue 35 item 3).
    Only a path that is not there counts; an empty directory is still not a tree."""
    absent, base = tmp_path / "absent", str(trees["base"])
    assert main(["diff", str(absent), base]) == 0
    out, err = capsys.readouterr()
    assert (
        err == f"gpufleet diff: note: {absent} does not exist: compared with an empty fleet (every resource is added)\n"
    )
    assert out.splitlines()[1] == f"{absent} does not exist: compared with an empty fleet, so every resource is added"
    changes = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line.split()[0] in "+-~+-"]
    assert set(changes) == {"+"} and len(changes) == len(read_tree(base).resources)
    assert "fleet: min $0 -> $" in out
    assert main(["diff", str(absent), base, "--format", "markdown"]) == 0
    assert "No tree at the base (a new environment, or the first pull request)" in capsys.readouterr().out
    absent.mkdir()
    assert main(["diff", str(absent), base]) == 2
    assert main(["diff", base, str(tmp_path / "no-new")]) == 2  # NEW must be a tree
    assert "is not a synth tree" in capsys.readouterr().err


def test_instance_type_change_replaces_exactly_one_node_group(trees: dict[str, Path]) -> None:
    r = report(trees, "instance-type")
    assert [(n.node_group, n.action, n.gpu) for n in r.nodes] == [("notebooks", "replace", True)]
    assert r.nodes[0].reasons == ("instanceTypes[0]: g5.xlarge -> g5.2xlarge",)
    assert [c.id for c in r.changes if c.action == "replace"] == ["notebooks-node-group"]
    assert r.quotas == ()  # same GPU count: no nvidia.com/gpu quota moves


def test_label_change_replaces_nothing(trees: dict[str, Path]) -> None:
    r = report(trees, "labels")
    assert r.nodes == ()
    assert [(c.id, c.action, c.paths) for c in r.changes if c.type == "aws:eks/nodeGroup:NodeGroup"] == [
        ("h100-node-group", "update", ('labels["example.com/tier"]',))
    ]
    assert all(c.action != "replace" for c in r.changes)


def test_quota_change_per_team_and_cost_delta(trees: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    r = report(trees, "quota-and-size")
    assert r.nodes == ()  # a max size change is in place
    # Each row in its flavor's unit. Before: the table said "GPU quota (nvidia.com/gpu)" and listed the notebooks'
    # 32 -> 16 time-slicing replicas as if they were GPUs.
    assert [(q.team, q.flavor, q.field, q.old, q.new, q.unit) for q in r.quotas] == [
        ("vision", "h100", "borrowingLimit", "32", "16", "GPUs"),
        ("vision", "h100", "lendingLimit", "32", "16", "GPUs"),
        ("vision", "h100", "nominalQuota", "64", "32", "GPUs"),
        ("vision", "notebooks", "nominalQuota", "32", "16", "TimeSlicing replicas, 4 per GPU"),
    ]
    old = next(c for c in r.cost_old if c.node_group == "h100")
    new = next(c for c in r.cost_new if c.node_group == "h100")
    assert (old.max_size, new.max_size, new.gpus_per_node, new.gpu_hour_usd) == (
        16,
        8,
        8,
        6.88,
    )  # the spec's price, via the cost stage
    assert old.monthly(old.max_size) - new.monthly(new.max_size) == pytest.approx(8 * 8 * 6.88 * 730)
    assert main(["diff", str(trees["base"]), str(trees["quota-and-size"]), "--format", "markdown"]) == 0
    body = capsys.readouterr().out
    assert body.startswith("<!-- gpufleet-diff:prod -->\n")
    assert "| vision | h100 | nominalQuota | 64 | 32 | GPUs |" in body
    assert (
        "| vision | notebooks | nominalQuota | 32 | 16 | TimeSlicing replicas, 4 per GPU (8 GPUs -> 4 GPUs) |" in body
    )
    assert "GPU quota (`nvidia.com/gpu`)" not in body
    assert main(["diff", str(trees["base"]), str(trees["quota-and-size"])]) == 0
    text = capsys.readouterr().out
    assert "  vision / notebooks: nominalQuota 32 -> 16 TimeSlicing replicas, 4 per GPU (8 GPUs -> 4 GPUs)\n" in text
    assert "  vision / h100: nominalQuota 64 -> 32 GPUs\n" in text
    assert "-$321,434" in body  # 8 nodes x 8 GPUs x $6.88 x 730 h
    assert "[!CAUTION]" not in body


def test_markdown_flags_the_replacement_loudly(trees: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(trees["base"]), str(trees["instance-type"]), "--format", "markdown"]) == 0
    body = capsys.readouterr().out
    assert "> [!CAUTION]\n> **GPU node group notebooks (notebooks-node-group) REPLACED" in body
    assert "instanceTypes[0]: g5.xlarge -> g5.2xlarge" in body


def test_mig_profile_change_patches_the_config_and_says_drain_first(
    trees: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r = report(trees, "mig-profile")
    # enableConfigMapMutable on the provider: pulumi preview shows `~` for the ConfigMap, not `+-`
    assert _actions(r, CM) == [("configmap-gpu-operator-gpufleet-mig-config", "update")]
    assert _actions(r, RELEASE) == [("helm-gpu-operator", "update")]  # the MIG config hash rolls the MIG manager
    assert [(e.disruptive, e.what.split(":")[0]) for e in r.work] == [
        (True, "MIG profile of node group a100-mig changes (1g.5gb x 7 -> 2g.10gb x 3)")
    ]
    assert "drain the group first (kubectl drain -l gpufleet.io/node-group=a100-mig)" in r.work[0].what
    assert main(["diff", str(trees["base"]), str(trees["mig-profile"])]) == 0
    out = capsys.readouterr().out
    assert "    ~ configmap-gpu-operator-gpufleet-mig-config (kubernetes:core/v1:ConfigMap)\n" in out
    assert "!! MIG profile of node group a100-mig changes" in out
    # issue 41 item 18: the quota stays 32 GPUs in slices of the new profile; the old count was divided by the new
    # profile's slices per GPU ("74.67 -> 32 GPUs").
    rows = [line for line in out.splitlines() if line.startswith("  ") and "/ a100-mig: nominalQuota" in line]
    assert rows and all(
        re.fullmatch(
            r"  \w+ / a100-mig: nominalQuota (\d+) -> (\d+) MIG slices, 7 per GPU -> MIG slices, 3 per GPU"
            r" \((\d+) GPUs -> \3 GPUs\)",
            row,
        )
        for row in rows
    ), rows
    assert all(q.old_gpus() == q.new_gpus() for q in r.quotas)


def test_operator_bump_restarts_operands_and_downgrade_is_flagged(
    trees: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bump = report(trees, "base", old="older-operator")
    # the health stage's DCGM image follows the operator's DCGM version
    assert _actions(bump, RELEASE) == [("helm-gpu-operator", "update"), ("helm-node-problem-detector", "update")]
    # ... so the planted-fault gate's Job changes and runs again (issue 35 item 4: a gate re-run is running work)
    assert [(e.disruptive, e.what.split(":")[0]) for e in bump.work] == [
        (True, "the planted-fault gate runs again (the Job is replaced)"),
        (False, "GPU Operator v26.3.3 -> v26.7.0"),
        # ... and Node Problem Detector, whose DCGM health sidecar runs that image, restarts
        (
            False,
            "Helm release node-problem-detector (gpufleet-health) is upgraded (values extraContainers[dcgm-health].image)",
        ),
    ]
    down = report(trees, "older-operator")
    assert [e.what.split(":")[0] for e in down.work if e.disruptive] == [
        "DOWNGRADE of the GPU Operator v26.7.0 -> v26.3.3",
        "the planted-fault gate runs again (the Job is replaced)",
    ]
    assert main(["diff", str(trees["base"]), str(trees["older-operator"]), "--format", "markdown"]) == 0
    assert (
        "> **DOWNGRADE of the GPU Operator v26.7.0 -> v26.3.3: Helm does not downgrade CRDs" in capsys.readouterr().out
    )


def test_dcgm_csv_change_patches_in_place_and_rolls_the_exporter(
    trees: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r = report(trees, "dcgm-csv")
    assert _actions(r, CM) == [("configmap-gpu-operator-gpufleet-dcgm-metrics", "update")]
    change = next(c for c in r.changes if c.type == RELEASE)
    assert change.paths == ('values.dcgmExporter.annotations["gpufleet.io/dcgm-metrics-sha256"]',)
    assert all(not e.disruptive for e in r.work) and len(r.work) == 2
    assert main(["diff", str(trees["base"]), str(trees["dcgm-csv"]), "--format", "markdown"]) == 0
    body = capsys.readouterr().out
    assert "[!CAUTION]" not in body and "- DCGM exporter pods restart on every GPU node" in body


def test_instance_type_change_is_a_replacement_and_is_re_priced(
    trees: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r = report(trees, "instance-type")
    new = next(c for c in r.cost_new if c.node_group == "notebooks")
    # cost.gpuHourUsd.notebooks (1.01) was the g5.xlarge's price: scaled by the list prices 1.212 / 1.006
    assert new.gpu_hour_usd == pytest.approx(1.01 * 1.212 / 1.006)
    old = next(c for c in r.cost_old if c.node_group == "notebooks")
    # the warm pool (2 stopped, 100 GiB root volumes each... as rendered) is in both sides' standing cost
    assert old.warm_pool == 2 and not old.warm_pool_running and old.disk_gib > 0
    assert old.monthly(0) == pytest.approx(2 * old.disk_gib * 0.08)
    assert main(["diff", str(trees["base"]), str(trees["instance-type"])]) == 0
    out = capsys.readouterr().out
    assert "   +- notebooks-node-group (aws:eks/nodeGroup:NodeGroup) REPLACE" in out
    assert (
        "notebooks: g5.xlarge x 1..20 (1 GPUs/node, warm pool 2 stopped) -> g5.2xlarge x 1..20 (1 GPUs/node, warm pool"
        " 2 stopped)" in out
    )


def test_an_image_bump_changes_no_launch_template_and_rolls_no_node(trees: dict[str, Path]) -> None:
    """The image list is read at boot from an SSM parameter (issue 29 item 4): a new image updates that parameter and
    the prepuller DaemonSet in place; the launch template, so every node of the group, stays. The training set's
    groups (a100-mig, h100) pull in parallel, through the CRI from the DaemonSet alone (no boot-time list)."""
    r = report(trees, "image-bump")
    assert r.nodes == ()
    assert sorted((c.id, c.action, c.paths) for c in r.changes) == sorted(
        [
            (
                f"daemonset-gpufleet-system-prepull-{group}",
                "update",
                ("spec.template.spec.initContainers[pull-0].image",),
            )
            for group in ("a100-mig", "h100")
        ]
        # the h100 EFA runtime's default image is the first one the group pre-pulls (gpufleet.plan.manifests.workloads)
        + [
            (
                "clustertrainingruntime-cluster-gpufleet-efa-h100",
                "update",
                ("spec.template.spec.replicatedJobs[node].template.spec.template.spec.containers[node].image",),
            )
        ]
    )
