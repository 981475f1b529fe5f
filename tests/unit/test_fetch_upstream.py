"""The upstream files behind the suite are obtainable (issue 35 item 10): tools/fetch_upstream.py fetches each
pinned CRD and chart values file from its upstream URL at the pinned commit into a cache the tests read
(GPUFLEET_UPSTREAM_DIR), verifying each against its recorded sha256; a clone without them gets one summary line
that names the command. No test here touches the network: downloads are served from ../shared."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpufleet.facts.versions import COMPONENTS
from tests.conftest import upstream_skip_summary
from tests.upstream import BEYOND_SHARED, MISSING, find_upstream_file, require_shared
from tools import fetch_upstream

URL = re.compile(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+")


def test_every_entry_names_a_pinned_commit_and_a_hash() -> None:
    entries = fetch_upstream.entries()
    assert len({e["path"] for e in entries}) == len(entries)
    for entry in entries:
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), entry
        assert entry["url"] is None or URL.fullmatch(entry["url"]), entry


def test_every_pinned_chart_and_crd_the_tests_read_can_be_fetched() -> None:
    with_url = {e["path"] for e in fetch_upstream.entries() if e["url"]}
    for component in COMPONENTS.values():
        if component.pin_field != "chart":
            continue  # an image release (Multus): no chart
        for version in component.supported:
            # ../shared names the JobSet, Trainer and LWS charts by their release tag (tests.upstream.chart_dir)
            dirs = {f"charts/{component.chart}/{d}/values.yaml" for d in (version, f"v{version}")}
            assert dirs & with_url, (component.chart, version)
    assert {p for p in with_url if p.startswith("crds/")} >= {
        "crds/kueue.x-k8s.io_clusterqueues.yaml",
        "crds/nvidia.com_clusterpolicies.yaml",
        "crds/k8s.cni.cncf.io_network-attachment-definitions.yaml",
        "crds/node.eks.aws_nodeconfigs.yaml",
    }
    assert set(BEYOND_SHARED) <= with_url


def test_the_list_is_exactly_the_files_the_tests_read() -> None:
    shared = require_shared()
    files = sorted(
        p.relative_to(shared).as_posix()
        for top in ("crds", "charts")
        for p in (shared / top).rglob("*")
        if p.is_file() and p.name != "SOURCES.md"
    )
    entries = fetch_upstream.entries()
    assert [e["path"] for e in entries] == sorted(e["path"] for e in entries)
    # The files ../shared does not hold are read from the cache (tests.upstream.upstream_file); one that ../shared
    # gains leaves BEYOND_SHARED.
    assert not set(BEYOND_SHARED) & set(files)
    assert [e["path"] for e in entries if e["path"] not in BEYOND_SHARED] == files
    for entry in entries:
        found = find_upstream_file(entry["path"])
        if found is not None:
            assert hashlib.sha256(found.read_bytes()).hexdigest() == entry["sha256"], entry["path"]


def _served(shared: Path) -> dict[str, bytes]:
    """What each URL would return: the file, or, where only some lines are kept, the file with lines around it; of
    the files beyond ../shared, those in the cache."""
    served = {}
    for entry in fetch_upstream.entries():
        found = shared / entry["path"] if entry["path"] not in BEYOND_SHARED else find_upstream_file(entry["path"])
        if entry["url"] and found is not None:
            data = found.read_bytes()
            if "lines" in entry:
                first, _ = entry["lines"]
                data = b"".join(b"# before\n" for _ in range(first - 1)) + data + b"---\n# after\n"
            served[entry["url"]] = data
    return served


def test_fetch_fills_the_cache_verifies_and_fetches_nothing_twice(tmp_path: Path) -> None:
    served = _served(require_shared())
    asked: list[str] = []

    def get(url: str) -> bytes:
        asked.append(url)
        if url not in served:
            raise OSError("offline")
        return served[url]

    present, problems, unknown = fetch_upstream.fetch(tmp_path, get)
    offline = [
        f"{e['path']}: {e['url']}: offline" for e in fetch_upstream.entries() if e["url"] and e["url"] not in served
    ]
    assert problems == [p for p in offline if p.split(":")[0] in BEYOND_SHARED] == offline
    assert present == len(served) and len(asked) == len(served) + len(offline)
    assert all("nvsentinel" in p or "kube-prometheus-stack" in p or "karpenter" in p or "trainer" in p for p in unknown)
    asked.clear()
    assert fetch_upstream.fetch(tmp_path, get)[:2] == (len(served), offline) and len(asked) == len(offline)
    assert not list(tmp_path.rglob(".*.partial"))


def test_a_download_that_is_not_the_pinned_file_is_not_written(tmp_path: Path) -> None:
    entry = next(e for e in fetch_upstream.entries() if e["path"] == "charts/kueue/0.19.2/values.yaml")

    def get(url: str) -> bytes:
        if url == entry["url"]:
            return b"replaced: true\n"
        raise OSError("offline")

    _, problems, _ = fetch_upstream.fetch(tmp_path, get)
    assert f"charts/kueue/0.19.2/values.yaml: {entry['url']} is not the pinned file (sha256 differs); not written" in (
        problems
    )
    assert not (tmp_path / "charts" / "kueue" / "0.19.2" / "values.yaml").exists()
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.parametrize(("reasons", "count"), [([], None), (["other"], None), ([MISSING + " at x", "other"], 1)])
def test_one_summary_line_names_the_command(reasons: list[str], count: int | None) -> None:
    line = upstream_skip_summary([SimpleNamespace(longrepr=("f", 1, f"Skipped: {r}")) for r in reasons])
    if count is None:
        assert line is None
    else:
        assert line == (
            f"gpufleet: {count} test(s) skipped: the pinned upstream CRDs and chart values are not here; fetch them"
            " with `python tools/fetch_upstream.py` and run the tests with GPUFLEET_UPSTREAM_DIR set to its cache"
        )
