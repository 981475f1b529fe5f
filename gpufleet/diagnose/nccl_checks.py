"""Checks over the NCCL logs of one job: what stopped it, what slows it, what to change.

Why, with sources: docs/diagnose.md, "Design notes", gpufleet/diagnose/nccl_checks.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from gpufleet.diagnose.findings import LogFinding, Severity
from gpufleet.diagnose.nccl import EFA_MISSING, PLUGIN_LIB, NcclLog, Process
from gpufleet.facts import catalog

Row = tuple[str, Process, str | None]  # (source file, process, inter-node transport or None)

MANAGEMENT_IFACES = frozenset({"eth0"})
# Interfaces no inter-node traffic can use: loopback, container bridges, veth ends, and link-local ones such as
# EKS Pod Identity's pod-id-link0 (169.254.170.23; aws-samples/aws-do-eks PR 54 traced a cross-node hang to it).
_BAD_IFACE = re.compile(r"^(?:lo|docker\d*|veth\w*|virbr\d*|cni\d*|flannel\.\d+|pod-id-link\d*)$")
# aws-ofi-nccl's GPUDirect RDMA over EFA starts with p4d (A100); p3dn (V100) has none, so its plain
# "via NET/AWS Libfabric/0" channels are normal.
_EFA_GDR_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6")
# WARN lines NCCL prints and carries on from (graph/search.cc: a topology search that falls back to a simpler order;
# before 2.12 "Failed to open libibverbs" when IB is simply absent).
_BENIGN_WARN = re.compile(r"Could not find a path for pattern|falling back to simple order|Failed to open libibverbs")
# NVLink SHARP (any WARN from transport/nvls.cc: "Cuda failure 1", or "Failed to bind NVLink SHARP (NVLS) Multicast
# memory ...
_FABRIC = re.compile(
    r"nvls\.cc:\d+ |NVLink SHARP|Cuda failure 802\b|system not yet initialized|cudaErrorSystemNotReady"
)

_SOCKET_FIX = (
    "put the job on the fast fabric: request vpc.amazonaws.com/efa in the pod (all EFA devices of the instance) and "
    "check the aws-ofi-nccl plugin (libnccl-net.so) is in the image and on LD_LIBRARY_PATH; on InfiniBand request the "
    "RDMA device resource and mount /dev/infiniband; set NCCL_NET=Libfabric (or NCCL_NET=IB) so a missing fast path "
    "fails at startup instead of falling back to TCP (gpufleet's nccl-env ConfigMap for nodeGroups[].fabric sets it)"
)
_EFA_FIX = (
    "aws-ofi-nccl found no usable EFA device inside the container: request vpc.amazonaws.com/efa in the pod's "
    "resources (all EFA interfaces of the instance; gpufleet installs the EFA device plugin for node groups with "
    "fabric: efa), do not mount /dev/infiniband with a hostPath (the device plugin injects exactly the EFA devices; "
    "other uverbs devices make libfabric's EFA provider fail), and run on an EFA-enabled instance type; "
    "`fi_info -p efa` in the pod must list the provider"
)
_FABRIC_FIX = (
    "the NVSwitch fabric manager is not running, or was restarted while GPUs were in use: on HGX instances (p4d, p5, "
    "p6) nvidia-fabricmanager must run at the driver's exact version before any CUDA context exists "
    "(EKS-optimized accelerated AMIs start it; with versions.driver.source: Operator it runs in the driver pod); "
    "after a fabric-manager restart, drain the node and reboot it (or reset the GPUs) -- health.autoRepair lets EKS "
    "do that; NCCL_NVLS_ENABLE=0 only hides the NVLink SHARP failure until then"
)


def check_job(logs: Mapping[str, NcclLog]) -> list[LogFinding]:
    """The logs of one job (one file, or one per pod): what to change, unranked."""
    out = [
        LogFinding(
            "warning",
            src,
            "log",
            "no NCCL_DEBUG=INFO lines found",
            "run the job with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,ENV,NET adds the GPUDirect lines) "
            "and pass its whole output",
            "input.no-nccl-lines",
        )
        for src, log in logs.items()
        if not log.processes and not log.bare_versions and not log.failures and not log.libfabric
    ]
    procs = sorted(
        ((s, p) for s, log in logs.items() for p in log.processes.values()),
        key=lambda sp: (sp[1].rank_list[:1] or [1 << 30], sp[1].host, sp[1].pid),
    )
    multi_host = len({p.host for _, p in procs if p.host}) > 1
    rows: list[Row] = [(s, p, _transport(p, multi_host)) for s, p in procs]
    found = (
        _errors(logs, rows)
        + _efa(logs, rows)
        + _transports(rows)
        + _plugins(rows)
        + _gdr(rows)
        + _efa_devices(rows)
        + _one_gpu_per_pod(rows)
        + _interfaces(rows, multi_host)
    )
    return out + found + _versions(logs, rows, bool(found))


# ---- helpers -------------------------------------------------------------------------------------------------------


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
        by_host.setdefault(p.host or "(no host prefix)", []).extend(p.rank_list)
    return ", ".join(f"{host} ({_ranks_text(r)})" if r else host for host, r in by_host.items())


def _sources(members: list[Row]) -> str:
    return ", ".join(sorted({s for s, _, _ in members}))


def _count(members: list[Row]) -> int:
    return sum(max(1, len(p.rank_list)) for _, p, _ in members)


def _finding(severity: Severity, members: list[Row], everyone: int, what: str, fix: str, check: str) -> LogFinding:
    return LogFinding(severity, _sources(members), _who(members, everyone), what, fix, check)


def _instance(platform: str | None) -> catalog.InstanceType | None:
    """The instance aws-ofi-nccl says it runs on ("p4d.24xlarge"; before 1.4 "P4d")."""
    if not platform:
        return None
    name = platform.lower()
    return catalog.lookup(name) or catalog.lookup({"p4d": "p4d.24xlarge", "p5": "p5.48xlarge"}.get(name, ""))


def _local_gpus(p: Process, per_host: Mapping[str, int]) -> int:
    """GPUs on the process's node as the log shows them: NCCL's localRanks, else the processes seen on its host."""
    return p.shape[2] if p.shape else per_host.get(p.host, 1) if p.host else 1


def _candidates(p: Process, local: int) -> list[catalog.InstanceType]:
    """The instance types a process's aws-ofi-nccl lines fit when it printed no platform line.

    Why: docs/diagnose.md, "Design notes", nccl_checks._candidates."""
    if p.platform or p.ofi_provider != "efa" or not p.ofi_nics:
        return []
    return sorted(
        (e for e in catalog.CATALOG.values() if e.max_efa_interfaces == p.ofi_nics and e.gpu_count >= local),
        key=lambda e: e.name,
    )


def _gdr_expected(p: Process, local: int) -> bool | None:
    """Whether GPUDirect RDMA over EFA exists where the process runs; None when the log cannot tell."""
    if p.platform:
        return p.platform.lower().split(".")[0] in _EFA_GDR_FAMILIES
    families = {e.family in _EFA_GDR_FAMILIES for e in _candidates(p, local)}
    return families.pop() if len(families) == 1 else None


def _gpus_of(platform: str | None) -> int:
    entry = _instance(platform)
    return entry.gpu_count if entry else 0


# ---- errors --------------------------------------------------------------------------------------------------------


def _errors(logs: Mapping[str, NcclLog], rows: list[Row]) -> list[LogFinding]:
    """Every WARN and failure line is evidence; the fabric manager's signature gets its own finding."""
    fabric: list[Row] = []
    fabric_msg = ""
    other: dict[str, list[Row]] = {}
    for r in rows:
        for msg in r[1].warnings:
            if _FABRIC.search(msg):
                fabric.append(r)
                fabric_msg = fabric_msg or msg
                break
        else:
            first = next((m for m in r[1].warnings if not _explained(m, r[1])), None)
            if first:
                other.setdefault(_LOC.sub("", first), []).append(r)  # the same error at another file:line
    out: list[LogFinding] = []
    loose = [(src, msg) for src, log in logs.items() for msg in log.failures]
    if not fabric_msg and (hit := next(((s, m) for s, m in loose if _FABRIC.search(m)), None)):
        out.append(
            LogFinding(
                "critical",
                hit[0],
                "job",
                f"CUDA cannot start on the GPUs: {hit[1]}",
                _FABRIC_FIX,
                "nccl.fabric-manager",
            )
        )
    if fabric:
        out.append(
            _finding(
                "critical",
                fabric,
                len(rows),
                f"NCCL failed in NVLink SHARP setup: {fabric_msg}",
                _FABRIC_FIX,
                "nccl.fabric-manager",
            )
        )
    for msg, members in other.items():
        shown = next(m for m in members[0][1].warnings if _LOC.sub("", m) == msg)
        out.append(
            _finding(
                "critical", members, len(rows), f"NCCL reported an error: {shown}", _error_fix(shown), "nccl.error"
            )
        )
    if not out and (hit := next(((s, m) for s, m in loose), None)):
        out.append(
            LogFinding(
                "critical",
                hit[0],
                "job",
                f"the job reported an NCCL/CUDA failure: {hit[1]}",
                _error_fix(hit[1]),
                "nccl.error",
            )
        )
    return out


def _explained(msg: str, p: Process) -> bool:
    """A WARN another check reports with a better fix, one NCCL carries on from, or aws-ofi-nccl's follow-up to
    finding no EFA device."""
    return bool(
        _BENIGN_WARN.search(msg)
        or EFA_MISSING.search(msg)
        or (p.efa_missing and "NET/OFI" in msg)
        or _LOC.sub("", msg).startswith(("NET/Plugin", "Failed to init"))
    )


_LOC = re.compile(r"^[\w./+-]{1,255}:\d{1,7} (?:\([^()]{0,255}\) )?")


def _error_fix(msg: str) -> str:
    """The fix for an NCCL error line, in the user's terms (what the message means on Kubernetes)."""
    if "initialization error" in msg or "no CUDA-capable device" in msg or "driver version is insufficient" in msg:
        return (
            "CUDA could not start in this pod: check `nvidia-smi` inside it; the GPUs must come from an "
            "nvidia.com/gpu request (not NVIDIA_VISIBLE_DEVICES=all on a pod without one), the node's driver must "
            "support the image's CUDA, and the container runtime must be NVIDIA's (GPU Operator toolkit)"
        )
    if "node cpu not found" in msg or "xml.h" in msg:
        # aws-ofi-nccl before 1.11 set NCCL_TOPO_FILE to a static file per platform (p4d, p5), which fails when a
        # process sees only some of the GPUs (aws-ofi-nccl#785, maintainer); 1.11 and later generate it.
        return (
            "NCCL read a topology file that does not match the devices this process sees: aws-ofi-nccl before "
            "1.11 sets NCCL_TOPO_FILE to a static file for p4d/p5 that breaks when a pod gets only some of the "
            "GPUs; upgrade aws-ofi-nccl (the EFA installer's, 1.11 or later generates the file), or unset a "
            "NCCL_TOPO_FILE you set yourself"
        )
    if "out of memory" in msg:
        return (
            "a GPU ran out of memory while NCCL allocated its buffers: lower the batch or NCCL_BUFFSIZE, and make "
            "sure no other process (another pod on a time-sliced GPU) holds memory on it"
        )
    if "register memory" in msg and "NET/OFI" in msg:
        return (
            "EFA could not register GPU memory: NCCL 2.19 and later need libfabric from EFA installer 1.29 or "
            "later (set FI_EFA_SET_CUDA_SYNC_MEMOPS=0 until the image is rebuilt), and the pod needs its EFA "
            "devices' hugepages (gpufleet requests them for fabric: efa groups)"
        )
    if "NET/OFI" in msg:
        return (
            "aws-ofi-nccl or libfabric failed on EFA: build the image from one EFA installer (libfabric and "
            "aws-ofi-nccl together) that supports the image's NCCL, request every vpc.amazonaws.com/efa of the "
            "instance, and check the node group's security group allows all traffic to and from itself (EFA "
            "needs it)"
        )
    if "NET/IB" in msg or "net_ib" in msg:
        return (
            "the RDMA network failed (a work completion with an error status): check the link (ibstat, port "
            "counters), on RoCE the GID index (NCCL_IB_GID_INDEX) and lossless settings, and run "
            "ib_write_bw between the two hosts"
        )
    if "p2p.cc" in msg or "P2P" in msg:
        return (
            "CUDA peer-to-peer (IPC) between the GPUs of one node failed: run all ranks of a node in one pod "
            "with all its GPUs and shared IPC; NCCL_P2P_DISABLE=1 confirms it is P2P (at a bandwidth cost)"
        )
    if re.search(r"[Cc]onnect|[Ss]ocket|[Bb]ootstrap", msg):
        return (
            "ranks cannot reach each other: pin NCCL_SOCKET_IFNAME to the pod network interface and check "
            "network policies and security groups between the pods"
        )
    return (
        "NCCL stopped on this error: the WARN line names the source file and line; fix what it says before "
        "tuning anything else (NCCL_DEBUG_SUBSYS=INIT,NET,ENV shows more)"
    )


# ---- EFA, transports and plugins -----------------------------------------------------------------------------------


def _efa(logs: Mapping[str, NcclLog], rows: list[Row]) -> list[LogFinding]:
    members = [r for r in rows if r[1].efa_missing]
    if members:
        first = members[0][1].efa_missing or ""
        return [
            _finding("critical", members, len(rows), f"EFA is not usable: {first}", _EFA_FIX, "nccl.efa-unavailable")
        ]
    selected = any(p.ofi_provider for _, p, _ in rows)
    out = []
    for src, log in logs.items():
        msg = next((m for m in log.libfabric if EFA_MISSING.search(m)), None)
        if msg and not selected:
            out.append(
                LogFinding(
                    "critical", src, "job", f"EFA is not usable: libfabric: {msg}", _EFA_FIX, "nccl.efa-unavailable"
                )
            )
    return out


def _transports(rows: list[Row]) -> list[LogFinding]:
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
            fix = (
                f"this host lost the fast path the others have: check its pod requested {res} like the others, "
                f"that the node advertises it (kubectl describe node: allocatable {res}, the device plugin pod "
                "on that node) and that it runs the same image; cordon the node if its devices are missing"
            )
        else:
            fix = f"all ranks must use one network: set NCCL_NET={major} and run every worker from the same image"
        out.append(_finding("critical", members, len(rows), what, fix, "nccl.transport-mismatch"))
    return out


def _plugins(rows: list[Row]) -> list[LogFinding]:
    out: list[LogFinding] = []
    errors: dict[str, list[Row]] = {}
    for r in rows:
        if r[1].plugin_error:
            errors.setdefault(r[1].plugin_error, []).append(r)
    for msg, members in errors.items():
        lib = PLUGIN_LIB.search(msg)
        if msg.startswith("Failed to initialize"):
            fix = _EFA_FIX
            what = "the net plugin loaded but failed to initialize: " + msg
        else:
            if lib and "undefined symbol" in msg:
                fix = (
                    "the plugin was built for another NCCL or libfabric: install the aws-ofi-nccl build that "
                    "matches the image's NCCL (the EFA installer's, or the one in NVIDIA's AWS containers)"
                )
            else:
                dep = lib.group(1) if lib else "its dependencies"
                fix = (
                    f"the plugin is in the image but cannot load: install {dep} (the EFA installer puts libfabric "
                    "in /opt/amazon/efa/lib) and add its directory to LD_LIBRARY_PATH"
                )
            what = "the net plugin failed to load: " + re.sub(r"^NET/Plugin ?: ?", "", msg)
        out.append(_finding("critical", members, len(rows), what, fix, "nccl.plugin-failed"))
    missing = [
        r
        for r in rows
        if r[2] == "Socket"
        and r[1].plugin_missing
        and not r[1].plugin
        and not r[1].plugin_error
        and not r[1].efa_missing
    ]
    if missing:
        out.append(
            _finding(
                "critical",
                missing,
                len(rows),
                "no net plugin found (libnccl-net.so): NCCL fell back to its internal transports",
                "install aws-ofi-nccl in the image (the EFA installer and NVIDIA's AWS containers ship it) and make "
                "libnccl-net.so loadable: put its directory on LD_LIBRARY_PATH or set NCCL_NET_PLUGIN to its path",
                "nccl.plugin-failed",
            )
        )
    return out


# ---- GPUDirect RDMA and topology ----------------------------------------------------------------------------------


def _gdr_off(r: Row, local: int) -> bool | None:
    """GPUDirect RDMA off where it should be on; None when it is off over EFA on an instance the log does not name."""
    _, p, net = r
    if p.gdr_disabled and not p.gdr_enabled:
        return True  # NCCL said so, on one host as on many
    if not p.net_channels or p.gdr_channels or net in (None, "Socket"):
        return False
    if net.startswith("IB"):
        return True
    expected = _gdr_expected(p, local)  # EFA: only where GDR exists
    return None if expected is None and not p.platform else bool(expected)


def _gdr(rows: list[Row]) -> list[LogFinding]:
    per_host = Counter(p.host for _, p, _ in rows)
    verdicts = [(r, _gdr_off(r, _local_gpus(r[1], per_host))) for r in rows]
    members = [r for r, off in verdicts if off]
    unknown = [r for r, off in verdicts if off is None]
    if not members:
        return _platform_unknown(unknown, len(rows), per_host)
    reasons = sorted({p.gdr_reason for _, p, _ in members if p.gdr_reason})
    nets = sorted({net or p.network or "IB" for _, p, net in members})
    efa = all(n != "IB" and not n.startswith("IB") for n in nets)
    what = "GPUDirect RDMA is off: GPU buffers are staged through host memory on every inter-node transfer"
    if any(r.startswith("distance") for r in reasons):
        dist = next(r for r in reasons if r.startswith("distance"))
        what = f"GPUDirect RDMA is off: the GPU and the NIC are too far apart on PCIe ({dist})"
        fix = (
            "NCCL keeps GPUDirect RDMA off when GPU and NIC do not share a PCIe switch: give each GPU the HCA "
            "nearest it (list those in NCCL_IB_HCA; gpufleet: network.rdma.networks[].hca), and only if the "
            "platform's topology is known to be fine set NCCL_NET_GDR_LEVEL=SYS and measure with nccl-tests "
            "(it can be slower than staging)"
        )
    elif efa:
        fix = (
            "GPUDirect over EFA needs a GDR-capable instance (p4d, p5 and later), libfabric >= 1.18 with "
            "aws-ofi-nccl >= 1.7 (EFA installer), and no NCCL_NET_GDR_LEVEL override"
        )
    else:
        if "no module" in reasons:
            what += " (no GPU peer-memory module loaded)"
        fix = (
            "load the GPU peer-memory support on every node: the GPU Operator's driver.rdma.enabled=true "
            "(nvidia-peermem), or DMA-BUF with the open kernel modules; `lsmod | grep peermem` on the host and "
            "/sys/kernel/mm/memory_peers/nv_mem must exist; leave NCCL_NET_GDR_LEVEL unset or at least PXB"
        )
    return [_finding("warning", members, len(rows), what, fix, "nccl.gdr-off")] + _platform_unknown(
        unknown, len(rows), per_host
    )


def _platform_unknown(members: list[Row], everyone: int, per_host: Mapping[str, int]) -> list[LogFinding]:
    """Say that the GPUDirect check could not run: the EFA channels carry no GDRDMA, aws-ofi-nccl printed no platform
    line, and its NIC count fits instance types with and without GPUDirect RDMA (or none)."""
    if not members:
        return []
    p = members[0][1]
    local = _local_gpus(p, per_host)
    fits = _candidates(p, local)
    what = (
        f"aws-ofi-nccl printed no `NET/OFI Running on <type> platform` line, and {p.ofi_nics or 'an unknown number of'}"
        f" EFA device(s) with {local} GPU(s) per node "
        + (f"fit {', '.join(e.name for e in fits)}" if fits else "fit no EFA instance type")
        + ": whether the EFA channels should carry GPUDirect RDMA (none do) cannot be told from the log"
    )
    fix = (
        "pass the node's instance type (kubectl get node -L node.kubernetes.io/instance-type): on p4d, p5 and later"
        " the channels must read via NET/Libfabric/<n>/GDRDMA, so check the EFA installer (libfabric >= 1.18,"
        " aws-ofi-nccl >= 1.7) and that no NCCL_NET_GDR_LEVEL override is set"
    )
    return [_finding("info", members, everyone, what, fix, "nccl.platform-unknown")]


def _efa_devices(rows: list[Row]) -> list[LogFinding]:
    """aws-ofi-nccl's "found N nics" against the EFA interfaces of the instance it runs on: a process driving L of the
    instance's G GPUs needs its share, ceil(E * L / G), of the E interfaces (EC2 MaximumEfaInterfaces: p5 32, p5en 16,
    p4d 4).

    Why: docs/diagnose.md, "Design notes", nccl_checks._efa_devices."""
    short: list[Row] = []
    per_host = Counter(p.host for _, p, _ in rows)
    need = have = 0
    entry = None
    inferred: list[Row] = []
    fewest: catalog.InstanceType | None = None
    for r in rows:
        p = r[1]
        e = _instance(p.platform)
        if e is None and p.ofi_provider == "efa" and p.ofi_nics:
            # No platform line (p5, p5e, p5en): a count that is no instance's full count for this many GPUs is short of
            # whatever the instance is (see _candidates); a full count is every device of some instance.
            local = _local_gpus(p, per_host)
            if not _candidates(p, local):
                bigger = [
                    x for x in catalog.CATALOG.values() if x.gpu_count >= local and x.max_efa_interfaces > p.ofi_nics
                ]
                if bigger:
                    inferred.append(r)
                    least = min(bigger, key=lambda x: (x.max_efa_interfaces, x.name))
                    fewest = least if fewest is None or least.max_efa_interfaces < fewest.max_efa_interfaces else fewest
            continue
        if not e or e.max_efa_interfaces < 2 or not p.ofi_nics or not e.gpu_count:
            continue
        local = min(p.shape[2] if p.shape else per_host[p.host] if p.host else 1, e.gpu_count)
        want = -(-e.max_efa_interfaces * local // e.gpu_count)
        if p.ofi_nics < want:
            short.append(r)
            need, have, entry = max(need, want), p.ofi_nics, e
    out = []
    if inferred and fewest is not None:
        p = inferred[0][1]
        out.append(
            _finding(
                "warning",
                inferred,
                len(rows),
                f"aws-ofi-nccl found {p.ofi_nics} EFA device(s) and printed no platform line (it prints none on p5,"
                f" p5e or p5en); no EFA instance type has exactly {p.ofi_nics} with this many GPUs, so the pods got"
                f" fewer than their instance has (the fewest any such type has is {fewest.max_efa_interfaces},"
                f" {fewest.name}) and their traffic shares the NICs they have",
                "request every EFA interface of the instance with the pod's GPUs: vpc.amazonaws.com/efa: 32 on"
                " p5.48xlarge and p5e.48xlarge, 16 on p5en.48xlarge (EC2 MaximumEfaInterfaces; gpufleet's nccl-gate"
                " and canonical pods do); a pod with fewer GPUs needs its share",
                "nccl.efa-devices",
            )
        )
    if not short or entry is None:
        return out
    return out + [
        _finding(
            "warning",
            short,
            len(rows),
            f"aws-ofi-nccl found {have} EFA device(s) on {entry.name}, which has {entry.max_efa_interfaces}: these "
            f"ranks need {need}, so they share a fraction of the instance's network bandwidth",
            f"request every EFA interface the pod's GPUs go with: vpc.amazonaws.com/efa: {entry.max_efa_interfaces} in"
            f" a pod with all {entry.gpu_count} GPUs (the EFA device plugin, which gpufleet installs for fabric: efa"
            " groups, hands out exactly what is requested); a pod with fewer GPUs needs its share",
            "nccl.efa-devices",
        )
    ]


def _one_gpu_per_pod(rows: list[Row]) -> list[LogFinding]:
    """nNodes == nRanks with one local rank each, on an instance with several GPUs: one-GPU pods on one machine talk
    over the network (NCCL counts each pod as a node) instead of NVLink."""
    members = []
    gpus = 0
    for r in rows:
        p = r[1]
        n = _gpus_of(p.platform)
        if p.shape and p.shape[0] > 1 and p.shape[1] == p.shape[0] and p.shape[2] == 1 and n > 1:
            members.append(r)
            gpus = n
    if not members:
        return []
    nranks = max(p.shape[0] for _, p, _ in members if p.shape)
    platform = members[0][1].platform
    return [
        _finding(
            "warning",
            members,
            len(rows),
            f"{nranks} ranks on {nranks} nodes with 1 GPU each, on {platform} instances with {gpus} GPUs: pods that"
            " share an instance talk over the network instead of NVLink",
            f"run one pod per instance with all {gpus} GPUs (nvidia.com/gpu: {gpus}, vpc.amazonaws.com/efa: all) and "
            f"{gpus} ranks per pod (torchrun --nproc_per_node={gpus}), or pack the ranks with a required "
            "pod anti-affinity per instance; Kueue topology placement (nodeGroups[].topology.placement) keeps a job's "
            "pods together",
            "nccl.one-gpu-per-pod",
        )
    ]


# ---- interfaces and versions ---------------------------------------------------------------------------------------


def _interfaces(rows: list[Row], multi_host: bool) -> list[LogFinding]:
    out = []
    bad = [r for r in rows if any(_BAD_IFACE.match(i) for i in r[1].socket_ifaces)]
    if bad:
        names = sorted({i for _, p, _ in bad for i in p.socket_ifaces if _BAD_IFACE.match(i)})
        good = sorted({i for _, p, _ in bad for i in p.socket_ifaces if not _BAD_IFACE.match(i)})
        out.append(
            _finding(
                "warning",
                bad,
                len(rows),
                f"NCCL's socket transport uses {', '.join(names)}, which other hosts cannot reach",
                f"set NCCL_SOCKET_IFNAME={good[0] if good else '^lo,docker,veth,pod-id-link0'} (or exclude with "
                "NCCL_SOCKET_IFNAME=^lo,docker,veth,eni,pod-id-link0; gpufleet's nccl-env ConfigMap pins =eth0 on EFA "
                "groups and network.rdma.socketInterface on RDMA groups)",
                "nccl.socket-interface",
            )
        )
    flagged = {id(r[1]) for r in bad}
    mgmt: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        p = r[1]
        control = {i for i in (p.bootstrap_iface, p.oob_iface) if i}
        chosen = control | (set(p.socket_ifaces) if r[2] == "Socket" else set())
        others = tuple(sorted((control | set(p.socket_ifaces)) - MANAGEMENT_IFACES - {"lo"}))
        if chosen & MANAGEMENT_IFACES and others and id(p) not in flagged:
            mgmt.setdefault(others, []).append(r)
    for others, members in mgmt.items():
        # Bootstrap over eth0 is harmless; only data over it (the socket transport) costs bandwidth.
        on_socket = any(r[2] == "Socket" for r in members)
        out.append(
            _finding(
                "warning" if on_socket else "info",
                members,
                len(rows),
                f"NCCL bootstrap/socket traffic uses eth0 (the pod's management interface) although {', '.join(others)}"
                f" {'is' if len(others) == 1 else 'are'} available",
                f"set NCCL_SOCKET_IFNAME={others[0]} "
                "(or exclude the management interface: NCCL_SOCKET_IFNAME=^lo,docker,eth0)",
                "nccl.management-interface",
            )
        )
    flagged |= {id(r[1]) for ms in mgmt.values() for r in ms}
    ib = [r for r in rows if r[2] and r[2].startswith("IB") and r[1].ib_devices and "NCCL_IB_HCA" not in r[1].env]
    if ib:
        devs = sorted({d for _, p, _ in ib for d in p.ib_devices})
        out.append(
            _finding(
                "info",
                ib,
                len(rows),
                f"NCCL_IB_HCA is not set: NCCL uses every HCA it finds ({', '.join(devs)})",
                f"pin the compute HCAs, e.g. NCCL_IB_HCA={','.join(devs)} (a leading '=' matches names exactly, '^' "
                "excludes), so a storage or management port is never used (gpufleet: network.rdma.networks[].hca)",
                "nccl.ib-hca-unset",
            )
        )
    internode = multi_host or any(r[1].net_channels for r in rows)
    unset: dict[str, list[Row]] = {}
    for r in rows:
        p = r[1]
        iface = p.bootstrap_iface or p.oob_iface or (p.socket_ifaces[0] if p.socket_ifaces else None)
        if internode and iface and "NCCL_SOCKET_IFNAME" not in p.env and id(p) not in flagged:
            unset.setdefault(iface, []).append(r)
    for iface, members in unset.items():
        out.append(
            _finding(
                "warning" if _BAD_IFACE.match(iface) else "info",
                members,
                len(rows),
                f"NCCL_SOCKET_IFNAME is not set: NCCL picked {iface} by its own interface order",
                "pin it in the pod spec (NCCL_SOCKET_IFNAME=eth0 on EKS with the VPC CNI, or =^lo,docker,veth to"
                " exclude) so bootstrap never lands on a docker, veth or loopback interface",
                "nccl.socket-ifname-unset",
            )
        )
    return out


_RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


def _release(version: str) -> str:
    """The major.minor.patch a parsed version starts with (nccl.py's _VERSION puts it there): the rest is NCCL's
    suffix ("+cuda12.8") or what another writer glued to the line, and must not split one release in two."""
    m = _RELEASE.match(version)
    return m.group() if m else version


def _versions(logs: Mapping[str, NcclLog], rows: list[Row], other_findings: bool) -> list[LogFinding]:
    where: dict[str, set[str]] = {}
    full: dict[str, str] = {}
    for _, p, _ in rows:
        if p.version:
            base = _release(p.version)
            where.setdefault(base, set()).add(p.host or "(no host prefix)")
            full.setdefault(base, p.version)
    for src, log in logs.items():
        for v in log.bare_versions:
            where.setdefault(_release(v), set()).add(src)
            full.setdefault(_release(v), v)
    sources = ", ".join(sorted({s for s, _, _ in rows} | {s for s, log in logs.items() if log.bare_versions}))
    if len(where) > 1:
        ordered = sorted(where.items(), key=lambda vh: tuple(int(x) for x in vh[0].split(".")))
        text = "; ".join(f"{v} on {', '.join(sorted(hosts))}" for v, hosts in ordered)
        return [
            LogFinding(
                "warning",
                sources,
                "job",
                f"ranks run different NCCL versions: {text}",
                "build every worker from one image so all ranks load the same NCCL (check LD_LIBRARY_PATH "
                "and the pip nvidia-nccl package against the system NCCL)",
                "nccl.mixed-versions",
            )
        ]
    if where and other_findings:
        ofi = sorted({p.ofi_version for _, p, _ in rows if p.ofi_version})
        extra = f", aws-ofi-nccl {', '.join(ofi)}" if ofi else ""
        return [LogFinding("info", sources, "job", f"NCCL {next(iter(full.values()))}{extra}", "", "nccl.version")]
    return []
