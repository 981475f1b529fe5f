"""plan.md's scale-up table per GPU group (gpufleet.plan.builders.scale_up): each figure held to its arithmetic, the
cold figure to the one Kueue's waitForPodsReady default counts, and each input marked measured or assumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.facts import image_pull
from gpufleet.facts.checkpoints import duration
from gpufleet.plan.builders import scale_up, serving_start
from gpufleet.rules.pipeline import load_fleet
from gpufleet.spec import cold_start
from tests.network.fleets import fleet, group

EXAMPLE = Path(__file__).resolve().parents[2] / "fleet.yaml"


def test_the_blueprints_figures() -> None:
    """aws-samples/karpenter-blueprints soci-snapshotter @ 48a2104: 10778400361 bytes in 1m52.33s with containerd."""
    assert image_pull.CONTAINERD_GBPS == pytest.approx(0.09595, abs=1e-5)
    assert image_pull.seconds(image_pull.ASSUMED_IMAGE_GB, image_pull.CONTAINERD_GBPS) == pytest.approx(112.33)


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_each_figure_is_its_arithmetic(env: str) -> None:
    f = load_fleet(str(EXAMPLE), env).environments[env]
    rows = scale_up.notes(f)
    for g in f.node_groups:
        p = scale_up.paths(f, g)
        assert p.node_start_s == 360
        assert p.pull.seconds == pytest.approx(p.pull.size_gb / p.pull.gbps)
        assert p.cold_s == pytest.approx(p.node_start_s + p.pull.seconds + (p.weight_s or 0) + p.warm_up_s)
        # the table's cold figure is the one the timeout is derived from
        assert p.cold_s == pytest.approx(cold_start.ready_seconds(f, g))
        assert p.cold_s * cold_start.MARGIN <= cold_start.pods_ready_timeout_seconds(f)
        t = serving_start.ready_time(f, g)
        if g.workload_class.value == "Inference":
            assert t is not None and p.cold_s == pytest.approx(t.cold_node_s)
        if p.warm_pool_s is not None:
            again = p.pull.seconds if g.local_storage == "RAID0" or not p.pull.prepulled else 0
            assert p.warm_pool_s == pytest.approx(60 + 180 + again + (p.weight_s or 0) + p.warm_up_s)
        (row,) = [r for r in rows if r.startswith(f"| {g.name} |")]
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[3] == f"{duration(p.node_start_s)} (assumed)"
        assert cells[4] == duration(p.pull.seconds)
        assert cells[7] == f"**{duration(p.cold_s)}**"
        assert cells[10] == "not configured"


def test_the_examples_paths() -> None:
    """prod: h100's warm pool pulls again (RAID0, in parallel onto the array: 60 + 180 + 59.813 s), notebooks' does not
    (60 + 180 s); l40s's two
    headroom nodes hold one replica (it spans two nodes), whose cache holds the weights (a team prefetches them)."""
    f = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    assert scale_up.paths(f, f.node_group("h100")).warm_pool_s == pytest.approx(60 + 180 + 59.813)
    assert scale_up.paths(f, f.node_group("notebooks")).warm_pool_s == 240
    l40s = scale_up.paths(f, f.node_group("l40s"))
    t = serving_start.ready_time(f, f.node_group("l40s"))
    assert t is not None and l40s.headroom_s == t.warm_node_cached_s
    assert scale_up.paths(f, f.node_group("a100-mig")).headroom_s is None


SERVE = group("serve", "g6e.12xlarge", max_size=8)


def test_measured_size_and_rate_replace_the_assumptions_and_say_so() -> None:
    images = "imageSets:\n  - {name: vllm, images: [vllm:0.9], sizeGB: 20}\n"
    f = fleet([SERVE + "    images: [vllm]\n"], images + "workloads:\n  imagePullGBps: {serve: 0.25}\n")
    p = scale_up.paths(f, f.node_group("serve"))
    assert (p.pull.size_gb, p.pull.gbps, p.pull.seconds) == (20, 0.25, 80)
    assert p.cold_s == 360 + 80
    (row,) = [r for r in scale_up.notes(f) if r.startswith("| serve |")]
    assert row.startswith("| serve | 20 GB (measured) | 0.25 GB/s (measured) | 6.0 min (assumed) | 1.3 min |")
    # no image set: the pod pulls one image of the assumed size, at the assumed rate of its mode: parallel by default
    # on this AL2023 release, onto the 600 MiB/s root volume it defaults to (59.813 s)
    f = fleet([SERVE], "")
    (row,) = [r for r in scale_up.notes(f) if r.startswith("| serve |")]
    assert row.startswith(
        "| serve | 10.78 GB (assumed), the pod's own pull | 0.18 GB/s (assumed: parallel, AL2023, gp3 600 MiB/s) |"
    )
    assert row.endswith("| **7.0 min** | no warm pool | no headroom | not configured |")


@pytest.mark.parametrize(
    ("ami", "extra", "seconds", "rate"),
    [
        (None, "", 59.813, "0.18 GB/s (assumed: parallel, AL2023, gp3 600 MiB/s)"),
        (None, "    imagePull: {mode: Default}\n", 112.33, "0.096 GB/s (assumed: containerd, gp3 125 MiB/s)"),
        ("1.54.0-5043decc", "", 44.974, "0.24 GB/s (assumed: parallel, Bottlerocket, gp3 600 MiB/s)"),
        # an older AMI release has no parallel pull: containerd's own
        (None, "", 112.33, "0.096 GB/s (assumed: containerd, gp3 125 MiB/s)"),
    ],
    ids=["al2023-parallel", "al2023-default", "bottlerocket-parallel", "al2023-before-the-gate"],
)
def test_the_pull_rate_follows_the_mode_and_the_ami(ami: str | None, extra: str, seconds: float, rate: str) -> None:
    """The blueprint's 10.78 GB image: containerd 112.33 s, parallel 59.813 s on AL2023 and 44.974 s on Bottlerocket."""
    spec = SERVE.replace("    taints: []", extra + "    taints: []")
    if ami is not None:
        spec = spec.replace(
            'type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"',
            f'type: BOTTLEROCKET_x86_64_NVIDIA, releaseVersion: "{ami}"',
        )
    elif seconds == 112.33 and not extra:
        spec = spec.replace('releaseVersion: "1.33.13-20260714"', 'releaseVersion: "1.33.3-20250819"')
    f = fleet([spec], "")
    p = scale_up.paths(f, f.node_group("serve"))
    assert p.pull.seconds == pytest.approx(seconds)
    (row,) = [r for r in scale_up.notes(f) if r.startswith("| serve |")]
    assert row.split(" | ")[2] == rate


def _snapshot_group(init: str = "") -> str:
    return (
        group("br", "g6e.12xlarge", max_size=8)
        .replace(
            'type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"',
            'type: BOTTLEROCKET_x86_64_NVIDIA, releaseVersion: "1.54.0-5043decc"',
        )
        .replace("    taints: []", f"    dataVolumeSnapshotId: snap-0123456789abcdef0\n{init}    taints: []")
    )


@pytest.mark.parametrize(
    ("init", "mibps", "cell"),
    [
        # Default: EBS's lazy load, no published rate (50 MiB/s assumed): 10.78 GB / (50 x 2^20 B/s) = 205.6 s
        ("", 50, "| 9.4 min (images at 50 MiB/s, lazy load from S3, assumed) |"),
        # ProvisionedRate 300 MiB/s: 10.78 GB / (300 x 2^20 B/s) = 34.3 s
        (
            "    snapshotInitialization: {mode: ProvisionedRate, volumeInitializationRate: 300}\n",
            300,
            "| 6.6 min (images at 300 MiB/s, provisioned rate, spec) |",
        ),
        # FastSnapshotRestore: initialized at creation, the gp3 volume's own 125 MiB/s: 82.2 s
        (
            "    snapshotInitialization: {mode: FastSnapshotRestore, availabilityZones: [us-east-1a]}\n",
            125,
            "| 7.4 min (images at 125 MiB/s, fast snapshot restore: gp3 throughput, assumed) |",
        ),
    ],
)
def test_the_snapshot_path_reads_the_images_at_the_restored_volumes_rate(init: str, mibps: int, cell: str) -> None:
    """A Bottlerocket data volume from a snapshot of the images (dataVolumeSnapshotId): node start, nothing to pull,
    then the images read once at the rate the restored volume has (snapshotInitialization); a group without a
    snapshot says "not configured"."""
    f = fleet([_snapshot_group(init)], "")
    p = scale_up.paths(f, f.node_group("br"))
    assert p.node_start_s == 360
    read = p.pull.size_gb * 1e9 / (mibps * 2**20)
    assert p.snapshot_s == pytest.approx(360 + read)
    assert p.cold_s == pytest.approx(360 + 112.33)
    (row,) = [r for r in scale_up.notes(f) if r.startswith("| br |")]
    assert row.endswith(cell)
