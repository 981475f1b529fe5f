"""NCCL_DEBUG=INFO logs: a per-process summary, and the checks over the logs of one job.

Format strings: NVIDIA/nccl `src/` v2.18.1-1 to v2.30.7-1 and aws/aws-ofi-nccl `src/` v1.7 to v1.18 (the file
that prints each line is named next to its pattern).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from gpufleet.diagnose.findings import Finding, Severity

# Every pattern below is anchored or bounded (a run-away line costs O(length), not O(length^2)), and lines are cut at
# MAX_LINE: NCCL's longest lines (a ring order of 1,024 ranks) are about 5 KB.
MAX_LINE = 16_384
# debug.cc: "%s:%d:%d [%d] NCCL INFO " (host, pid, tid, cudaDev); a WARN puts "file:line " (2.30: "file:line (fn) ")
# before "NCCL WARN". MPI "[1,0]<stdout>:", torchrun "[rank3]:", kubectl --prefix/--timestamps and
# NCCL_DEBUG_TIMESTAMP_FORMAT all come before the host; interleaved writers can put two headers on one line. So the
# parser finds each "NCCL INFO|WARN" marker (a literal: a fast scan) and reads the header in a bounded window before
# it, ending at the marker; the host must start after a character that cannot be part of it.
_MARKER = re.compile(r"NCCL (INFO|WARN)\b ?")
_WINDOW = 800  # longer than any header: host (253), pid and tid, device, "file:line (function) "
_HEAD = re.compile(
    r"(?<![\w.-])(?P<host>[A-Za-z0-9][\w.-]{0,252}):(?P<pid>\d{1,10}):\d{1,10} \[\d{1,5}\] "
    r"(?:[\w./+-]{1,255}:\d{1,7} (?:\([^()]{0,255}\) )?)?$"
)
# Without "host:pid:tid" (NCCL_DEBUG_FILE tails, some launchers' stdout, old bug reports: "[1] NCCL INFO ...",
# "transport/nvls.cc:165 NCCL WARN ...") a marker's lines go to the process with host "".
# aws-ofi-nccl before 1.2 logged through its own macros: "INFO: Function: ofi_init Line: 1076: NET/OFI ...".
_OFI_OLD = re.compile(r"\b(?P<level>INFO|WARN): Function: \w{1,100} Line: \d{1,7}: ")
# ISO-8601 stamps of log shippers. A CloudWatch export glues the stamp to the host ("...208-07:00ip-10-36-29-253:79"),
# which would otherwise read as a host named "00ip-10-36-29-253".
_STAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?")
# libfabric's own log: "libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> fi_getinfo: ..."
_LIBFABRIC = re.compile(r"libfabric:\d{1,10}:\d{1,20}::[^\s<]{0,200}<warn> (.*)")
# Fatal error strings that NCCL and PyTorch print outside a WARN line (ncclGetErrorString, "NCCL error in: ...").
_FAILURE = re.compile(r"(?:Cuda|CUDA|NCCL) failure\b|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclRemoteError")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(\S*)")  # init.cc VERSION_STRING; <=2.22 printf()s it bare
# transport/{net,p2p,shm}.cc "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"; before 2.12
# (transport.cc) "Ring %02d : %d -> %d [receive] via NET/%s/%d" for network peers and "%d[%d] -> %d[%d]" inside.
_CHANNEL = re.compile(
    r"^(?:Channel|Ring) \d+(?:/\d+)? : (\d+)(?:\[\w+\])? -> (\d+)(?:\[\w+\])? (?:\[(send|receive)\] )?via (.+)$"
)
_VIA_NET = re.compile(r"^NET/([^/]+)/\d+(?:\(\d+\))?(\S*)")  # net name may hold a space: "AWS Libfabric"
_NETWORK = re.compile(r"^Using network (.+)$")  # init.cc "Using network %s"
_PLUGIN_LOADED = re.compile(r"^NET/Plugin ?: ?Loaded net plugin (.+?) \(v\d+\)")  # plugin/net/net_v*.cc
_PLUGIN_LIB = re.compile(r"(?<![\w.+-])([\w.+-]{1,200}\.so[\w.]{0,20}): (?:cannot open shared object file|undefined symbol)")
_BOOTSTRAP = re.compile(r"^Bootstrap ?: ?Using ?(?:\[\d+\])?([^:\s]+):")  # bootstrap.cc, "Bootstrap :" before 2.24
_SOCKET = re.compile(r"^NET/Socket ?: ?Using (.*)")  # net_socket.cc "NET/Socket : Using [0]eth0:10.0.0.5<0>"
_IFACE = re.compile(r"\[\d+\]([^:\s\[]+):")
_IB = re.compile(r"^NET/IB\w* ?: ?Using (.*?)(?:; OOB ([^:\s]+):.*)?$")  # net_ib "...[RO]; OOB %s:%s", HPC-X "IBext"
_IB_DEV = re.compile(r"\[\d+\]([^:\s\[]+):\d+[:\d]*/(\w+)")
# graph/paths.cc "GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d > %d)" (">=" before 2.12), transport/
# net_ib.cc "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)" (the suffix since 2.19).
_GDR = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for (?:HCA|GPU)(?:[^(]{0,100}\((distance \d+ >=? \d+|no module)\))?")
_ENV = re.compile(r"^([A-Z][A-Z0-9_]+) set (?:by environment )?to (.*)$")  # "%s set by environment to %s";
# net_ib prints "NCCL_IB_HCA set to %s", param.cc ends numbers with "."
_INIT = re.compile(r"comm \S+ rank (\d+) nranks (\d+) cudaDev \d+")  # init.cc "... - Init START|COMPLETE"
# init.cc (2.19+) "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
_SHAPE = re.compile(r"comm \S+ rank \d+ nRanks (\d+) nNodes (\d+) localRanks (\d+) ")
_PLATFORM = re.compile(r"^NET/OFI Running on (\S+) platform")  # aws-ofi-nccl platform-aws.cpp
_OFI_VERSION = re.compile(r"^NET/OFI (?:Initializing|Using) aws-ofi-nccl (\S+)")
_OFI_PROVIDER = re.compile(r"^NET/OFI Selected [Pp]rovider is ([^,\s]+),?(?: fabric is \S+)?(?: \(found (\d+) nics\))?")

MANAGEMENT_IFACES = frozenset({"eth0"})


@dataclass(slots=True)
class Process:
    """One NCCL process (host:pid) as its log lines describe it; host "" holds the lines without a host prefix."""

    host: str
    pid: int
    ranks: set[int] = field(default_factory=set)  # in the largest communicator (Init lines)
    nranks: int = 0
    channel_ranks: set[int] = field(default_factory=set)
    version: str | None = None
    network: str | None = None
    net_channels: Counter[str] = field(default_factory=Counter)
    gdr_channels: int = 0
    local_channels: int = 0
    plugin: str | None = None
    plugin_missing: bool = False
    plugin_error: str | None = None
    ofi_version: str | None = None
    ofi_provider: str | None = None
    ofi_nics: int = 0
    platform: str | None = None
    bootstrap_iface: str | None = None
    socket_ifaces: list[str] = field(default_factory=list)
    ib_devices: list[str] = field(default_factory=list)
    oob_iface: str | None = None
    gdr_enabled: bool = False
    gdr_disabled: bool = False
    gdr_reason: str | None = None  # "distance 7 > 4" or "no module"
    shape: tuple[int, int, int] | None = None  # (nRanks, nNodes, localRanks) of the largest communicator
    warnings: list[str] = field(default_factory=list)  # NCCL WARN messages, first seen first, without repeats
    env: dict[str, str] = field(default_factory=dict)

    @property
    def rank_list(self) -> list[int]:
        return sorted(self.ranks or self.channel_ranks)


@dataclass(slots=True)
class NcclLog:
    """processes by (host, pid); bare_versions: "NCCL version" lines without a header (rank 0, NCCL <= 2.22);
    failures: "Cuda failure"/"NCCL failure" lines and NCCL error codes outside WARN lines (the application's own
    report); libfabric: libfabric's own warnings."""

    processes: dict[tuple[str, int], Process] = field(default_factory=dict)
    bare_versions: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    libfabric: list[str] = field(default_factory=list)
    truncated: bool = False


_KEEP = 20  # evidence lines kept per kind: enough to quote, bounded for logs of millions of lines


def _note(items: list[str], msg: str) -> None:
    if len(items) < _KEEP and msg not in items:
        items.append(msg)


def parse_nccl(text: str) -> NcclLog:
    log = NcclLog()
    lines = text.splitlines()
    if text and not text.endswith(("\n", "\r")):
        lines, log.truncated = lines[:-1], True  # the last line was cut mid-write
    for raw in lines:
        line = raw[:MAX_LINE]
        headers = _headers(line)
        seen: set[tuple[tuple[str, int], str]] = set()
        for i, (key, level, _, end) in enumerate(headers):
            stop = headers[i + 1][2] if i + 1 < len(headers) else len(line)
            msg = " ".join(line[end:stop].split()).removesuffix(" |").removesuffix("|")
            if (key, msg) not in seen:  # a log shipper that repeats the line after " | "
                seen.add((key, msg))
                _read(_process(log, key), level, msg)
        if headers:
            continue
        if "Function: " in line and (old := _OFI_OLD.search(line)):
            _read(_process(log, ("", 0)), old.group("level"), " ".join(line[old.end():].split()))
        elif m := _VERSION.search(line):
            log.bare_versions.append(m.group(1) + m.group(2))
        elif "libfabric:" in line and (m := _LIBFABRIC.search(line)):
            _note(log.libfabric, " ".join(m.group(1).split()).removesuffix(" |"))
        elif ("failure" in line or "nccl" in line) and _FAILURE.search(line):
            _note(log.failures, " ".join(line.split()))
    return log


def _headers(line: str) -> list[tuple[tuple[str, int], str, int, int]]:
    """(process key, level, start of the header, end of the header) of each NCCL line header in a line."""
    out: list[tuple[tuple[str, int], str, int, int]] = []
    floor = 0
    for marker in _MARKER.finditer(line):
        lo = max(floor, marker.start() - _WINDOW)
        # Blank out shippers' timestamps (same length, so offsets hold): glued to the host they would become part of it.
        window = _STAMP.sub(lambda m: " " * len(m.group()), line[lo : marker.start()])
        head = _HEAD.search(window)
        key = (head.group("host"), int(head.group("pid"))) if head else ("", 0)
        out.append((key, marker.group(1), lo + head.start() if head else marker.start(), marker.end()))
        floor = marker.end()
    return out


def _process(log: NcclLog, key: tuple[str, int]) -> Process:
    return log.processes.get(key) or log.processes.setdefault(key, Process(key[0], key[1]))


def _read(p: Process, level: str, msg: str) -> None:
    if level == "WARN" and msg:
        _note(p.warnings, msg)
    if m := _CHANNEL.match(msg):
        p.channel_ranks.add(int(m.group(2) if m.group(3) == "receive" else m.group(1)))
        if net := _VIA_NET.match(m.group(4)):
            p.net_channels[net.group(1)] += 1
            p.gdr_channels += "/GDRDMA" in net.group(2)
        else:
            p.local_channels += 1
    elif m := _INIT.search(msg):
        rank, nranks = int(m.group(1)), int(m.group(2))
        if nranks > p.nranks:
            p.nranks, p.ranks = nranks, {rank}
        elif nranks == p.nranks:
            p.ranks.add(rank)
    elif m := _SHAPE.search(msg):
        shape = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if p.shape is None or shape[0] > p.shape[0]:
            p.shape = shape
    elif msg.startswith("NET/Plugin"):
        _read_plugin(p, msg)
    elif msg.startswith("NET/OFI"):
        if m := _OFI_VERSION.match(msg):
            p.ofi_version = m.group(1)
        elif m := _OFI_PROVIDER.match(msg):
            p.ofi_provider, p.ofi_nics = m.group(1), int(m.group(2) or 0)
        elif m := _PLATFORM.match(msg):
            p.platform = m.group(1)
        elif p.network is None and (level == "WARN" or "No eligible providers" in msg) and not p.plugin_error:
            p.plugin_error = msg  # aws-ofi-nccl failed during init: NCCL moves on to its internal transports
    elif m := _VERSION.match(msg):
        p.version = m.group(1) + m.group(2)
    elif m := _NETWORK.match(msg):
        p.network = m.group(1)
    elif m := _BOOTSTRAP.match(msg):
        p.bootstrap_iface = m.group(1)
    elif m := _SOCKET.match(msg):
        p.socket_ifaces = _IFACE.findall(m.group(1))
    elif m := _IB.match(msg):
        p.ib_devices = [dev for dev, _ in _IB_DEV.findall(m.group(1))]
        p.oob_iface = m.group(2)
    elif m := _GDR.search(msg):
        p.gdr_enabled |= m.group(1) == "Enabled"
        if m.group(1) == "Disabled":
            p.gdr_disabled, p.gdr_reason = True, p.gdr_reason or m.group(2)
    elif m := _ENV.match(msg):
        value = m.group(2)
        p.env[m.group(1)] = value[:-1] if re.fullmatch(r"-?\d+\.", value) else value
    elif msg.startswith("Failed to initialize NET plugin") and not p.plugin_error:
        if msg.split()[-1] not in ("IB", "Socket"):  # plugin/net.cc (2.28+) tries external, then IB, then Socket
            p.plugin_error = msg


def _read_plugin(p: Process, msg: str) -> None:
    """net.cc / plugin/plugin_open.cc: ENOENT for libnccl-net*.so itself is "not found"; anything else is an error."""
    if m := _PLUGIN_LOADED.match(msg):
        p.plugin = m.group(1)
    elif "Could not find" in msg or "No plugin found" in msg:
        p.plugin_missing = True
    elif lib := _PLUGIN_LIB.search(msg):
        if lib.group(1).startswith("libnccl-net") and "No such file" in msg:
            p.plugin_missing = True
        elif not p.plugin_error:
            p.plugin_error = msg
    elif m := re.search(r"returned (\d+)", msg):  # 2.19-2.23 summary line, dlerror() already consumed: "(null)"
        if m.group(1) == "2":
            p.plugin_missing = True
        elif not p.plugin_error:
            p.plugin_error = msg


# ---- checks -------------------------------------------------------------------------------------------------------

Row = tuple[str, Process, str | None]  # (source file, process, inter-node transport or None)

_SOCKET_FIX = (
    "put the job on the fast fabric: request vpc.amazonaws.com/efa in the pod (all EFA devices of the instance) and "
    "check the aws-ofi-nccl plugin (libnccl-net.so) is in the image and on LD_LIBRARY_PATH; on InfiniBand request the "
    "RDMA device resource and mount /dev/infiniband; set NCCL_NET=Libfabric (or NCCL_NET=IB) so a missing fast path "
    "fails at startup instead of falling back to TCP"
)


def _transport(p: Process, multi_host: bool) -> str | None:
    """The network of a process's inter-node channels; None when it only talks inside its node."""
    if p.net_channels:
        return "Socket" if "Socket" in p.net_channels else p.net_channels.most_common(1)[0][0]
    # Rings leave a node through a few GPUs only; the others, and logs cut before channel setup, still carry the
    # network NCCL chose for the communicator.
    return p.network if multi_host else None


def _ranks_text(ranks: list[int]) -> str:
    spans: list[tuple[int, int]] = []
    for r in sorted(set(ranks)):
        if spans and r == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], r)
        else:
            spans.append((r, r))
    text = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)
    return ("ranks " if len(set(ranks)) > 1 else "rank ") + text


def _who(members: list[Row], everyone: int) -> str:
    if everyone > 1 and len(members) == everyone:
        return "all ranks"
    by_host: dict[str, list[int]] = {}
    for _, p, _ in members:
        by_host.setdefault(p.host, []).extend(p.rank_list)
    return ", ".join(f"{host} ({_ranks_text(r)})" if r else host for host, r in by_host.items())


def _sources(members: list[Row]) -> str:
    return ", ".join(sorted({s for s, _, _ in members}))


def _count(members: list[Row]) -> int:
    return sum(max(1, len(p.rank_list)) for _, p, _ in members)


def _finding(severity: Severity, members: list[Row], everyone: int, what: str, fix: str, check: str) -> Finding:
    return Finding(severity, _sources(members), _who(members, everyone), what, fix, check)


def check_job(logs: Mapping[str, NcclLog]) -> list[Finding]:
    """The logs of one job (one file, or one per pod): what to change, unranked."""
    out = [
        Finding("warning", src, "log", "no NCCL_DEBUG=INFO lines found",
                "run the job with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,ENV,NET adds the GPUDirect lines) "
                "and pass its whole output", "input.no-nccl-lines")
        for src, log in logs.items() if not log.processes and not log.bare_versions
    ]
    procs = sorted(((s, p) for s, log in logs.items() for p in log.processes.values()),
                   key=lambda sp: (sp[1].rank_list[:1] or [1 << 30], sp[1].host, sp[1].pid))
    multi_host = len({p.host for _, p in procs}) > 1
    rows: list[Row] = [(s, p, _transport(p, multi_host)) for s, p in procs]
    found = _transports(rows) + _plugins(rows) + _gdr(rows) + _interfaces(rows, multi_host)
    return out + found + _versions(logs, rows, bool(found))


def _transports(rows: list[Row]) -> list[Finding]:
    counts = Counter(t for _, _, t in rows if t)
    order = sorted(counts, key=lambda t: (-counts[t], t == "Socket", t))
    if not order:
        return []
    major = order[0]
    out = []
    if major == "Socket":
        members = [r for r in rows if r[2] == "Socket"]
        ifaces = sorted({i for _, p, _ in members for i in p.socket_ifaces})
        over = f" over {', '.join(ifaces)}" if ifaces else ""
        what = f"inter-node channels use NET/Socket (TCP fallback){over}"
        out.append(_finding("critical", members, len(rows), what, _SOCKET_FIX, "nccl.socket-fallback"))
    majority = [r for r in rows if r[2] == major]
    for other in order[1:]:
        members = [r for r in rows if r[2] == other]
        fallback = " (TCP fallback)" if other == "Socket" else ""
        what = f"NET/{other}{fallback} selected while {_count(majority)} other ranks use NET/{major}"
        if major == "Socket":
            fix = "this is the healthy path: move the other ranks onto it (see the NET/Socket finding)"
        elif other == "Socket":
            res = "the RDMA device resource" if major.startswith("IB") else "vpc.amazonaws.com/efa"
            fix = (f"this host lost the fast path the others have: check its pod requested {res} like the others, "
                   f"that the node advertises it (kubectl describe node: allocatable {res}, the device plugin pod "
                   "on that node) and that it runs the same image; cordon the node if its devices are missing")
        else:
            fix = f"all ranks must use one network: set NCCL_NET={major} and run every worker from the same image"
        out.append(_finding("critical", members, len(rows), what, fix, "nccl.transport-mismatch"))
    return out


def _plugins(rows: list[Row]) -> list[Finding]:
    out: list[Finding] = []
    errors: dict[str, list[Row]] = {}
    for r in rows:
        if r[1].plugin_error:
            errors.setdefault(r[1].plugin_error, []).append(r)
    for msg, members in errors.items():
        lib = _PLUGIN_LIB.search(msg)
        if msg.startswith(("NET/OFI", "Failed to initialize")):
            fix = ("aws-ofi-nccl found no usable EFA device: request vpc.amazonaws.com/efa in the pod (the EFA device "
                   "plugin must run on the node) and run on an EFA-enabled instance and launch template")
        elif lib and "undefined symbol" in msg:
            fix = ("the plugin was built for another NCCL or libfabric: install the aws-ofi-nccl build that matches "
                   "the image's NCCL (the EFA installer's, or the one in NVIDIA's AWS containers)")
        else:
            dep = lib.group(1) if lib else "its dependencies"
            fix = (f"the plugin is in the image but cannot load: install {dep} (the EFA installer puts libfabric in "
                   "/opt/amazon/efa/lib) and add its directory to LD_LIBRARY_PATH")
        if msg.startswith(("NET/OFI", "Failed to initialize")):
            what = "the net plugin loaded but failed to initialize: " + re.sub(r"^NET/OFI ", "", msg)
        else:
            what = "the net plugin failed to load: " + re.sub(r"^NET/Plugin ?: ?", "", msg)
        out.append(_finding("critical", members, len(rows), what, fix, "nccl.plugin-failed"))
    missing = [r for r in rows
               if r[2] == "Socket" and r[1].plugin_missing and not r[1].plugin and not r[1].plugin_error]
    if missing:
        out.append(_finding(
            "critical", missing, len(rows),
            "no net plugin found (libnccl-net.so): NCCL fell back to its internal transports",
            "install aws-ofi-nccl in the image (the EFA installer and NVIDIA's AWS containers ship it) and make "
            "libnccl-net.so loadable: put its directory on LD_LIBRARY_PATH or set NCCL_NET_PLUGIN to its path",
            "nccl.plugin-failed"))
    return out


def _gdr(rows: list[Row]) -> list[Finding]:
    out = []
    for net in sorted({t for _, _, t in rows if t and t != "Socket"}):
        members = [r for r in rows if r[2] == net and (
            (r[1].net_channels and r[1].gdr_channels == 0)
            or (not r[1].net_channels and r[1].gdr_disabled and not r[1].gdr_enabled))]
        if not members:
            continue
        what = f"GPUDirect RDMA is off: NET/{net} channels lack /GDRDMA, so GPU buffers are staged through host memory"
        if net.startswith("IB"):
            fix = ("load the GPU peer-memory support (GPU Operator driver.rdma.enabled=true for nvidia-peermem, or "
                   "DMA-BUF with the open kernel driver) and leave NCCL_NET_GDR_LEVEL unset or at least PXB")
        else:
            fix = ("GPUDirect over EFA needs a GDR-capable instance (p4d, p5 and later), libfabric >= 1.18 with "
                   "aws-ofi-nccl >= 1.7 (EFA installer), and no NCCL_NET_GDR_LEVEL override")
        out.append(_finding("warning", members, len(rows), what, fix, "nccl.gdr-off"))
    return out


def _interfaces(rows: list[Row], multi_host: bool) -> list[Finding]:
    out = []
    mgmt: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        p = r[1]
        control = {i for i in (p.bootstrap_iface, p.oob_iface) if i}
        chosen = control | (set(p.socket_ifaces) if r[2] == "Socket" else set())
        others = tuple(sorted((control | set(p.socket_ifaces)) - MANAGEMENT_IFACES - {"lo"}))
        if chosen & MANAGEMENT_IFACES and others:
            mgmt.setdefault(others, []).append(r)
    for others, members in mgmt.items():
        out.append(_finding(
            "warning", members, len(rows),
            f"NCCL bootstrap/socket traffic uses eth0 (the pod's management interface) although {', '.join(others)} "
            f"{'is' if len(others) == 1 else 'are'} available",
            f"set NCCL_SOCKET_IFNAME={others[0]} "
            "(or exclude the management interface: NCCL_SOCKET_IFNAME=^lo,docker,eth0)",
            "nccl.management-interface"))
    flagged = {id(r[1]) for ms in mgmt.values() for r in ms}
    ib = [r for r in rows if r[2] and r[2].startswith("IB") and r[1].ib_devices and "NCCL_IB_HCA" not in r[1].env]
    if ib:
        devs = sorted({d for _, p, _ in ib for d in p.ib_devices})
        out.append(_finding(
            "warning", ib, len(rows), f"NCCL_IB_HCA is not set: NCCL uses every HCA it finds ({', '.join(devs)})",
            f"pin the compute HCAs, e.g. NCCL_IB_HCA={','.join(devs)} (a leading '=' matches names exactly, '^' "
            "excludes), so a storage or management port is never used", "nccl.ib-hca-unset"))
    internode = multi_host or any(r[1].net_channels for r in rows)
    unset: dict[str, list[Row]] = {}
    for r in rows:
        p = r[1]
        iface = p.bootstrap_iface or p.oob_iface or (p.socket_ifaces[0] if p.socket_ifaces else None)
        if internode and iface and "NCCL_SOCKET_IFNAME" not in p.env and id(p) not in flagged:
            unset.setdefault(iface, []).append(r)
    for iface, members in unset.items():
        out.append(_finding(
            "warning", members, len(rows),
            f"NCCL_SOCKET_IFNAME is not set: NCCL picked {iface} by its own interface order",
            "pin it in the pod spec (NCCL_SOCKET_IFNAME=eth0 on EKS with the VPC CNI, or =^lo,docker,veth to exclude) "
            "so bootstrap never lands on a docker, veth or loopback interface", "nccl.socket-ifname-unset"))
    return out


def _versions(logs: Mapping[str, NcclLog], rows: list[Row], other_findings: bool) -> list[Finding]:
    where: dict[str, set[str]] = {}
    full: dict[str, str] = {}
    for _, p, _ in rows:
        if p.version:
            base = p.version.split("+")[0]
            where.setdefault(base, set()).add(p.host)
            full.setdefault(base, p.version)
    for src, log in logs.items():
        for v in log.bare_versions:
            where.setdefault(v.split("+")[0], set()).add(src)
            full.setdefault(v.split("+")[0], v)
    sources = ", ".join(sorted({s for s, _, _ in rows} | {s for s, log in logs.items() if log.bare_versions}))
    if len(where) > 1:
        ordered = sorted(where.items(), key=lambda vh: tuple(int(x) for x in vh[0].split(".")))
        text = "; ".join(f"{v} on {', '.join(sorted(hosts))}" for v, hosts in ordered)
        return [Finding("warning", sources, "job", f"ranks run different NCCL versions: {text}",
                        "build every worker from one image so all ranks load the same NCCL (check LD_LIBRARY_PATH "
                        "and the pip nvidia-nccl package against the system NCCL)", "nccl.mixed-versions")]
    if where and other_findings:
        ofi = sorted({p.ofi_version for _, p, _ in rows if p.ofi_version})
        extra = f", aws-ofi-nccl {', '.join(ofi)}" if ofi else ""
        return [Finding("info", sources, "job", f"NCCL {next(iter(full.values()))}{extra}", "", "nccl.version")]
    return []
