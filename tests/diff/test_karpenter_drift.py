"""`gpufleet diff` on Karpenter pools (issue 32 item 5): a NodePool or EC2NodeClass change is no node group
replacement but a drift: "drifts: Karpenter replaces its nodes", with what that does to running work (Training and
Interactive pools, drift budget 0: a node leaves only once empty; other pools: one at a time under the pods'
PodDisruptionBudgets). Behavioural NodePool fields (limits, disruption) drift nothing. Inventories are the golden
karpenter-mixed tree's, one field changed."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpufleet.review import running_work, summary
from gpufleet.review.impact import compare, fleet_cost
from tests.trees import resources

TREE = Path(__file__).resolve().parents[2] / "tests" / "golden" / "trees" / "karpenter-mixed" / "prod"
Inventory = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def base() -> Inventory:
    return {str(r["id"]): r for r in resources(TREE)}


def _spec(inv: Inventory, rid: str) -> dict[str, Any]:
    spec: dict[str, Any] = inv[rid]["inputs"]["spec"]
    return spec


def _diff(base: Inventory, edit: Callable[[Inventory], None]) -> tuple[list[tuple[str, str, str]], list[Any], str]:
    new = copy.deepcopy(base)
    edit(new)
    report = compare(base, new)
    work = running_work.effects(base, new, report.nodes)
    nodes = [(n.id, n.action, n.provisioner) for n in report.nodes]

    text = summary.text(dataclasses.replace(report, work=tuple(work)), "a", "b")
    return nodes, work, text


def test_a_user_data_change_drifts_an_inference_pool_one_node_at_a_time(base: Inventory) -> None:
    def edit(inv: Inventory) -> None:
        _spec(inv, "ec2nodeclass-cluster-l40s")["userData"] += "\n"

    nodes, work, text = _diff(base, edit)
    assert nodes == [("nodepool-cluster-l40s", "drift", "Karpenter")]
    assert "!! Karpenter NodePool l40s (nodepool-cluster-l40s) drifts: Karpenter replaces its nodes\n" in text
    assert "!!     because EC2NodeClass l40s spec.userData changed: drifts every node\n" in text
    assert [(e.id, e.disruptive) for e in work] == [("nodepool-cluster-l40s", True)]
    assert work[0].what == (
        "NodePool l40s (Inference) drifts: Karpenter replaces its nodes 1 at a time (disruption budget), launching each"
        " replacement first and then draining the drifted node under its pods' PodDisruptionBudgets: running pods are"
        " evicted and rescheduled"
    )


def test_a_training_pool_drifts_but_no_running_job_is_evicted(base: Inventory) -> None:
    def edit(inv: Inventory) -> None:
        _spec(inv, "ec2nodeclass-cluster-h200")["amiSelectorTerms"] = [{"ssmParameter": "/aws/service/eks/other"}]
        _spec(inv, "nodepool-cluster-h200")["template"]["spec"]["taints"].append(
            {"key": "example.com/tier", "value": "gold", "effect": "NoSchedule"}
        )

    nodes, work, text = _diff(base, edit)
    assert nodes == [("nodepool-cluster-h200", "drift", "Karpenter")]
    assert (
        "because NodePool spec.template.spec.taints[example.com/tier=gold:NoSchedule] changed: drifts every node"
        in text
    )
    assert (
        "because EC2NodeClass h200 spec.amiSelectorTerms[0].ssmParameter changed: drifts the nodes it no longer" in text
    )
    assert [(e.id, e.disruptive) for e in work] == [("nodepool-cluster-h200", False)]
    assert work[0].what.startswith(
        "NodePool h200 (Training) drifts: its drift budget is 0 (reason Drifted), so Karpenter takes no node that runs"
        " work: each running job keeps its node, a drifted node leaves only once empty (consolidateAfter 5m)"
    )


def test_behavioural_pool_fields_drift_nothing(base: Inventory) -> None:
    def edit(inv: Inventory) -> None:
        _spec(inv, "nodepool-cluster-notebooks")["limits"]["nvidia.com/gpu"] = "40"
        _spec(inv, "nodepool-cluster-notebooks")["disruption"]["consolidateAfter"] = "10m"

    nodes, work, text = _diff(base, edit)
    assert nodes == [] and work == []
    assert "~ nodepool-cluster-notebooks" in text and "drifts" not in text


def test_a_removed_pool_takes_its_nodes(base: Inventory) -> None:
    def edit(inv: Inventory) -> None:
        del inv["nodepool-cluster-a100-mig"]

    nodes, work, text = _diff(base, edit)
    assert nodes == [("nodepool-cluster-a100-mig", "remove", "Karpenter")]
    assert "Karpenter NodePool a100-mig (nodepool-cluster-a100-mig) REMOVED: Karpenter drains and terminates" in text
    assert [e.disruptive for e in work] == [True]


def test_the_markdown_comment_shows_the_drift_loudly(base: Inventory) -> None:
    new = copy.deepcopy(base)
    _spec(new, "ec2nodeclass-cluster-notebooks")["blockDeviceMappings"][0]["ebs"]["volumeSize"] = "500Gi"
    report = compare(base, new)

    page = summary.markdown(
        dataclasses.replace(report, work=tuple(running_work.effects(base, new, report.nodes))), "a", "b"
    )
    caution = page[page.index("> [!CAUTION]") : page.index("Changed stages")]
    assert (
        "**Karpenter NodePool notebooks (nodepool-cluster-notebooks) drifts: Karpenter replaces its nodes**" in caution
    )
    # Interactive: drift budget 0, so the running-work line is not a stop
    assert "- NodePool notebooks (Interactive) drifts: its drift budget is 0" in page


def test_drift_allowance_reads_the_budgets_that_apply_to_drift() -> None:
    def pool(*budgets: dict[str, Any]) -> dict[str, Any]:
        return {"spec": {"disruption": {"budgets": list(budgets)}}}

    assert running_work.drift_allowance(pool({"nodes": "1"}, {"nodes": "0", "reasons": ["Drifted"]})) == "0"
    assert running_work.drift_allowance(pool({"nodes": "1"}, {"nodes": "0", "reasons": ["Empty"]})) == "1"
    assert running_work.drift_allowance(pool({"nodes": "20%"}, {"nodes": "3"})) == "3"
    assert running_work.drift_allowance(pool({"nodes": "0", "schedule": "@daily", "duration": "10m"})) is None
    assert running_work.drift_allowance(pool()) is None


def test_karpenter_pools_are_in_the_cost(base: Inventory) -> None:
    """Every pool is priced like a node group: no minimum, maxSize = its GPU limit over the type's GPUs, and an
    ODCR's reserved instances billed at any size (the NodePool's gpufleet.io/reserved-instances annotation)."""
    costs = {c.node_group: c for c in fleet_cost(base.values())}
    assert set(costs) == {"h100", "l40s", "a100-mig", "notebooks", "br", "h200"}
    br = costs["br"]
    assert (br.instance_type, br.min_size, br.max_size, br.reserved, br.price_source) == (
        "g6e.12xlarge",
        0,
        2,
        2,
        "cost stage",
    )
    assert br.monthly(0) == br.monthly(2)  # the reservation bills both instances, running or not
    _, _, text = _diff(base, lambda inv: _spec(inv, "nodepool-cluster-l40s")["limits"].update({"nvidia.com/gpu": "64"}))
    assert (
        "  l40s: g6e.12xlarge x 0..12 (4 GPUs/node) -> g6e.12xlarge x 0..16 (4 GPUs/node): min $0, max +$27,448\n"
        in text
    )


def test_a_pool_of_several_types_is_priced_as_its_cheapest(base: Inventory) -> None:
    new = copy.deepcopy(base)
    requirement = _spec(new, "nodepool-cluster-l40s")["template"]["spec"]["requirements"][0]
    requirement["values"] = ["g6e.24xlarge", "g6e.12xlarge"]  # 15.07 and 10.49 USD/h, 4 L40S each
    costs = {c.node_group: c for c in fleet_cost(new.values())}
    assert (costs["l40s"].instance_type, costs["l40s"].gpus_per_node, costs["l40s"].max_size) == ("g6e.12xlarge", 4, 12)


def _shared_node_role(inv: Inventory) -> None:
    """The tree as gpufleet rendered it before issue 41 item 2: the Karpenter nodes joined with the managed node
    groups' role, through an access entry for it."""
    for rid in [r for r in inv if r.startswith("karpenter-node-role")]:
        del inv[rid]
    inv["karpenter-node-access-entry"]["inputs"]["principalArn"] = "<ref:node-role.arn>"
    for entry in inv.values():
        if entry["type"].endswith(":EC2NodeClass"):
            entry["inputs"]["spec"]["role"] = "<ref:node-role.name>"


def test_the_karpenter_nodes_own_role_drifts_their_pools_and_flags_the_shared_entry(base: Inventory) -> None:
    old = copy.deepcopy(base)
    _shared_node_role(old)
    report = compare(old, base)
    work = running_work.effects(old, base, report.nodes)
    text = summary.text(dataclasses.replace(report, work=tuple(work)), "a", "b")
    assert {n.id for n in report.nodes} == {r for r in base if r.startswith("nodepool-cluster-")}
    assert "!!     because EC2NodeClass l40s spec.role changed: drifts every node\n" in text
    entry = next(c for c in report.changes if c.id == "karpenter-node-access-entry")
    assert (entry.action, entry.paths) == ("replace", ("principalArn",))
    flagged = [e for e in work if e.id == "karpenter-node-access-entry"]
    assert len(flagged) == 1 and flagged[0].disruptive
    assert flagged[0].what.startswith(
        "access entry karpenter-node-access-entry of <ref:node-role.arn> is deleted, and <ref:node-role.arn> is the"
        " node role of managed node groups research-h100, research-system"
    )
    assert "`pulumi state delete` its URN before `pulumi up`" in flagged[0].what


def test_removing_the_last_karpenter_group_of_a_shared_role_flags_the_entry(base: Inventory) -> None:
    old = copy.deepcopy(base)
    _shared_node_role(old)
    new = {rid: e for rid, e in old.items() if not rid.startswith(("karpenter", "helm-karpenter"))}
    new = {rid: e for rid, e in new.items() if not e["type"].startswith("kubernetes:karpenter")}
    assert [e.id for e in running_work.effects(old, new) if e.id.startswith("karpenter")] == [
        "karpenter-node-access-entry"
    ]
    # Trees since item 2: the entry is the Karpenter role's own, and goes with it unflagged.
    rest = {rid: e for rid, e in base.items() if not rid.startswith(("karpenter", "helm-karpenter"))}
    assert not [e for e in running_work.effects(base, rest) if e.id.startswith("karpenter")]
