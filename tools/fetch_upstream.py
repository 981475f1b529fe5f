"""Fetch the pinned upstream files the tests check rendered objects against (CRDs, chart values) into a cache.

    python tools/fetch_upstream.py [--dir DIR] [--mirror BASE]

DIR defaults to $GPUFLEET_UPSTREAM_DIR, else ~/.cache/gpufleet/upstream. The tests read the upstream files from
$GPUFLEET_UPSTREAM_DIR, else from ../shared beside the project, else from that default cache (tests/upstream.py; a
file ../shared does not hold, such as KEDA's ScaledObject CRD, from the cache where ../shared is used), and skip what
needs them where none has them, with one summary line naming this command (tests/conftest.py).

tools/upstream_files.json lists each file: its path in the cache (crds/..., charts/<chart>/<version>/...), the URL
of the upstream file at the pinned commit, the lines of it that are kept (where only part of a file is the CRD, or,
for a chart's CRD template, its spec), and the sha256 of what is kept (tests/unit/test_fetch_upstream.py fails when
an entry lacks either). A file already in the cache with its hash is not fetched again; a download that does not
match is an error and is not written. Nothing is half-written: each file is written beside its place and renamed.
Exit 0 when every file is in the cache, 1 otherwise.

--chart-keys then derives gpufleet/data/chart-keys/ from the cache: the value keys of every chart version gpufleet
installs, the package data its Helm values overlay check reads (gpufleet.facts.chart_values), each with the URL and
sha256 of the upstream files it comes from. Run it after a chart pin changes; tests/unit/test_chart_keys.py fails
while the shipped files differ from what it derives.

--kube-schemas derives gpufleet/data/kube-schemas/ the same way: the shape of each Kubernetes kind explain models and
synth writes, from the pinned CRDs in the cache and the built-in definitions kubernetes-validate ships
(tools/kube_schemas.py; tests/unit/test_kube_schemas.py fails while the shipped files differ from what it derives).

--mirror BASE fetches from a mirror of those URLs instead (where only an internal index is reachable): the file of
https://HOST/PATH at BASE/HOST/PATH, for instance http://mirror.internal/upstream/ serving a directory that holds
HOST/PATH. What is fetched is checked against the same sha256, so a mirror cannot change what the tests read.

The upstream files are not part of this project (each keeps its own license, Apache-2.0 or MIT-0); only the list
of where they come from is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpufleet.facts import chart_values
from gpufleet.facts.versions import COMPONENTS
from tools import kube_schemas

MANIFEST = Path(__file__).resolve().with_name("upstream_files.json")
CHART_KEYS = Path(__file__).resolve().parents[1] / "gpufleet" / "data" / "chart-keys"
DEFAULT_DIR = Path("~/.cache/gpufleet/upstream")
TIMEOUT_SECONDS = 30


def default_dir() -> Path:
    return Path(os.environ.get("GPUFLEET_UPSTREAM_DIR") or DEFAULT_DIR).expanduser()


def entries() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return loaded


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (the manifest's https URLs, or a mirror's)
        data: bytes = response.read()
        return data


def kept(data: bytes, entry: dict[str, Any]) -> bytes:
    """The part of a downloaded file the cache keeps: lines [first, last] (1-based, inclusive) where given."""
    if "lines" not in entry:
        return data
    first, last = entry["lines"]
    return b"".join(data.splitlines(keepends=True)[first - 1 : last])


def mirrored(url: str, base: str) -> str:
    """Where a mirror serving HOST/PATH under `base` has the file of https://HOST/PATH."""
    split = urllib.parse.urlsplit(url)
    return f"{base.rstrip('/')}/{split.netloc}{split.path}"


def fetch(directory: Path, get: Callable[[str], bytes] = download, mirror: str | None = None) -> tuple[int, list[str]]:
    """(files now in the cache, the problems)."""
    present, problems = 0, []
    for entry in entries():
        target = directory / entry["path"]
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == entry["sha256"]:
            present += 1
            continue
        url = mirrored(entry["url"], mirror) if mirror else entry["url"]
        try:
            data = kept(get(url), entry)
        except OSError as exc:
            problems.append(f"{entry['path']}: {url}: {exc}")
            continue
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            problems.append(f"{entry['path']}: {url} is not the pinned file (sha256 differs); not written")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.partial")
        staging.write_bytes(data)
        os.replace(staging, target)
        present += 1
    return present, problems


def pinned_charts() -> list[tuple[str, str]]:
    """Every (chart, version) gpufleet installs as a Helm release (a component's CRD chart at its versions too)."""
    charts = [(c.chart, c.crd_chart) for c in COMPONENTS.values() if c.pin_field == "chart"]
    versions = {c.chart: c.supported for c in COMPONENTS.values()}
    return sorted({(name, v) for chart, crds in charts for name in (chart, crds) if name for v in versions[chart]})


def chart_keys(directory: Path, *more: Path) -> tuple[dict[str, str], list[str]]:
    """(the text of each gpufleet/data/chart-keys file by name, the problems), from the upstream files there: each
    chart from the first of `directory` and `more` that holds its values.yaml."""
    listed = {e["path"]: e for e in entries()}
    texts, problems = {}, []
    for chart, version in pinned_charts():
        roots = (directory, *more)
        root = next(
            (r for r in roots if (chart_values.chart_path(r, chart, version) / "values.yaml").is_file()), directory
        )
        found = chart_values.defaults_in(root, chart, version)
        if isinstance(found, str):
            problems.append(f"the default values of chart {chart} {version} {found}")
            continue
        unlisted = [f for f in found.files if f not in listed]
        changed = [
            f
            for f in found.files
            if f in listed and hashlib.sha256((root / f).read_bytes()).hexdigest() != listed[f]["sha256"]
        ]
        problems += [f"{f}: not in {MANIFEST.name}" for f in unlisted]
        problems += [f"{f}: not the pinned file (sha256 differs)" for f in changed]
        if unlisted or changed:
            continue
        sources = [{"path": f, "url": listed[f]["url"], "sha256": listed[f]["sha256"]} for f in found.files]
        document = chart_values.keys_document(chart, version, found, sources)
        texts[chart_values.keys_name(chart, version)] = json.dumps(document, indent=1) + "\n"
    return texts, problems


def write_chart_keys(texts: dict[str, str], target: Path = CHART_KEYS) -> None:
    """The chart-keys directory holds exactly `texts` (a file of a chart no longer installed is removed)."""
    target.mkdir(parents=True, exist_ok=True)
    for stale in sorted(set(p.name for p in target.glob("*.json")) - set(texts)):
        (target / stale).unlink()
    for name, text in texts.items():
        if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text:
            staging = target / f".{name}.partial"
            staging.write_text(text, encoding="utf-8")
            os.replace(staging, target / name)


def derived_kube_schemas(directory: Path) -> tuple[dict[str, str], list[str]]:
    """(the text of each gpufleet/data/kube-schemas file by name, the problems), from the pinned CRDs there and the
    built-in definitions kubernetes-validate ships (tools/kube_schemas.py)."""
    listed = {e["path"]: e for e in entries()}
    problems = [
        f"{path}: not the pinned file (sha256 differs)"
        for path in kube_schemas.CRD_VERSIONS
        if not (directory / path).is_file()
        or hashlib.sha256((directory / path).read_bytes()).hexdigest() != listed[path]["sha256"]
    ]
    return ({} if problems else kube_schemas.documents(directory, listed)), problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=None, help=f"the cache (default: {default_dir()})")
    parser.add_argument("--mirror", metavar="BASE", help="fetch https://HOST/PATH from BASE/HOST/PATH")
    parser.add_argument("--chart-keys", action="store_true", help=f"then derive {CHART_KEYS} from the cache")
    parser.add_argument("--kube-schemas", action="store_true", help=f"then derive {kube_schemas.TARGET} from the cache")
    args = parser.parse_args(argv)
    directory = (args.dir or default_dir()).expanduser()
    present, problems = fetch(directory, mirror=args.mirror)
    if args.chart_keys and not problems:
        texts, problems = chart_keys(directory)
        if not problems:
            write_chart_keys(texts)
            print(f"{len(texts)} chart key file(s) in {CHART_KEYS}")
    if args.kube_schemas and not problems:
        texts, problems = derived_kube_schemas(directory)
        if not problems:
            write_chart_keys(texts, kube_schemas.TARGET)
            print(f"{len(texts)} schema file(s) in {kube_schemas.TARGET}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"{present} upstream file(s) in {directory}; run the tests with GPUFLEET_UPSTREAM_DIR={directory}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
