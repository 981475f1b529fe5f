"""plan.md on Karpenter groups (issue 32 item 5): the "Node groups" table names the NodePool, its GPU limit in place
of min/max/desired, the capacity-type requirement and what stands in for a warm pool; the access table lists the
controller's Pod Identity association and what its role may do; "Defaulted values" lists no managed-node-group-only
field for a Karpenter group."""

from __future__ import annotations

from pathlib import Path

from gpufleet.plan.builders.karpenter import KARPENTER_NOTE, KARPENTER_POOLS, KARPENTER_STATEMENTS
from gpufleet.plan.manifests import karpenter
from gpufleet.plan.report import node_group_rows, plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet, load_fleet_text
from gpufleet.spec.fleet import Fleet

ROOT = Path(__file__).resolve().parents[2]
MIXED = ROOT / "tests" / "golden" / "cases" / "karpenter-mixed" / "fleet.yaml"


def _mixed() -> Fleet:
    return load_fleet(str(MIXED), "prod").environments["prod"]


def test_node_groups_table_names_the_pool_its_gpu_limit_capacity_type_and_warm_capacity() -> None:
    rows = {row[0]: row for row in node_group_rows(build_plan(_mixed(), "prod"))}
    assert rows["h100"][1:6] == (
        "EKS managed node group, scaled by the Cluster Autoscaler",
        "p5.48xlarge",
        "0..16",
        "OnDemand",
        "warm pool of 2 (Stopped)",
    )
    assert rows["l40s"][1:6] == (
        "Karpenter NodePool `l40s` (EC2NodeClass `l40s`)",
        "g6e.12xlarge",
        "up to 12 (NodePool limit `nvidia.com/gpu: 48`)",
        "OnDemand; `karpenter.sh/capacity-type` `on-demand`",
        "none: launched per pending pod; an emptied node stays 5m",
    )
    # 4 nodes of 56 MIG slices each: the limit counts what the pool's NodeOverlay has Karpenter count (issue 41).
    assert rows["a100-mig"][3:5] == (
        "up to 4 (NodePool limit `nvidia.com/gpu: 224`)",
        "Spot; `karpenter.sh/capacity-type` `spot`",
    )
    assert rows["br"][4] == (
        "OnDemand, ODCR `cr-0a1b2c3d4e5f60718` (2 instances billed running or not); `karpenter.sh/capacity-type`"
        " `reserved`"
    )
    assert rows["h200"][4] == "CapacityBlock `cr-0123456789abcdef0`; `karpenter.sh/capacity-type` `reserved`"


def test_the_karpenter_note_follows_the_table_only_with_karpenter_groups() -> None:
    page = plan_markdown(build_plan(_mixed(), "prod"))
    table = page[page.index("## Node groups") : page.index("## Versions")]
    assert KARPENTER_NOTE in table
    plain = plan_markdown(build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod"))
    assert KARPENTER_NOTE not in plain and "Karpenter NodePool" not in plain


def test_access_table_lists_the_controller_association_and_what_it_may_do() -> None:
    fleet = _mixed()
    page = plan_markdown(build_plan(fleet, "prod"))
    row = next(line for line in page.splitlines() if line.startswith("| `kube-system/karpenter` "))
    assert row.startswith(
        "| `kube-system/karpenter` (EKS Pod Identity, the Karpenter controller) | launch EC2 instances"
    )
    assert row.endswith(" | AWS |")
    for said in (
        "terminate instances and delete launch templates tagged for cluster research and a NodePool",
        "pass the Karpenter node role to EC2 (iam:PassRole)",
        "receive and delete the messages of the interruption queue `research-karpenter`",
        "create, tag, change and delete instance profiles tagged for cluster research in us-east-1",
    ):
        assert said in row, said
    plain = plan_markdown(build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod"))
    assert "kube-system/karpenter" not in plain


def test_every_statement_of_the_controller_policy_is_described() -> None:
    """A statement added to the controller's policy without saying what it allows fails here."""
    fleet = _mixed()
    sids = [s["Sid"] for s in karpenter.iam_policy(fleet, node_role_arn="r", queue_arn="q")["Statement"]]
    assert sorted(sids) == sorted(KARPENTER_STATEMENTS)
    assert KARPENTER_POOLS.access(fleet) is not None


def test_defaulted_values_list_no_managed_only_field_for_a_karpenter_group() -> None:
    page = plan_markdown(build_plan(_mixed(), "prod"))
    assert "`nodeGroups[h100].scaling.desiredSize`" in page  # the managed group still
    for group in ("l40s", "a100-mig", "notebooks", "br", "h200"):
        assert f"`nodeGroups[{group}].scaling.desiredSize`" not in page
        assert f"`nodeGroups[{group}].update.maxUnavailable`" not in page


def test_headroom_and_instance_flexibility_show_in_the_table() -> None:
    """A pool that may launch two instance types of one GPU shape names both; headroom is what stands in for a warm
    pool (docs/karpenter.md, "What replaces a warm pool")."""
    text = MIXED.read_text().replace(
        "  instanceType: g6e.12xlarge\n  workloadClass: Inference\n  ami:\n    type: AL2023_x86_64_NVIDIA\n",
        "  instanceType: g6e.12xlarge\n  instanceTypes: [g6e.12xlarge, g6e.24xlarge]\n  headroom: {nodes: 1}\n"
        "  workloadClass: Inference\n  ami:\n    type: AL2023_x86_64_NVIDIA\n",
        1,
    )
    fleet = load_fleet_text(text, env="prod").environments["prod"]
    rows = {row[0]: row for row in node_group_rows(build_plan(fleet, "prod"))}
    assert rows["l40s"][2] == "g6e.12xlarge (or g6e.24xlarge)"
    assert rows["l40s"][5] == (
        "headroom of 1 running node(s) (gpufleet-headroom placeholders); beyond them, launched per pending pod; an"
        " emptied node stays 5m"
    )
    assert rows["notebooks"][5] == "none: launched per pending pod; an emptied node stays 5m"
