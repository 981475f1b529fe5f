"""NCCL_DEBUG=INFO logs: a per-process summary of what each NCCL process printed (the checks: nccl_checks.py).

Why, with sources: docs/diagnose.md, "Design notes", gpufleet/diagnose/nccl.py.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# Every pattern below is anchored or bounded (a run-away line costs O(length), not O(length^2)), and lines are cut at
# MAX_LINE: NCCL's longest lines (a ring order of 1,024 ranks) are about 5 KB.
MAX_LINE = 16_384
# debug.cc: "%s:%d:%d [%d] NCCL INFO " (host, pid, tid, cudaDev); a WARN puts "file:line " (2.30: "file:line (fn) ")
# before "NCCL WARN".
_MARKER = re.compile(r"NCCL (INFO|WARN)\b ?")
_WINDOW = 800  # longer than any header: host (253), pid and tid, device, "file:line (function) "
_HEAD = re.compile(
    r"(?<![\w.-])(?P<host>[A-Za-z0-9][\w.-]{0,252}):(?P<pid>\d{1,10}):\d{1,10} \[\d{1,5}\] "
    r"(?:(?P<loc>[\w./+-]{1,255}:\d{1,7}) (?:\([^()]{0,255}\) )?)?$"
)
# The "file:line" a WARN names when the host prefix is missing ("transport/nvls.cc:165 NCCL WARN ...").
_LOC = re.compile(r"(?<![\w./+-])(?P<loc>[\w./+-]{1,255}:\d{1,7}) (?:\([^()]{0,255}\) )?$")
# Lines without "host:pid:tid" (NCCL_DEBUG_FILE tails, some launchers' stdout, bug reports: "[1] NCCL INFO ...",
# "transport/nvls.cc:165 NCCL WARN ...") go to the process with host "", and so do NCCL messages quoted without any
# header at all (trimmed into a bug report or a pull request description), which this recognises by their start:
_BARE_MESSAGE = re.compile(
    r"^[\s>|]{0,20}(?=NET/(?:OFI|IB|Socket|Plugin)|Using network |Bootstrap ?: |Initialized NET plugin |"
    r"Failed to initialize NET plugin |GPU Direct RDMA |NCCL_[A-Z_]{1,60} set )"
)
# A launcher's per-rank prefix (torchrun "[rank3]:", MPI "[1,0]<stdout>:") inside a line is where a second rank's
# write begins: two ranks' output interleaved on one line ("NCCL version 2.26.2[rank2]: ...") are read as the two
# lines those ranks wrote.
_RANK_PREFIX = re.compile(r"(?<=.)(?=\[rank\d{1,7}\]:|\[\d{1,7},\d{1,7}\]<std(?:out|err)>:)")
# Ray's log deduplication appends " [repeated 15x across cluster]" to a line several workers printed.
_RAY_REPEAT = re.compile(r" \[repeated \d{1,9}x across cluster\]$")
# aws-ofi-nccl before 1.2 logged through its own macros: "INFO: Function: ofi_init Line: 1076: NET/OFI ...".
_OFI_OLD = re.compile(r"\b(?P<level>INFO|WARN): Function: \w{1,100} Line: \d{1,7}: ")
# ISO-8601 stamps of log shippers. A CloudWatch export glues the stamp to the host ("...208-07:00ip-10-36-29-253:79"),
# which would otherwise read as a host named "00ip-10-36-29-253".
_STAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?")
# libfabric's own log: "libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> fi_getinfo: ..."
_LIBFABRIC = re.compile(r"libfabric:\d{1,10}:\d{1,20}::[^\s<]{0,200}<warn> (.*)")
# Fatal error strings that NCCL and PyTorch print outside a WARN line (ncclGetErrorString, "NCCL error in: ...").
_FAILURE = re.compile(
    r"(?:Cuda|CUDA|NCCL) failure\b|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclRemoteError"
)
_EVIDENCE = re.compile(r"NCCL WARN|WARN: Function|<warn>|" + _FAILURE.pattern)  # errors, whole or cut
_VERSION = re.compile(r"NCCL version ([0-9]+\.[0-9]+\.[0-9]+)(\S*)")  # init.cc VERSION_STRING; <=2.22 printf()s it bare
# transport/{net,p2p,shm}.cc "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"; before 2.12
# (transport.cc) "Ring %02d : %d -> %d [receive] via NET/%s/%d" for network peers and "%d[%d] -> %d[%d]" inside.
_CHANNEL = re.compile(
    r"^(?:Channel|Ring) \d+(?:/\d+)? : (\d+)(?:\[\w+\])? -> (\d+)(?:\[\w+\])? (?:\[(send|receive)\] )?via (.+)$"
)
_VIA_NET = re.compile(r"^NET/([^/]+)/\d+(?:\(\d+\))?(\S*)")  # net name may hold a space: "AWS Libfabric"
_NETWORK = re.compile(r"^Using network (.+)$")  # init.cc "Using network %s"
_PLUGIN_LOADED = re.compile(r"^NET/Plugin ?: ?Loaded net plugin (.+?) \(v\d+\)")  # plugin/net/net_v*.cc
PLUGIN_LIB = re.compile(
    r"(?<![\w.+-])([\w.+-]{1,200}\.so[\w.]{0,20}): (?:cannot open shared object file|undefined symbol)"
)
_BOOTSTRAP = re.compile(r"^Bootstrap ?: ?Using ?(?:\[\d+\])?([^:\s]+):")  # bootstrap.cc, "Bootstrap :" before 2.24
_SOCKET = re.compile(r"^NET/Socket ?: ?Using (.*)")  # net_socket.cc "NET/Socket : Using [0]eth0:10.0.0.5<0>"
_IFACE = re.compile(r"\[\d+\]([^:\s\[]+):")
_IB = re.compile(r"^NET/IB\w* ?: ?Using (.*?)(?:; OOB ([^:\s]+):.*)?$")  # net_ib "...[RO]; OOB %s:%s", HPC-X "IBext"
# "[0]mlx5_0:1/IB": one digit then digits and colons, which a split between `\d+` and `[:\d]*` once matched in
# quadratically many ways on a line of digits without the slash (seconds for one 16 KB line)
_IB_DEV = re.compile(r"\[\d+\]([^:\s\[]+):\d[:\d]*/(\w+)")
# graph/paths.cc "GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d > %d)" (">=" before 2.12), transport/
# net_ib.cc "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)" (the suffix since 2.19).
_GDR = re.compile(
    r"GPU Direct RDMA (Enabled|Disabled) for (?:HCA|GPU)(?:[^(]{0,100}\((distance \d+ >=? \d+|no module)\))?"
)
_ENV = re.compile(r"^([A-Z][A-Z0-9_]+) set (?:by environment )?to (.*)$")  # "%s set by environment to %s";
# net_ib prints "NCCL_IB_HCA set to %s", param.cc ends numbers with "."
_INIT = re.compile(r"comm \S+ rank (\d+) nranks (\d+) cudaDev \d+")  # init.cc "... - Init START|COMPLETE"
# init.cc (2.19+) "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
_SHAPE = re.compile(r"comm \S+ rank \d+ nRanks (\d+) nNodes (\d+) localRanks (\d+) ")
_PLATFORM = re.compile(r"^NET/OFI Running on (\S+) platform")  # aws-ofi-nccl platform-aws.cpp
_OFI_VERSION = re.compile(r"^NET/OFI (?:Initializing|Using) aws-ofi-nccl (\S+)")
# aws-ofi-nccl and libfabric saying that no EFA device can be used: the plugin gives up and NCCL falls back.
EFA_MISSING = re.compile(
    r"No eligible providers|[Cc]ould(?:n't| not) find any optimal provider|fi_getinfo\(\) call failed|"
    r"Failed to initialize (?:sendrecv|rdma) protocol|aws-ofi-nccl initialization failed|"
    r"Unable to find a protocol that worked|provider efa output empty list"
)
_OFI_PROVIDER = re.compile(r"^NET/OFI Selected [Pp]rovider is ([^,\s]+),?(?: fabric is \S+)?(?: \(found (\d+) nics\))?")


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
    plugin: str | None = None
    plugin_missing: bool = False
    plugin_error: str | None = None
    ofi_version: str | None = None
    ofi_provider: str | None = None
    ofi_nics: int = 0  # EFA devices aws-ofi-nccl found ("found 32 nics"); 0 when it did not say
    platform: str | None = None
    efa_missing: str | None = None  # aws-ofi-nccl's first message that it found no usable EFA device
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


_KEEP = 20  # evidence lines kept per kind: enough to quote, bounded for logs of millions of lines


def _note(items: list[str], msg: str) -> None:
    if len(items) < _KEEP and msg not in items:
        items.append(msg)


def parse_nccl(text: str) -> NcclLog:
    log = NcclLog()
    lines = text.splitlines()
    if text and not text.endswith(("\n", "\r")) and not _EVIDENCE.search(lines[-1][:MAX_LINE]):
        lines = lines[:-1]  # the last line was cut mid-write; an error it shows is kept (a paste without a final
        # newline, or the last thing a dying job wrote), anything else could be half a value ("NCCL version 2.2")
    for whole in lines:
        seen: set[tuple[tuple[str, int], str]] = set()  # a log shipper that repeats the line after " | "
        for line in _RANK_PREFIX.split(whole[:MAX_LINE]) if "]:" in whole or "]<std" in whole else (whole[:MAX_LINE],):
            _read_line(log, line, seen)
    return log


def _read_line(log: NcclLog, line: str, seen: set[tuple[tuple[str, int], str]]) -> None:
    """What one rank wrote: the messages after its NCCL headers, else a bare NCCL message or evidence."""
    headers = _headers(line)
    for i, (key, level, loc, _, end) in enumerate(headers):
        stop = headers[i + 1][3] if i + 1 < len(headers) else len(line)
        msg = _RAY_REPEAT.sub("", " ".join(line[end:stop].split()).removesuffix(" |").removesuffix("|"))
        if (key, msg) not in seen:
            seen.add((key, msg))
            _read(_process(log, key), level, msg, loc)
    if headers:
        return
    if "Function: " in line and (old := _OFI_OLD.search(line)):
        _read(_process(log, ("", 0)), old.group("level"), " ".join(line[old.end() :].split()))
    elif bare := _BARE_MESSAGE.match(line):
        _read(_process(log, ("", 0)), "INFO", " ".join(line[bare.end() :].split()))
    elif m := _VERSION.search(line):
        log.bare_versions.append(m.group(1) + m.group(2))
    elif "libfabric:" in line and (m := _LIBFABRIC.search(line)):
        _note(log.libfabric, " ".join(m.group(1).split(" | ")[0].split()))  # a shipper's " | " repeat
    elif ("failure" in line or "nccl" in line) and _FAILURE.search(line):
        _note(log.failures, " ".join(line.split()))


Header = tuple[tuple[str, int], str, str | None, int, int]


def _headers(line: str) -> list[Header]:
    """(process key, level, "file:line" of a WARN, start and end of the header) of each NCCL header in a line."""
    out: list[Header] = []
    floor = 0
    for marker in _MARKER.finditer(line):
        lo = max(floor, marker.start() - _WINDOW)
        # Blank out shippers' timestamps (same length, so offsets hold): glued to the host they would become part of it.
        window = _STAMP.sub(lambda m: " " * len(m.group()), line[lo : marker.start()])
        head = _HEAD.search(window) or _LOC.search(window)
        key = (head.group("host"), int(head.group("pid"))) if head and "host" in head.re.groupindex else ("", 0)
        loc = head.group("loc") if head else None
        out.append((key, marker.group(1), loc, lo + head.start() if head else marker.start(), marker.end()))
        floor = marker.end()
    return out


def _process(log: NcclLog, key: tuple[str, int]) -> Process:
    return log.processes.get(key) or log.processes.setdefault(key, Process(key[0], key[1]))


def _read(p: Process, level: str, msg: str, loc: str | None = None) -> None:
    if level == "WARN" and msg:
        _note(p.warnings, f"{loc} {msg}" if loc else msg)  # the file:line names the failing subsystem
    if _read_topology(p, msg):
        return
    if msg.startswith("NET/Plugin"):
        _read_plugin(p, msg)
    elif msg.startswith("NET/OFI"):
        _read_ofi(p, msg)
    else:
        _read_setting(p, msg)


def _read_topology(p: Process, msg: str) -> bool:
    """A channel's connection, a communicator's rank or its shape (channels, peers); False for another message."""
    if m := _CHANNEL.match(msg):
        p.channel_ranks.add(int(m.group(2) if m.group(3) == "receive" else m.group(1)))
        if net := _VIA_NET.match(m.group(4)):
            p.net_channels[net.group(1)] += 1
            p.gdr_channels += "/GDRDMA" in net.group(2)
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
    else:
        return False
    return True


def _read_ofi(p: Process, msg: str) -> None:
    """aws-ofi-nccl's lines (NET/OFI): its version, provider and NICs, platform, or that EFA is missing."""
    if m := _OFI_VERSION.match(msg):
        p.ofi_version = m.group(1)
    elif m := _OFI_PROVIDER.match(msg):
        p.ofi_provider, p.ofi_nics = m.group(1), int(m.group(2) or 0)
    elif m := _PLATFORM.match(msg):
        p.platform = m.group(1)
    elif EFA_MISSING.search(msg) and not p.efa_missing:
        p.efa_missing = msg  # aws-ofi-nccl failed during init: NCCL moves on to its internal transports


def _read_setting(p: Process, msg: str) -> None:
    """What NCCL says it runs with: its version, network, interfaces, GPUDirect RDMA, environment, plugin failure."""
    if m := _VERSION.match(msg):
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
    elif lib := PLUGIN_LIB.search(msg):
        if lib.group(1).startswith("libnccl-net") and "No such file" in msg:
            p.plugin_missing = True
        elif not p.plugin_error:
            p.plugin_error = msg
    elif m := re.search(r"returned (\d+)", msg):  # 2.19-2.23 summary line, dlerror() already consumed: "(null)"
        if m.group(1) == "2":
            p.plugin_missing = True
        elif not p.plugin_error:
            p.plugin_error = msg
