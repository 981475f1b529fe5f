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

MANIFEST = Path(__file__).resolve().with_name("upstream_files.json")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=None, help=f"the cache (default: {default_dir()})")
    parser.add_argument("--mirror", metavar="BASE", help="fetch https://HOST/PATH from BASE/HOST/PATH")
    args = parser.parse_args(argv)
    directory = (args.dir or default_dir()).expanduser()
    present, problems = fetch(directory, mirror=args.mirror)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"{present} upstream file(s) in {directory}; run the tests with GPUFLEET_UPSTREAM_DIR={directory}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
