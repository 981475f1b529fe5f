"""The upstream files behind the suite are obtainable (issue 35 item 10): tools/fetch_upstream.py fetches each
pinned CRD and chart values file from its upstream URL at the pinned commit into a cache the tests read
(GPUFLEET_UPSTREAM_DIR), verifying each against its recorded sha256; a clone without them gets one summary line
that names the command. No test here touches the network: downloads are served from ../shared."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpufleet.facts.versions import COMPONENTS
from tests.conftest import upstream_skip_summary
from tests.upstream import BESIDE, BEYOND_SHARED, MISSING, find_upstream_file, require_shared
from tools import fetch_upstream

URL = re.compile(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+")


def test_every_entry_names_a_pinned_commit_and_a_hash() -> None:
    entries = fetch_upstream.entries()
    assert len({e["path"] for e in entries}) == len(entries)
    for entry in entries:
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), entry
        assert URL.fullmatch(entry["url"] or ""), entry


def test_every_pinned_chart_and_crd_the_tests_read_can_be_fetched() -> None:
    with_url = {e["path"] for e in fetch_upstream.entries()}
    for component in COMPONENTS.values():
        if component.pin_field != "chart":
            continue  # an image release (Multus): no chart
        for version in component.supported:
            # ../shared names the JobSet, Trainer and LWS charts by their release tag (tests.upstream.chart_dir)
            for chart in filter(None, (component.chart, component.crd_chart)):
                dirs = {f"charts/{chart}/{d}/values.yaml" for d in (version, f"v{version}")}
                assert dirs & with_url, (chart, version)
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
    # gains leaves BEYOND_SHARED. A cache the fetch tool filled holds them all.
    if shared == BESIDE:
        assert not set(BEYOND_SHARED) & set(files)
    assert [e["path"] for e in entries if e["path"] not in BEYOND_SHARED] == [
        f for f in files if f not in BEYOND_SHARED
    ]
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
        if found is not None:
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

    present, problems = fetch_upstream.fetch(tmp_path, get)
    offline = [f"{e['path']}: {e['url']}: offline" for e in fetch_upstream.entries() if e["url"] not in served]
    assert problems == [p for p in offline if p.split(":")[0] in BEYOND_SHARED] == offline
    assert present == len(served) and len(asked) == len(served) + len(offline)
    asked.clear()
    assert fetch_upstream.fetch(tmp_path, get) == (len(served), offline) and len(asked) == len(offline)
    assert not list(tmp_path.rglob(".*.partial"))


def test_a_download_that_is_not_the_pinned_file_is_not_written(tmp_path: Path) -> None:
    entry = next(e for e in fetch_upstream.entries() if e["path"] == "charts/kueue/0.19.2/values.yaml")

    def get(url: str) -> bytes:
        if url == entry["url"]:
            return b"replaced: true\n"
        raise OSError("offline")

    _, problems = fetch_upstream.fetch(tmp_path, get)
    assert f"charts/kueue/0.19.2/values.yaml: {entry['url']} is not the pinned file (sha256 differs); not written" in (
        problems
    )
    assert not (tmp_path / "charts" / "kueue" / "0.19.2" / "values.yaml").exists()
    assert not list(tmp_path.rglob("*.partial"))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A mirror on loopback, as an internal index serves the URLs: the file of https://HOST/PATH at BASE/HOST/PATH."""
    root = tmp_path / "mirror"
    root.mkdir()
    handler = functools.partial(_Quiet, directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield root, f"http://127.0.0.1:{server.server_address[1]}/upstream"
        server.shutdown()


def test_fetch_from_a_mirror_on_loopback(
    tmp_path: Path, mirror: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, base = mirror
    commit = "0" * 40
    files = {
        "charts/a/1.0.0/values.yaml": (f"https://raw.githubusercontent.com/o/a/{commit}/values.yaml", b"a: 1\n", None),
        "crds/b.yaml": (f"https://raw.githubusercontent.com/o/b/{commit}/all.yml", b"x\nkind: B\ny\n", [2, 2]),
        "crds/c.yaml": (f"https://raw.githubusercontent.com/o/c/{commit}/c.yaml", b"served\n", None),
    }
    listed = []
    for path, (url, served, lines) in files.items():
        local = root / "upstream" / url.removeprefix("https://")
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(served)
        kept = served.splitlines(keepends=True)[1] if lines else served
        pinned = b"pinned\n" if path == "crds/c.yaml" else kept
        listed.append(
            {"path": path, "url": url, "sha256": hashlib.sha256(pinned).hexdigest()}
            | ({"lines": lines} if lines else {})
        )
    manifest = tmp_path / "upstream_files.json"
    manifest.write_text(json.dumps(listed))
    monkeypatch.setattr(fetch_upstream, "MANIFEST", manifest)
    cache = tmp_path / "cache"
    assert fetch_upstream.main(["--dir", str(cache), "--mirror", base]) == 1
    out, err = capsys.readouterr()
    assert (cache / "charts/a/1.0.0/values.yaml").read_bytes() == b"a: 1\n"
    assert (cache / "crds/b.yaml").read_bytes() == b"kind: B\n"
    assert not (cache / "crds/c.yaml").exists()
    assert (
        err
        == f"error: crds/c.yaml: {base}/raw.githubusercontent.com/o/c/{commit}/c.yaml is not the pinned file (sha256 differs); not written\n"
    )
    assert out == f"2 upstream file(s) in {cache}; run the tests with GPUFLEET_UPSTREAM_DIR={cache}\n"
    (root / "upstream" / files["crds/c.yaml"][0].removeprefix("https://")).write_bytes(b"pinned\n")
    assert fetch_upstream.main(["--dir", str(cache), "--mirror", base + "/"]) == 0
    assert (cache / "crds/c.yaml").read_bytes() == b"pinned\n"


def test_a_file_the_mirror_lacks_is_named_with_its_mirror_url(tmp_path: Path, mirror: tuple[Path, str]) -> None:
    _, base = mirror
    present, problems = fetch_upstream.fetch(tmp_path, mirror=base)
    first = fetch_upstream.entries()[0]
    assert present == 0 and len(problems) == len(fetch_upstream.entries())
    assert (
        problems[0] == f"{first['path']}: {fetch_upstream.mirrored(first['url'], base)}: HTTP Error 404: File not found"
    )


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
