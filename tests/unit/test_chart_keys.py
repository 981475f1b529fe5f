"""The chart keys gpufleet ships (gpufleet/data/chart-keys, issue 46 item 3): one file per chart version it installs,
each derived by the fetch tool from the upstream files its `sources` name by URL and sha256, so a Helm values
overlay is checked from an installed gpufleet with no upstream files at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpufleet.facts import chart_values
from tests.upstream import BEYOND_SHARED_CHARTS, require_shared, upstream_file
from tools import fetch_upstream

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "gpufleet" / "data" / "chart-keys"


def test_every_chart_version_gpufleet_installs_has_its_keys_and_nothing_else() -> None:
    names = {chart_values.keys_name(chart, version) for chart, version in fetch_upstream.pinned_charts()}
    assert {p.name for p in SHIPPED.iterdir()} == names
    for chart, version in fetch_upstream.pinned_charts():
        assert chart_values.defaults(chart, version).values, (chart, version)


def test_each_file_names_its_upstream_sources_at_the_pinned_commit() -> None:
    listed = {e["path"]: e for e in fetch_upstream.entries()}
    for chart, version in fetch_upstream.pinned_charts():
        document = json.loads((SHIPPED / chart_values.keys_name(chart, version)).read_text(encoding="utf-8"))
        assert (document["chart"], document["version"]) == (chart, version)
        assert document["derivedBy"] == chart_values.DERIVED_BY == "python tools/fetch_upstream.py --chart-keys"
        paths = [s["path"] for s in document["sources"]]
        assert f"{chart_values.chart_path(Path(), chart, version).as_posix()}/values.yaml" in paths or (
            f"charts/{chart}/v{version}/values.yaml" in paths
        )
        for source in document["sources"]:
            entry = listed[source["path"]]
            assert source == {"path": entry["path"], "url": entry["url"], "sha256": entry["sha256"]}


def test_the_shipped_keys_are_what_the_fetch_tool_derives_from_the_upstream_files() -> None:
    # The charts ../shared does not hold come from the cache (tests.upstream.BEYOND_SHARED_CHARTS).
    beyond = {upstream_file(path).parents[3] for path in BEYOND_SHARED_CHARTS}
    texts, problems = fetch_upstream.chart_keys(require_shared(), *sorted(beyond))
    assert problems == []
    assert {name: (SHIPPED / name).read_text(encoding="utf-8") for name in texts} == texts, (
        f"run `{chart_values.DERIVED_BY}` and review the diff"
    )


def test_writing_the_keys_replaces_changed_files_and_removes_stale_ones(tmp_path: Path) -> None:
    (tmp_path / "old-1.0.0.json").write_text("{}")
    (tmp_path / "kept-1.0.0.json").write_text("old\n")
    fetch_upstream.write_chart_keys({"kept-1.0.0.json": "new\n", "added-2.0.0.json": "{}\n"}, tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        "kept-1.0.0.json": "new\n",
        "added-2.0.0.json": "{}\n",
    }


def test_an_overlay_is_checked_with_no_upstream_files_anywhere(tmp_path: Path) -> None:
    """No GPUFLEET_UPSTREAM_DIR, no cache in HOME, the spec outside the checkout: the keys come from the package."""
    spec = (ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text(encoding="utf-8")
    (tmp_path / "fleet.yaml").write_text(spec + "helm:\n  gpuOperator:\n    values:\n      devicePlugin: {envv: []}\n")
    env = {k: v for k, v in os.environ.items() if k != "GPUFLEET_UPSTREAM_DIR"} | {"HOME": str(tmp_path)}
    run = subprocess.run(
        [str(Path(sys.executable).with_name("gpufleet")), "validate", "fleet.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (run.returncode, run.stdout) == (1, ""), run.stderr
    assert run.stderr.splitlines()[0] == (
        "fleet.yaml:45:22: helm.gpuOperator.values.devicePlugin.envv: unknown key devicePlugin.envv: chart gpu-operator"
        " v26.7.0 has no such value"
    )
    assert run.stderr.splitlines()[-2:] == ['hint: did you mean "devicePlugin.env"?', "fleet.yaml: 1 error(s)"]
