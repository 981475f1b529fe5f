"""plan.md opens with what a reviewer decides on (issue 46 item 5): the fleet's monthly cost at minSize and at
maxSize and each team's GPUs, then the risks (extended support pricing, privileged images pinned by tag only, every
stage's warnings, Spot reclaims, the gates that hold nodes), then the rest; the access table's long cells are
footnotes, written once."""

from __future__ import annotations

import re
from pathlib import Path

from gpufleet.plan.access_table import access_values
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.plan.stages import cost
from gpufleet.rules.pipeline import load_fleet, load_fleet_text

ROOT = Path(__file__).resolve().parents[2]


def _page(env: str = "prod", text: str | None = None) -> str:
    fleet = (load_fleet_text(text) if text else load_fleet(str(ROOT / "fleet.yaml"), env)).environments[env]
    return plan_markdown(build_plan(fleet, env))


def _section(page: str, heading: str) -> str:
    return page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_decisions_and_risks_come_first() -> None:
    headings = re.findall(r"^## (.+)$", _page(), re.M)
    assert headings[:4] == ["What you decide on", "Risks", "Stages", "Before you deploy"]


def test_the_cost_is_the_cost_stage_total_and_each_team_has_its_gpus() -> None:
    page = _page()
    decide = _section(page, "What you decide on")
    # the cost stage's last total, "With the control plane, system nodes and root volumes"
    assert (
        "With the control plane, system nodes and root volumes: $15,000 per month at minSize, $837,821 at maxSize."
        in page
    )
    assert decide.startswith(
        "\n**Cost per month: $15,000 at minSize, $837,821 at maxSize** (730 hours of GPU nodes with their warm pools,"
        " the control plane, system nodes and root volumes; the table, the Spot range and what is not counted:"
        " 8. cost).\n"
    )
    assert "| vision | **72**: 64 x H100 on h100, 8 x A10G on notebooks | research |" in decide
    assert "| language | **104**: 64 x H100 on h100, 32 x L40S on l40s, 8 x A10G on notebooks | research |" in decide
    assert "| speech | **52**: 32 x A100 on a100-mig, 16 x L40S on l40s, 4 x A10G on notebooks | research |" in decide


def test_the_risks_of_the_example() -> None:
    risks = _section(_page(), "Risks").strip().splitlines()
    assert risks == [
        "- EKS extended support: Kubernetes 1.35 leaves standard support on 2027-03-27; gpufleet sets no"
        " upgradePolicy, so EKS's default (EXTENDED) then keeps the control plane on 1.35 at $438 a month instead"
        " of $73.00 until `cluster.kubernetesVersion` is raised (8. cost).",
        "- Privileged images pinned by tag only, which whoever controls the tag can point at another image: Python"
        " `python:3.13.5-slim-bookworm` (remediation controller, planted-fault checker); DCGM"
        " `nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04` (planted-fault injector, DCGM health sidecar)"
        " (pin each digest: Before you deploy).",
        "- Spot capacity (`a100-mig`): EC2 reclaims a Spot node with two minutes' notice; its pods are evicted and a"
        " replacement node starts (8. cost prices the range).",
        "- Gate `nccl-bandwidth-h100` (5. network) holds 2 `h100` node(s) (p5.48xlarge, every GPU) for up to 30"
        " minutes, $110 an hour (from 0 nodes: the autoscaler launches them for it).",
        "- Gate `planted-fault` (7. health) plants a fault on one `notebooks` node (g5.xlarge), which the health"
        " loop cordons, for up to 135 minutes.",
    ]


def test_a_stage_warning_is_a_risk_and_said_once() -> None:
    spec = (
        (ROOT / "fleet.yaml").read_text().replace("{nodeGroup: notebooks, gpus: 4}", "{nodeGroup: notebooks, gpus: 14}")
    )
    page = _page("prod", spec)
    warning = "flavor notebooks: teams' nominal quotas add up to 30 GPUs, more than node group notebooks holds at"
    assert page.count(warning) == 1
    assert f"- **admission**: {warning}" in _section(page, "Risks")


def test_the_access_tables_long_cells_are_footnotes() -> None:
    page = _page()
    fleet = load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"]
    edit = access_values(fleet, "cost")["team_edit"]
    assert page.count(edit) == 1 and f"\n[^team-edit]: {edit}.\n" in page
    assert page.count("[^team-edit]") == 1 + 3  # the definition, and one reference per team member
    assert page.count("read: clusterqueues, clusterqueues/status") == 1


def test_the_cost_line_counts_what_the_estimate_counts() -> None:
    fleet = load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"]
    at_min, at_max, unpriced = cost.fleet_monthly(fleet)
    assert (cost.usd(at_min), cost.usd(at_max), unpriced) == ("$15,000", "$837,821", [])
