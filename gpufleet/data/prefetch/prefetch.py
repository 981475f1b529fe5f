"""Keep a node's Mountpoint cache holding a team's serving weights (gpufleet teams[].prefetch).

Runs in the DaemonSet prefetch-<group> of the team's namespace, one pod per node of the group, with the team's claim
s3-<group> mounted read-only at the root given as the first argument. It reads every file under each path that
follows (a file, or a directory read recursively) once, so Mountpoint fetches it from S3 and keeps it in its local
cache on the node's NVMe, then looks again every interval and reads only files that are new or changed (size or
modification time), so a new model version is cached before a replica asks for it. The pod's mount is what keeps the
node's Mountpoint Pod, and so its cache, alive between serving pods: the CSI driver ends a Mountpoint Pod when its
last workload leaves (awslabs/mountpoint-s3-csi-driver v2.7.0 cmd/aws-s3-csi-controller/csicontroller/reconciler.go).

Pages are dropped from the kernel's page cache as they are read (posix_fadvise DONTNEED): the copy that must stay is
Mountpoint's on disk, not one in this pod's memory. Stdlib only; a missing path is reported and tried again.
"""

from __future__ import annotations

import os
import sys
import time

CHUNK_BYTES = 8 * 1024 * 1024
GB = 1e9


def files(root: str, path: str) -> list[str]:
    top = os.path.join(root, path)
    if os.path.isfile(top):
        return [top]
    found = []
    for directory, subdirectories, names in os.walk(top):
        subdirectories.sort()
        found += [os.path.join(directory, name) for name in sorted(names)]
    return found


def read(path: str) -> int:
    total = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while chunk := os.read(fd, CHUNK_BYTES):
            total += len(chunk)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return total


def sweep(root: str, paths: list[str], seen: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """Read what is new or changed since `seen`; (files read, bytes read)."""
    count = size = 0
    for path in paths:
        if not os.path.exists(os.path.join(root, path)):
            print(f"prefetch: {path} not found under the claim; trying again next sweep", flush=True)
            continue
        for name in files(root, path):
            try:
                st = os.stat(name)
                if seen.get(name) == (st.st_size, st.st_mtime_ns):
                    continue
                size += read(name)
            except OSError as error:
                print(f"prefetch: {name}: {error}; trying again next sweep", flush=True)
                continue
            seen[name] = (st.st_size, st.st_mtime_ns)
            count += 1
    return count, size


def main(argv: list[str]) -> None:
    interval = int(os.environ.get("PREFETCH_INTERVAL_SECONDS", "600"))
    root, paths = argv[0], argv[1:]
    seen: dict[str, tuple[int, int]] = {}
    first = True
    while True:
        start = time.monotonic()
        count, size = sweep(root, paths, seen)
        if count:
            print(report(count, size, time.monotonic() - start, len(seen), first), flush=True)
        first = first and not count
        time.sleep(interval)


def report(count: int, size: int, took: float, cached: int, first: bool) -> str:
    """The sweep's line. A pod's first sweep is a measurement of the node (workloads.weightLoadGBps): from S3 where
    the node's cache was empty (a new node), from the cache where a serving pod kept it (this pod restarted)."""
    line = (
        f"prefetch: read {count} file(s), {size / GB:.1f} GB, in {took:.0f} s ({size / GB / max(took, 1e-9):.2f} GB/s);"
        f" {cached} file(s) cached"
    )
    if first:
        line += "; first sweep of this pod: the node's s3 rate if its cache was empty, its nvme rate if it was warm"
    return line


if __name__ == "__main__":
    main(sys.argv[1:])
