"""The cost estimate in plan.md and the dated price table."""

from __future__ import annotations

import pytest

from gpufleet.facts import catalog, pricing
from gpufleet.plan.builders.cost import estimate_notes, group_gpu_hour_usd
from gpufleet.rules.pipeline import load_fleet
from tests.promtool import CASES

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
    # l4: Stopped warm pool of 2 costs only its volumes: 2 x 300 GiB x 0.08.
    assert rows["l4"].endswith("| $6,718 | $20,155 | $48.00 (2 Stopped) |")
    assert lines[-1] == "Fleet: $38,886 per month at minSize (warm pools included), $228,983 at maxSize."


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
