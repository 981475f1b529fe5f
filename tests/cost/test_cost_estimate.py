"""The cost estimate in plan.md and the dated price table."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.facts import ami_releases, catalog, pricing, versions
from gpufleet.plan.stages.cost import (
    SPOT_NOT_COUNTED,
    around_the_gpu_nodes,
    control_plane,
    estimate_notes,
    group_gpu_hour_usd,
    raid0_warm_pool_caveats,
    spot_capacity,
    spot_range,
)
from gpufleet.rules.pipeline import load_fleet, load_fleet_text
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet, NodeGroup
from tests.promtool import CASES, ROOT

INSTALL = load_fleet(str(CASES / "observability-install" / "fleet.yaml"), "prod").environments["prod"]
EXISTING = load_fleet(str(CASES / "observability-existing" / "fleet.yaml"), "prod").environments["prod"]


def test_every_catalog_type_has_a_price() -> None:
    assert set(pricing.ON_DEMAND_USD_PER_HOUR) == set(catalog.gpu_instance_names())
    assert all(p > 0 for p in pricing.ON_DEMAND_USD_PER_HOUR.values())


def test_gpu_hour_is_instance_rate_over_gpu_count() -> None:
    assert pricing.gpu_hour_usd("p5.48xlarge") == pytest.approx(55.04 / 8)
    assert pricing.gpu_hour_usd("not-a-type") is None


def test_spec_price_wins_then_table_with_source() -> None:
    assert group_gpu_hour_usd(INSTALL, INSTALL.node_group("a100")) == (2.75, "spec")
    assert group_gpu_hour_usd(INSTALL, INSTALL.node_group("l4")) == (pytest.approx(4.6016 / 4), "table 2025-08-01")
    price, source = group_gpu_hour_usd(EXISTING, EXISTING.node_group("batch"))
    assert source == "table 2025-08-01 (on-demand rate; Spot prices differ)"


def test_estimate_rows_min_max_and_warm_pools() -> None:
    lines, warnings = estimate_notes(INSTALL)
    assert warnings == []
    rows = {
        line.split(" | ")[0].lstrip("| "): line
        for line in lines
        if line.startswith("| a100") or line.startswith("| l4")
    }
    # a100: 8 GPUs x 2.75 = 22/h; x730: 16,060 at min 1, 192,720 at max 12; a Running warm pool of 1 costs the full
    # rate.
    assert (
        rows["a100"] == "| a100 | p4d.24xlarge | 8 | 2.75 (spec) | 22.00 | $16,060 | $192,720 | $16,060 (1 Running) |"
    )
    # l4: Stopped warm pool of 2 costs only its volumes: 2 x (300 GiB x 0.08 + the 600 MiB/s parallel pull defaults to,
    # (600 - 125) x 0.04) = 2 x (24 + 19).
    assert rows["l4"].endswith("| $6,718 | $20,155 | $86.00 (2 Stopped) |")
    assert "Fleet: $38,924 per month at minSize (warm pools included), $229,021 at maxSize." in lines


def test_a_reservation_is_billed_at_every_size() -> None:
    """network-efa's a100 group holds a targeted ODCR of 4 p4d.24xlarge with minSize 0: its standing cost is the
    reservation's (4 x 21.96 x 730 = 64,123), not minSize x price ($0), and maxSize 4 costs no more."""
    fleet = load_fleet(str(CASES / "network-efa" / "fleet.yaml"), "prod").environments["prod"]
    lines, _ = estimate_notes(fleet)
    (row,) = [line for line in lines if line.startswith("| a100 ")]
    assert row.endswith("| 21.96 | $64,123 (4 reserved) | $64,123 (4 reserved) | - |")
    assert any(
        line.startswith("An On-Demand Capacity Reservation is billed at the on-demand rate for every reserved instance")
        for line in lines
    )
    assert pricing.billed_nodes(6, 4) == 6 and pricing.billed_nodes(0, 4) == 4


# --- what the GPU table leaves out (issue 29 item 8) ---------------------------------------------------------------

EXAMPLE = load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"]


def _on(fleet: Fleet, version: str) -> Fleet:
    return dataclasses.replace(fleet, cluster=dataclasses.replace(fleet.cluster, kubernetes_version=version))


def test_the_control_plane_follows_the_eks_support_calendar() -> None:
    # EKS release calendar: 1.33 standard support ended 2026-07-29; 1.34 ends 2026-12-02 (after CALENDAR_AS_OF); 1.35
    # ends 2027-03-27.
    sentence, monthly = control_plane(_on(EXAMPLE, "1.33"))
    assert monthly == pytest.approx(0.60 * 730)
    assert "on 2026-12-01 Kubernetes 1.33 is in extended support (standard ended 2026-07-29" in sentence
    assert "EKS's default supportType EXTENDED applies" in sentence
    sentence, monthly = control_plane(_on(EXAMPLE, "1.34"))
    assert monthly == pytest.approx(0.10 * 730)
    assert "Kubernetes 1.34 is in standard support until 2026-12-02 (extended until 2027-12-02)" in sentence
    sentence, monthly = control_plane(EXAMPLE)
    assert monthly == pytest.approx(0.10 * 730)
    assert "Kubernetes 1.35 is in standard support until 2027-03-27 (extended until 2028-03-27)" in sentence
    sentence, monthly = control_plane(_on(EXAMPLE, "1.36"))
    assert monthly == pytest.approx(73.0)  # not in the calendar: standard rate
    assert "Kubernetes 1.36 is not in gpufleet's EKS support calendar" in sentence
    existing = load_fleet(str(CASES / "existing-capacity-block" / "fleet.yaml"), "prod").environments["prod"]
    assert existing.cluster.mode == "Existing"
    assert control_plane(existing) == (
        "EKS control plane: the existing cluster's, billed to it already (not counted here).",
        None,
    )


def test_system_nodes_and_root_volumes_are_counted() -> None:
    lines, extra_min, extra_max = around_the_gpu_nodes(EXAMPLE)
    system = EXAMPLE.cluster.system_nodes
    assert system is not None and system.instance_type == "m7i.xlarge"
    each = 0.2016 * 730 + 20 * 0.08

    # each node's gp3 volume: its size, and the throughput above 125 MiB/s (a100-mig pulls in parallel onto 600 MiB/s;
    # the RAID0 groups keep the SOCI store on the array, notebooks pull with containerd: both at the baseline)
    def volume(g: NodeGroup) -> float:
        return g.disk_size_gib * 0.08 + (475 * 0.04 if g.name == "a100-mig" else 0.0)

    assert [defaults.disk_throughput(g) for g in EXAMPLE.node_groups] == [125, 125, 600, 125]
    assert {defaults.disk_iops(g) for g in EXAMPLE.node_groups} == {3000}
    volumes_min = sum(g.min_size * volume(g) for g in EXAMPLE.node_groups)
    volumes_max = sum(g.max_size * volume(g) for g in EXAMPLE.node_groups)
    assert extra_min == pytest.approx(0.10 * 730 + system.min_size * each + volumes_min)  # 1.35: standard support
    assert extra_max == pytest.approx(0.10 * 730 + system.max_size * each + volumes_max)
    assert any(line.startswith(f"- System nodes: {system.min_size}..{system.max_size} x m7i.xlarge") for line in lines)
    total = next(line for line in estimate_notes(EXAMPLE)[0] if line.startswith("With the control plane"))
    assert total.startswith("With the control plane, system nodes and root volumes: $")


def test_a_raid0_group_with_a_stopped_warm_pool_gets_the_caveat() -> None:
    h100 = EXAMPLE.node_group("h100")
    assert h100.local_storage == "RAID0" and h100.warm_pool is not None and h100.warm_pool.state == "Stopped"
    assert [line for line in raid0_warm_pool_caveats(EXAMPLE) if line] == [
        "- Warm pool of h100 (Stopped) with localStorage RAID0: instance store is lost at every stop, so a resumed"
        " instance rebuilds the array and pulls every image again; its standing cost buys only EC2 launch and boot,"
        " not a warm start with images (keep images on EBS, or a Running pool)."
    ]
    running = dataclasses.replace(h100, warm_pool=dataclasses.replace(h100.warm_pool, state="Running"))
    others = tuple(running if g.name == "h100" else g for g in EXAMPLE.node_groups)
    assert raid0_warm_pool_caveats(dataclasses.replace(EXAMPLE, node_groups=others)) == []


MIXED = load_fleet(str(CASES / "karpenter-mixed" / "fleet.yaml"), "prod").environments["prod"]


def test_a_spot_group_states_its_on_demand_to_spot_range() -> None:
    """Hand-computed: batch is 20 x g6e.12xlarge at 10.49264 USD/h on-demand (no cost.gpuHourUsd): 20 x 10.49264 x
    730 = 153,192.54 at the on-demand rate (Spot's default maximum price), 10% of it = 15,319.25 at the deepest 90%
    discount; the fleet at maxSize (with notebooks, 10 x g5.2xlarge at 1.212: 8,847.60) is 162,040.14, or
    24,166.85 with batch at the deepest discount."""
    lines = spot_range(EXISTING, 162_040.144)
    assert "| batch | Spot | 20 x g6e.12xlarge | $15,319 | $153,193 | $153,193 (the on-demand rate) |" in lines
    assert lines[-1].startswith(
        "Fleet at maxSize with these groups on Spot: $24,167 at the deepest discount to $162,040 at the on-demand rate"
        " (the table: $162,040). The range is for the nodes' instance-hours only: Spot prices move by zone and hour"
    )
    assert SPOT_NOT_COUNTED in lines[-1]
    estimate, _ = estimate_notes(EXISTING)
    assert "Fleet at maxSize with these groups on Spot: $24,167 at the deepest discount" in "\n".join(estimate)


def test_a_karpenter_spot_pool_states_its_range_beside_the_spec_price() -> None:
    """a100-mig is a Karpenter pool of 4 x p4d.24xlarge requiring karpenter.sh/capacity-type spot: 4 x 21.96 x 730 =
    64,123.20 at the on-demand rate, 6,412.32 at the deepest discount; the table counts its cost.gpuHourUsd 4.10 x 8
    GPUs x 4 x 730 = 95,776."""
    estimate, _ = estimate_notes(MIXED)
    assert "| a100-mig | Spot | 4 x p4d.24xlarge | $6,412 | $64,123 | $95,776 (its cost.gpuHourUsd) |" in estimate
    # Reserved pools (an ODCR, a Capacity Block) and On-Demand pools never run on Spot.
    assert [spot_capacity(g) for g in MIXED.node_groups] == [None, None, "Spot", None, None, None]


def test_no_spot_group_no_range() -> None:
    assert not any(spot_capacity(g) for g in INSTALL.node_groups)
    assert spot_range(INSTALL, 1.0) == []
    assert pricing.SPOT_MAX_DISCOUNT == 0.90


def test_a_pool_falling_back_from_spot_to_on_demand_gets_the_range() -> None:
    """l40s as a Spot-then-On-Demand pool (capacity.fallback): 12 x g6e.12xlarge at 10.49264 USD/h: 91,915.53 at the
    on-demand rate, 9,191.55 at the deepest discount; the table counts its cost.gpuHourUsd 2.35 x 4 x 12 x 730."""
    text = (CASES / "karpenter-mixed" / "fleet.yaml").read_text()
    text = text.replace(
        "  scaling:\n    maxSize: 12\n", "  scaling:\n    maxSize: 12\n  capacity:\n    fallback: [Spot, OnDemand]\n"
    )
    fleet = load_fleet_text(text, env="prod").environments["prod"]
    assert spot_capacity(fleet.node_group("l40s")) == "Spot, then On-Demand"
    estimate, _ = estimate_notes(fleet)
    assert (
        "| l40s | Spot, then On-Demand | 12 x g6e.12xlarge | $9,192 | $91,916 | $82,344 (its cost.gpuHourUsd) |"
        in estimate
    )


def test_the_example_and_the_golden_cases_run_a_minor_in_standard_support() -> None:
    # issue 41 item 20: the example ran 1.33, in extended support (billed at six times standard) on CALENDAR_AS_OF.
    # Every release it pins is one the AMI catalog knows for that minor (validate only warns on an unknown one).
    specs = [ROOT / "fleet.yaml", *sorted(CASES.glob("*/fleet.yaml"))]
    assert len(specs) > 5
    for path in specs:
        for env, fleet in load_fleet(str(path), None).environments.items():
            version = fleet.cluster.kubernetes_version
            assert version in versions.KUBERNETES_VERSIONS, (path, env)
            end_standard, _ = pricing.EKS_SUPPORT_CALENDAR[version]
            assert pricing.CALENDAR_AS_OF < end_standard, (path, env, version)
            system = fleet.cluster.system_nodes
            pins = [(ami_releases.SYSTEM_NODES_AMI_TYPE, system.release_version)] if system else []
            pins += [(g.ami_type, g.ami_release_version) for g in fleet.node_groups]
            for ami_type, release in pins:
                assert ami_releases.check(ami_type, release, version) is None, (path, env, ami_type, release)
