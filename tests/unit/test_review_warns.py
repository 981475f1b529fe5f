"""Reviews that warn (issue 35 item 4, in part): plan.md shows no resource counts or gates for a stage the
environment does not deploy, and both cost figures say what they leave out."""

from __future__ import annotations

from pathlib import Path

from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.plan.stages.cost import NOT_COUNTED
from gpufleet.review import summary
from gpufleet.review.impact import GroupCost, Report
from gpufleet.rules.pipeline import load_fleet

ROOT = Path(__file__).resolve().parents[2]


def test_undeployed_stages_show_no_counts_or_gates() -> None:
    page = plan_markdown(build_plan(load_fleet(str(ROOT / "fleet.yaml"), "dev").environments["dev"], "dev"))
    assert "| 3 | admission | yes | " in page
    for row in ("| 5 | network | no | - | - |", "| 6 | storage | no | - | - |", "| 7 | health | no | - | - |"):
        assert row in page, row


def test_the_plan_estimate_says_what_it_leaves_out() -> None:
    page = plan_markdown(build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod"))
    assert NOT_COUNTED in page and NOT_COUNTED.startswith("Not counted: the checkpoint bucket's storage")


def test_the_diff_cost_says_what_it_counts_and_leaves_out() -> None:
    group = GroupCost(node_group="l4", instance_type="g6.xlarge", gpus_per_node=1, min_size=0, max_size=2,
                      gpu_hour_usd=1.0, price_source="cost stage")  # fmt: skip
    report = Report(changes=(), nodes=(), quotas=(), cost_old=(), cost_new=(group,), stages=(), environment="dev")
    text = summary.text(report, "a", "b")
    assert f"  ({summary.LEAVES_OUT})\n" in text and "not counted: the EKS control plane, the system nodes" in text
    assert f"\n{summary.LEAVES_OUT}.\n" in summary.markdown(report, "a", "b")


def test_plan_md_lists_each_groups_capacity_with_its_odcr_and_every_taint() -> None:
    from gpufleet.plan.report import node_group_rows
    from gpufleet.rules.pipeline import load_fleet_text

    spec = (
        (ROOT / "tests" / "specs" / "valid" / "minimal.yaml")
        .read_text()
        .replace(
            "    scaling:\n      maxSize: 4\n",
            "    scaling:\n      minSize: 2\n      maxSize: 2\n"
            "    capacity: {type: OnDemand, reservation: {id: cr-0123456789abcdef0, instanceCount: 2}}\n"
            "    taints: [{key: example.com/tier, value: gold, effect: NoSchedule}]\n",
        )
        .replace("        gpus: 4\n", "        gpus: 2\n")
    )
    from gpufleet.plan.rollout import build_plan

    fleet = load_fleet_text(spec).environments["dev"]
    assert node_group_rows(build_plan(fleet, "dev")) == [
        (
            "l4",
            "EKS managed node group, scaled by the Cluster Autoscaler",
            "g6.xlarge",
            "2..2",
            "OnDemand, ODCR `cr-0123456789abcdef0` (2 instances billed running or not)",
            "-",
            "`nvidia.com/gpu=true:NoSchedule`, `example.com/tier=gold:NoSchedule`",
        )
    ]
    assert "## Node groups" in plan_markdown(build_plan(fleet, "dev"))


def _job(name: str, **spec: int) -> dict[str, object]:
    return {"type": "kubernetes:batch/v1:Job", "inputs": {"metadata": {"name": name}, "spec": dict(spec)}}


def test_a_gate_that_runs_or_runs_again_is_running_work() -> None:
    from gpufleet.review.running_work import effects

    nccl = _job("nccl-gate-h100", parallelism=2, activeDeadlineSeconds=1800)
    fault = _job("gpufleet-planted-fault", activeDeadlineSeconds=900)
    new = {"job-nccl": nccl, "job-fault": fault}
    assert [(e.id, e.disruptive, e.what) for e in effects({}, new)] == [
        (
            "job-fault",
            True,
            "the planted-fault gate runs: it plants a fault on a real GPU node, which the health loop cordons and"
            " drains (its pods are evicted) for up to 15 minutes",
        ),
        (
            "job-nccl",
            False,
            "the bandwidth gate nccl-gate-h100 runs: it holds 2 GPU nodes of its group, every GPU of each, for up"
            " to 30 minutes",
        ),
    ]
    assert effects(new, new) == []  # unchanged: nothing runs
    changed = {"job-nccl": _job("nccl-gate-h100", parallelism=2, activeDeadlineSeconds=600), "job-fault": fault}
    assert [e.what.split(":")[0] for e in effects(new, changed)] == [
        "the bandwidth gate nccl-gate-h100 runs again (the Job is replaced)"
    ]
