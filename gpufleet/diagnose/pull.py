"""A node's image pulls: size, time and rate of each, whether the SOCI snapshotter pulled in parallel, and that rate
against the disk the store is on (docs/cold-start.md, "Reading a node's pulls").

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/diagnose/pull.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpufleet.diagnose.findings import LogFinding
from gpufleet.facts import image_pull

MAX_LINE = 16_384
MIB = 1024 * 1024
# A pull at under a tenth of the disk's throughput is not limited by the disk.
FAR_BELOW_FRACTION = 0.10

# `\\?"`: a quote as the event writes it, or as klog and logrus write it inside their own quoted message.
_Q = r'\\?"'
_REF = r'([^"\\\s]{1,1024})'
_DURATION = r"([0-9][0-9a-zµ.]{0,40})"
# kubelet's Pulled event: kubernetes pkg/kubelet/images/image_manager.go EnsureImageExists.
_KUBELET = re.compile(
    r"Successfully pulled image " + _Q + _REF + _Q + r" in " + _DURATION
    + r"(?: \(" + _DURATION + r" including waiting\))?(\. Image size: )?"
)  # fmt: skip
_SIZE = re.compile(r"([0-9]{1,20}) bytes\.")
_PRESENT = re.compile(r"Container image " + _Q + _REF + _Q + r" already present on machine")
# containerd internal/cri/server/images/image_pull.go CRIImageService.PullImage (2.x).
_CONTAINERD = re.compile(
    r"Pulled image " + _Q + _REF + _Q + r" with image id " + _Q + r"[^\"\\]{0,200}" + _Q + r", repo tag " + _Q
    + r"[^\"\\]{0,1100}" + _Q + r", repo digest " + _Q + r"[^\"\\]{0,1200}" + _Q + r", size " + _Q
    + r"([^\"\\\s]{0,40})" + _Q + r" in " + _DURATION
)  # fmt: skip
_GO_UNIT = re.compile(r"([0-9]{1,20}(?:\.[0-9]{0,20})?)(h|ms|us|µs|ns|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}

# awslabs/soci-snapshotter snapshot/snapshot.go snapshotter.Prepare; the fallback line from v0.14.0.
SOCI_PARALLEL = "preparing snapshot with parallel pull/unpack"
SOCI_FALLBACK_PARALLEL = "no SOCI index found; falling back to parallel pull/unpack"
SOCI_LOCAL = "preparing snapshot as local snapshot"
SOCI_ENABLED = "Parallel image pull enabled"


def go_duration(text: str) -> float | None:
    """Seconds of a Go time.Duration as String() writes it ("1m52.33s", "850ms", "0s"); None if it is not one."""
    total, at = 0.0, 0
    for match in _GO_UNIT.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        at = match.end()
    return total if at == len(text) and at > 0 else None


@dataclass(frozen=True, slots=True)
class PulledImage:
    image: str
    source: str  # FILE:LINE (or FILE: items[N] of a JSON event list)
    seconds: float
    duration: str  # as written
    waiting: str | None  # "(... including waiting)", absent before the kubelet wrote it
    size: int | None  # bytes; None where the writer gives none


@dataclass(slots=True)
class Soci:
    parallel_layers: int = 0
    local_layers: int = 0
    settings: dict[str, Any] | None = None


@dataclass(slots=True)
class NodePulls:
    pulls: list[PulledImage] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    containerd: dict[str, PulledImage] = field(default_factory=dict)  # image -> its last CRI pull
    soci: Soci = field(default_factory=Soci)
    malformed: list[LogFinding] = field(default_factory=list)
    seen: set[tuple[str, str, str | None, int | None]] = field(default_factory=set)


def _malformed(where: str, image: str, what: str) -> LogFinding:
    return LogFinding(
        "warning",
        where,
        image,
        what,
        "pass the events and journal lines as kubectl and journalctl print them (an edited or cut line is not read)",
        "input.malformed-pull-event",
    )


def _kubelet(out: NodePulls, where: str, text: str, match: re.Match[str]) -> None:
    image, duration, waiting, has_size = match.groups()
    seconds = go_duration(duration)
    if seconds is None:
        shown = duration.rstrip(".")
        out.malformed.append(
            _malformed(where, image, f'malformed pull time "{shown}" in a Pulled event (kubelet writes a Go duration)')
        )
        return
    size: int | None = None
    if has_size:
        sized = _SIZE.match(text, match.end())
        if sized is None:
            token = text[match.end() :].split(" ", 1)[0][:40]
            out.malformed.append(
                _malformed(
                    where,
                    image,
                    f'malformed image size "{token}" in a Pulled event (kubelet writes "Image size: N bytes.")',
                )
            )
            return
        size = int(sized.group(1))
    key = (image, duration, waiting, size)
    if key not in out.seen:
        out.seen.add(key)
        out.pulls.append(PulledImage(image, where, seconds, duration, waiting, size))


def _containerd(out: NodePulls, where: str, match: re.Match[str]) -> None:
    image, size_text, duration = match.groups()
    seconds = go_duration(duration)
    if seconds is None:
        out.malformed.append(
            _malformed(where, image, f'malformed pull time "{duration}" in containerd\'s Pulled image line')
        )
        return
    if not size_text.isascii() or not size_text.isdigit():
        out.malformed.append(
            _malformed(where, image, f'malformed image size "{size_text}" in containerd\'s Pulled image line')
        )
        return
    out.containerd[image] = PulledImage(image, where, seconds, duration, None, int(size_text))


def _soci(out: NodePulls, line: str) -> None:
    start = line.find('{"')
    if start < 0:
        return
    try:
        entry = json.loads(line[start:])
    except (ValueError, RecursionError):  # json's decoder recurses once per nesting level
        return
    if not isinstance(entry, dict):
        return
    msg = entry.get("msg")
    if msg in (SOCI_PARALLEL, SOCI_FALLBACK_PARALLEL):
        out.soci.parallel_layers += 1
    elif msg == SOCI_LOCAL:
        out.soci.local_layers += 1
    elif msg == SOCI_ENABLED:
        out.soci.settings = entry


_WRAPPED = re.compile(r'Successfully pulled image "[^"\\\s]{1,1024}"\s*$')


def _read_text(out: NodePulls, source: str, text: str) -> None:
    lines = text.splitlines()
    for index, raw in enumerate(lines):
        line = raw[:MAX_LINE]
        where = f"{source}:{index + 1}"
        if index + 1 < len(lines) and _WRAPPED.search(line) and lines[index + 1].lstrip().startswith("in "):
            # A narrow terminal (or a README) wraps the event before " in": read the two lines as kubectl wrote one.
            line = line.rstrip() + " " + lines[index + 1].strip()[:MAX_LINE]
        if "ulled image" in line:
            kubelet = _KUBELET.search(line)
            if kubelet:
                _kubelet(out, where, line, kubelet)
                continue
            crio = _CONTAINERD.search(line)
            if crio:
                _containerd(out, where, crio)
                continue
        if "already present" in line:
            present = _PRESENT.search(line)
            if present:
                out.present.add(present.group(1))
                continue
        if '"msg":' in line:
            _soci(out, line)


def _events(text: str) -> list[Any] | None:
    """The items of `kubectl get events -o json` (a List or one Event), or None when the text is not that JSON."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(text)
    except RecursionError:
        return []  # nested deeper than the decoder recurses: no kubectl output is
    except ValueError:
        return None  # a soci-snapshotter log of JSON lines
    if not isinstance(doc, dict):
        return None
    items = doc.get("items")
    if isinstance(items, list):
        return items
    return [doc] if doc.get("kind") == "Event" else None


def _read_events(out: NodePulls, source: str, items: list[Any]) -> None:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        message = item.get("message", item.get("note"))
        if not isinstance(message, str):
            continue
        message = message[:MAX_LINE]
        where = f"{source}: items[{index}]"
        kubelet = _KUBELET.search(message)
        if kubelet:
            _kubelet(out, where, message, kubelet)
            continue
        present = _PRESENT.search(message)
        if present:
            out.present.add(present.group(1))


def parse(texts: Mapping[str, str]) -> NodePulls:
    out = NodePulls()
    for source, text in texts.items():
        items = _events(text)
        if items is None:
            _read_text(out, source, text)
        else:
            _read_events(out, source, items)
    return out


def _pulls(node: NodePulls) -> Iterator[PulledImage]:
    """kubelet's events, each with containerd's size where the kubelet gave none; then containerd's pulls of images
    no event names (a journal without the kubelet's lines)."""
    named = set()
    for pull in node.pulls:
        named.add(pull.image)
        cri = node.containerd.get(pull.image)
        if pull.size is None and cri is not None:
            yield PulledImage(pull.image, pull.source, pull.seconds, pull.duration, pull.waiting, cri.size)
        else:
            yield pull
    for image, pull in node.containerd.items():
        if image not in named:
            yield pull


def _mode(soci: Soci) -> tuple[bool | None, str]:
    if soci.parallel_layers or soci.settings is not None:
        how = "parallel (soci-snapshotter parallel pull/unpack"
        if soci.parallel_layers:
            how += f": {soci.parallel_layers} layers"
        settings = soci.settings or {}
        tuned = [
            f"{settings[key]} {label}"
            for key, label in (
                ("max_concurrent_downloads_per_image", "downloads"),
                ("max_concurrent_unpacks_per_image", "unpacks"),
            )
            if isinstance(settings.get(key), int)
        ]
        if tuned:
            how += (": " if not soci.parallel_layers else ", ") + " and ".join(tuned) + " per image"
        chunk = settings.get("concurrent_download_chunk_size")
        if isinstance(chunk, int) and chunk > 0:
            how += f", {chunk // MIB} MiB chunks" if chunk % MIB == 0 else f", {chunk}-byte chunks"
        return True, how + ")"
    if soci.local_layers:
        return False, f"not parallel (soci-snapshotter prepared {soci.local_layers} layers as local snapshots)"
    return None, "parallel or not unknown (no soci-snapshotter lines)"


def _gib(size: int) -> str:
    return f"{size / (1024 * MIB):.2f} GiB ({size} bytes)"


PARALLEL_HINT = (
    "pull in parallel: nodeGroups[].imagePull.mode: Parallel (the default where the AMI release has it) on a volume of"
    f" at least {image_pull.PARALLEL_MIN_MIBPS} MiB/s; the blueprint pulled the same image in 1m52s sequentially and"
    " 60 s (AL2023) or 45 s (Bottlerocket) in parallel on 1,000 MiB/s (docs/cold-start.md)"
)
LIMITED_ELSEWHERE_HINT = (
    "the disk is not what limits this pull: check the snapshotter's concurrency (its `Parallel image pull enabled`"
    " line; Bottlerocket's own defaults are 3 downloads and 1 unpack per image, gpufleet renders nodeadm's 20 and 12"
    " with 16 MiB chunks, nodeGroups[].imagePull), the registry (ECR in the node's region serves ranged GETs) and the"
    " instance's network bandwidth"
)
UNKNOWN_MODE_HINT = (
    "pass the soci-snapshotter's journal too (journalctl -u soci-snapshotter) to tell whether it pulled in parallel;"
    " if it did not, " + PARALLEL_HINT.removeprefix("pull in parallel: ")
)
SLOW_DISK_HINT = (
    f"raise nodeGroups[].diskThroughputMiBps to at least {image_pull.PARALLEL_MIN_MIBPS}, put the store on the"
    " instance-store array (localStorage: RAID0, AL2023 v20251217 on), or pull sequentially (imagePull.mode: Default)"
)


def _image(pull: PulledImage, how: str, disk_mibps: int | None) -> LogFinding:
    # "including waiting" adds the time the pull queued behind others (serializeImagePulls, maxParallelImagePulls).
    waited = pull.waiting is not None and pull.waiting != pull.duration
    timing = pull.duration + (f" ({pull.waiting} including waiting behind other pulls)" if waited else "")
    if pull.size is None:
        message = f"pulled in {timing}; size not given (an older kubelet writes none), so no rate; {how}"
    elif pull.seconds <= 0:
        message = f"pulled {_gib(pull.size)} in {timing}, too short for a rate; {how}"
    else:
        rate = pull.size / MIB / pull.seconds
        # GB/s (10^9 bytes) as workloads.imagePullGBps takes a measured rate.
        gbps = pull.size / 1e9 / pull.seconds
        message = f"pulled {_gib(pull.size)} in {timing}: {rate:.1f} MiB/s ({gbps:.3f} GB/s), {how}"
        if disk_mibps is not None:
            message += f"; {rate / disk_mibps:.0%} of the disk's {disk_mibps} MiB/s"
    return LogFinding("info", pull.source, pull.image, message, "", "pull.image")


def _below(pull: PulledImage, parallel: bool | None, disk_mibps: int) -> LogFinding | None:
    if pull.size is None or pull.seconds <= 0:
        return None
    rate = pull.size / MIB / pull.seconds
    if rate >= FAR_BELOW_FRACTION * disk_mibps:
        return None
    if parallel:
        what, hint = "pulled in parallel", LIMITED_ELSEWHERE_HINT
    elif parallel is False:
        what, hint = "pulled one layer after another", PARALLEL_HINT
    else:
        what, hint = "pulled", UNKNOWN_MODE_HINT
    if parallel is False and disk_mibps < image_pull.PARALLEL_MIN_MIBPS:
        hint = (
            f"raise nodeGroups[].diskThroughputMiBps to at least {image_pull.PARALLEL_MIN_MIBPS}, then {PARALLEL_HINT}"
        )
    message = (
        f"{what} at {rate:.1f} MiB/s, {rate / disk_mibps:.0%} of the disk's {disk_mibps} MiB/s: far below it"
        f" (under {FAR_BELOW_FRACTION:.0%})"
    )
    return LogFinding("warning", pull.source, pull.image, message, hint, "pull.below-disk")


def check(texts: Mapping[str, str], disk_mibps: int | None) -> list[LogFinding]:
    """One node's pull inputs (file name -> text) and the throughput of the disk its store is on, if known."""
    if not texts:
        return []
    node = parse(texts)
    pulls = list(_pulls(node))
    sources = ", ".join(texts)
    findings = list(node.malformed)
    if not pulls:
        present = f" ({len(node.present)} images already present on the node, not pulled)" if node.present else ""
        findings.append(
            LogFinding(
                "warning",
                sources,
                "input",
                'no pull events found: no kubelet "Successfully pulled image" event and no containerd'
                f' "Pulled image" line{present}',
                "pass kubectl describe pod POD (its Events), kubectl get events -o json, or the node's journal"
                " (journalctl -u kubelet -u containerd -u soci-snapshotter) from a pod that pulled its images",
                "input.no-pull-events",
            )
        )
    parallel, how = _mode(node.soci)
    for pull in pulls:
        findings.append(_image(pull, how, disk_mibps))
        below = _below(pull, parallel, disk_mibps) if disk_mibps is not None else None
        if below is not None:
            findings.append(below)
    if parallel and disk_mibps is not None and disk_mibps < image_pull.PARALLEL_MIN_MIBPS:
        findings.append(
            LogFinding(
                "warning",
                sources,
                "node",
                f"soci-snapshotter's parallel pull/unpack runs on a {disk_mibps} MiB/s disk: below"
                f" {image_pull.PARALLEL_MIN_MIBPS} MiB/s it pulls slower than containerd's own pull (nodeadm"
                " doc/examples.md; aws-samples/karpenter-blueprints soci-snapshotter)",
                SLOW_DISK_HINT,
                "pull.soci-slow-disk",
            )
        )
    return findings
