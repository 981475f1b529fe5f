"""Gate floors per instance type (issue 29 item 12): every EFA type's floor comes from a published measurement or
from its same-fabric sibling, with the source stated, and no floor fails a published healthy run.

Before: only p5.48xlarge (449 GB/s) and p4de.24xlarge (77.6) had published figures; p5e/p5en fell back to 0.8 x line
rate (288 GB/s after nccl-tests' 0.9) and p4d to 36 GB/s, which passed fabrics missing a third or half of their EFA;
and the p5 floor (404.1 GB/s after 0.9) failed AWS's own healthy EKS run (375.6 GB/s at 1-2 GiB).
"""

from __future__ import annotations

import pytest

from gpufleet.facts import catalog
from gpufleet.plan.manifests import network as net
from tests.network.fleets import fleet, group, plan

GIB = {"1G", "2G", "4G"}  # -b 1G -e 4G -f 2


def test_the_gate_runs_the_sizes_the_published_rows_are_averaged_over() -> None:
    assert net.GATE_SIZES == ("1G", "4G")
    for run in net.PUBLISHED_RUNS:
        assert set(run.rows) <= GIB


@pytest.mark.parametrize("run", net.PUBLISHED_RUNS, ids=lambda r: f"{r.instance_type}-{r.where}")
def test_no_floor_fails_a_published_healthy_run(run: net.PublishedRun) -> None:
    for name, (sibling, _) in [(run.instance_type, (run.instance_type, "")), *net.SIBLINGS.items()]:
        if sibling != run.instance_type:
            continue
        floor = net.min_bus_bandwidth(catalog.lookup(name), 0.8)
        # nccl-tests fails a run whose average is below 0.9 x NCCL_TESTS_MIN_BW (src/common.cu).
        assert floor * net.NCCL_TESTS_SLACK <= run.average(), (name, run.where)


def test_the_p5_floor_is_the_lowest_healthy_published_eks_run() -> None:
    eks = next(r for r in net.PUBLISHED_RUNS if r.instance_type == "p5.48xlarge" and r.where == "EKS")
    assert eks.average() == pytest.approx(375.565)  # (313.29 + 313.29 + 437.79 + 437.89) / 4
    assert net.min_bus_bandwidth(catalog.lookup("p5.48xlarge"), 0.8) == 375.6


@pytest.mark.parametrize(
    ("instance", "floor", "missing"),
    [
        ("p5.48xlarge", 375.6, 1 / 3),
        ("p5e.48xlarge", 375.6, 1 / 3),  # was 320 (0.8 x 400): passed two thirds of the EFA
        ("p5en.48xlarge", 375.6, 1 / 3),
        ("p4d.24xlarge", 77.6, 1 / 3),  # was 40 (0.8 x 50): passed half of the EFA
        ("p4de.24xlarge", 77.6, 1 / 3),
    ],
)
def test_a_fabric_missing_a_third_of_its_efa_fails(instance: str, floor: float, missing: float) -> None:
    info = catalog.lookup(instance)
    assert net.min_bus_bandwidth(info, 0.8) == floor
    sibling = net.SIBLINGS.get(instance, (instance, ""))[0]
    healthy = min(r.average() for r in net.PUBLISHED_RUNS if r.instance_type == sibling)
    best = max(r.average() for r in net.PUBLISHED_RUNS if r.instance_type == sibling)
    # Bus bandwidth scales with the EFA bandwidth left: the best healthy run with a third missing fails the gate.
    assert best * (1 - missing) < floor * net.NCCL_TESTS_SLACK <= healthy
    assert not net.floor_is_estimate(info)


def test_every_multi_efa_type_has_a_measured_or_sibling_floor_or_says_it_is_an_estimate() -> None:
    for info in catalog.CATALOG.values():
        if not info.efa_supported:
            continue
        source = net.floor_source(info, 0.8)
        if net.floor_is_estimate(info):
            assert "an estimate" in source and info.name in source
        elif info.name in net.SIBLINGS:
            assert source.startswith(f"{net.SIBLINGS[info.name][0]}'s published floor: the same ")
        else:
            assert source.startswith(f"lowest published 2-node all_reduce bus bandwidth of {info.name} (")


def test_plan_md_states_each_floors_source_and_warns_of_an_estimate() -> None:
    f = fleet([group("h200", "p5en.48xlarge", "EFA"), group("b200", "p6-b200.48xlarge", "EFA")])
    content = next(s for s in plan(f).stages if s.name == "network").content
    row = next(line for line in content.notes if line.startswith("| h200 |"))
    assert row == (
        "| h200 | EFA | p5en.48xlarge | 3200 Gbit/s = 400 GB/s | 375.6 (p5.48xlarge's published floor: the same 3200"
        " Gbit/s of EFA (16 x 200 Gbit/s EFAv3, not 32 x 100) and 8-GPU NVSwitch board (H200)) | 338 |"
    )
    assert [w for w in content.warnings if "no published" in w] == [
        'node group "b200": no published two-node all_reduce measurement exists for p6-b200.48xlarge or a'
        " same-fabric sibling, so its gate floor (320 GB/s) is network.bandwidthGate.efficiency x the rated line"
        " rate: an estimate that may pass a degraded fabric or fail a healthy one; measure a healthy pair once and"
        " set efficiency from it"
    ]
