"""`kubectl describe node` output: a typed summary, and the checks a GPU node should pass.

Why, with sources: docs/diagnose.md, "Design notes", gpufleet/diagnose/node.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpufleet.base.inputs import is_count
from gpufleet.diagnose.findings import LogFinding, Severity
from gpufleet.spec.names import LABEL_NODE_GROUP, LABEL_SHARING

# Anchored and bounded: a line of any length is matched in one pass (the value is cut with str.strip, not a regex).
_TOP = re.compile(r"^([A-Z][A-Za-z ()-]{0,63}):(?=\s|$)")
_RESOURCE = re.compile(r"^\s{1,64}([^\s:]{1,253}):\s+(\S+)")
MAX_LINE = 16_384  # kubectl's widest lines (a Conditions row with a long message) are far shorter
_COLUMNS = re.compile(r"\s{2,}|\t")
_TIMESTAMP = re.compile(
    r"\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}", re.ASCII
)  # Last{Heartbeat,Transition}Time
# GPU Operator / k8s-device-plugin label catalog (NVIDIA/k8s-device-plugin README, "Labels"; gpu-operator
# controllers/state_manager.go for the MIG state label).
PRODUCT, STRATEGY, REPLICAS = "nvidia.com/gpu.product", "nvidia.com/gpu.sharing-strategy", "nvidia.com/gpu.replicas"
MIG_CONFIG, MIG_STATE, MIG_CAPABLE = "nvidia.com/mig.config", "nvidia.com/mig.config.state", "nvidia.com/mig.capable"
DP_CONFIG, FLEET_SHARING = "nvidia.com/device-plugin.config", LABEL_SHARING
_INSTANCE_TYPE = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
_GPU_FAMILY = re.compile(r"^(p[2-9][a-z0-9-]*|g[3-9][a-z0-9-]*|gr[0-9][a-z]*)\.")  # NVIDIA GPU EC2 families
# Namespaces of cluster software, not teams: the GPU Operator's (gpu-operator, before v1.9 gpu-operator-resources,
# on OpenShift nvidia-gpu-operator), where Helm installs land by default ("default"), CNIs and storage.
_SYSTEM_NS = frozenset(
    {
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gpu-operator",
        "network-operator",
        "gpu-operator-resources",
        "default",
        "calico-system",
        "tigera-operator",
        "kube-flannel",
        "ingress-nginx",
        "local-path-storage",
        "metallb-system",
        "longhorn-system",
        "cert-manager",
        "kueue-system",
        "monitoring",
        "prometheus",
        "karpenter",
        "kyverno",
        "gatekeeper-system",
        "amazon-cloudwatch",
        "amazon-guardduty",
    }
)
_SYSTEM_PREFIXES = ("nvidia-", "kube-", "aws-", "amazon-", "eks-", "openshift-", "cattle-", "gpu-operator")
_AGE = re.compile(
    r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$"
)  # kubectl's duration column: 5d2h, 3m4s, 12s
_RESTART_GRACE_S = 300  # a device plugin younger than this may still be registering its GPUs with the kubelet
_UNREACHABLE = "node.kubernetes.io/unreachable"
_EKS_HEALTH = ("AcceleratedHardwareReady", "NetworkingReady", "StorageReady", "KernelReady", "ContainerRuntimeReady")


@dataclass(frozen=True, slots=True)
class NodeTaint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(slots=True)
class Node:
    """One node. A section missing from (truncated) input is None, so checks that need it are skipped."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[NodeTaint] | None = None
    conditions: dict[str, Condition] = field(default_factory=dict)
    capacity: dict[str, str] | None = None
    allocatable: dict[str, str] | None = None
    pods: list[tuple[str, str]] | None = None  # (namespace, name)
    ages: dict[str, int] = field(default_factory=dict)  # pod name -> age in seconds, where the table shows one
    allocated: dict[str, str] | None = None  # resource -> requests
    cut: str | None = None  # the section a partial paste stops in (its lines so far are kept)


def parse_nodes(text: str) -> list[Node]:
    nodes: list[Node] = []
    sections: dict[str, list[str]] = {}
    key = ""
    lines = text.splitlines()
    if text and not text.endswith(("\n", "\r")):
        lines = lines[:-1]  # the paste stops inside its last line
    for raw in lines:
        line = raw[:MAX_LINE]
        top = _TOP.match(line)
        if top:
            key = top.group(1)
            if key == "Name" and sections:
                nodes.append(_node(sections, cut=None))
                sections = {}
            value = line[top.end() :].strip()
            sections[key] = [value] if value else []
        elif key and line[:1].isspace() and line.strip():
            sections[key].append(line)
        elif line.strip():
            key = ""  # an unindented line that is not "Key:": not part of any section
    if sections:
        # kubectl ends with Events: input that stops earlier was cut inside its last section, whose lines are
        # still whole; the checks treat what that section lacks as unknown, not absent.
        last = list(sections)[-1]
        nodes.append(_node(sections, cut=None if last == "Events" else last))
    return [
        n
        for n in nodes
        if n.name
        or n.labels
        or n.conditions
        or n.capacity is not None
        or n.allocatable is not None
        or n.allocated is not None
        or n.pods is not None
    ]


def _node(s: dict[str, list[str]], cut: str | None) -> Node:
    node = Node(name=(s.get("Name") or [""])[0].strip(), cut=cut)
    for item in _items(s.get("Labels", [])):
        k, _, v = item.partition("=")
        node.labels[k] = v
    if "Taints" in s:
        node.taints = []
        for item in _items(s["Taints"]):
            kv, _, effect = item.rpartition(":")
            k, _, v = kv.partition("=")
            node.taints.append(NodeTaint(k, v, effect))
    for line in s.get("Conditions", []):
        tokens = line.split()
        if len(tokens) >= 2 and tokens[1] in ("True", "False", "Unknown"):
            stamps = list(_TIMESTAMP.finditer(line))
            rest = line[stamps[-1].end() :].strip() if stamps else " ".join(_COLUMNS.split(line.strip())[4:])
            reason, _, message = rest.partition(" ")
            node.conditions[tokens[0]] = Condition(tokens[0], tokens[1], reason, message.strip())
    node.capacity = _resources(s["Capacity"]) if "Capacity" in s else None
    node.allocatable = _resources(s["Allocatable"]) if "Allocatable" in s else None
    if "Non-terminated Pods" in s:
        rows = [line.split() for line in s["Non-terminated Pods"] if line.startswith((" ", "\t"))]
        node.pods = [(r[0], r[1]) for r in rows if len(r) >= 2 and r[0] != "Namespace" and not r[0].startswith("-")]
        node.ages = {r[1]: age for r in rows if len(r) >= 3 and (age := _seconds(r[-1])) is not None}
    if "Allocated resources" in s:
        rows = [line.split() for line in s["Allocated resources"]]
        node.allocated = {
            r[0]: r[1] for r in rows if len(r) >= 2 and r[0] not in ("Resource", "(Total") and not r[0].startswith("-")
        }
    return node


def _seconds(text: str) -> int | None:
    m = _AGE.match(text)
    if not m or not any(m.groups()):
        return None
    d, h, mi, sec = (int(g or 0) for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + sec


def _items(lines: list[str]) -> list[str]:
    return [x.strip() for x in lines if x.strip() and x.strip() != "<none>"]


def _resources(lines: list[str]) -> dict[str, str]:
    return {m.group(1): m.group(2) for line in lines if (m := _RESOURCE.match(line))}


def _int(value: str | None) -> int | None:
    return int(value) if is_count(value) else None


def _gpus(resources: dict[str, str]) -> dict[str, int]:
    """GPU resources: whole GPUs, renamed shared replicas, MIG slices (mixed strategy)."""
    return {
        k: _int(v) or 0
        for k, v in resources.items()
        if k in ("nvidia.com/gpu", "nvidia.com/gpu.shared") or k.startswith("nvidia.com/mig-")
    }


def is_gpu_node(node: Node) -> bool:
    labels = node.labels
    itype = next((labels[k] for k in _INSTANCE_TYPE if k in labels), "")
    return bool(
        any(k.startswith(("nvidia.com/gpu.", "nvidia.com/mig.")) for k in labels)
        or labels.get("feature.node.kubernetes.io/pci-10de.present") == "true"
        or "k8s.amazonaws.com/accelerator" in labels
        or (_GPU_FAMILY.match(itype) and not itype.startswith("g4ad."))
        or sum(_gpus(node.capacity or {}).values())
        or sum(_gpus(node.allocatable or {}).values())
        or any(t.key == "nvidia.com/gpu" for t in node.taints or [])
    )


def check_node(source: str, node: Node) -> list[LogFinding]:
    name = node.name or "node"
    out: list[LogFinding] = []

    def add(severity: Severity, what: str, fix: str, check: str) -> None:
        out.append(LogFinding(severity, source, name, what, fix, check))

    conds = node.conditions
    ready = conds.get("Ready")
    # The node lifecycle controller taints a node whose Ready condition is Unknown (the kubelet stopped posting) with
    # node.kubernetes.io/unreachable (kubernetes.io docs, "Taints and Tolerations"), so a paste cut before the
    # Conditions rows still shows a lost node.
    lost = next((t.key for t in node.taints or [] if t.key == _UNREACHABLE), None) if ready is None else None
    if (ready and ready.status != "True") or lost:
        add(
            "critical",
            f"Ready={ready.status}{_why(ready)}" if ready else f"not ready: tainted {lost} by the node controller",
            "the kubelet stopped reporting: check the instance (EC2 status checks, journalctl -u kubelet), then let "
            "EKS node auto-repair replace it or cordon and drain it; its GPU pods cannot make progress",
            "node.not-ready",
        )
    for ctype in _EKS_HEALTH:
        c = conds.get(ctype)
        if c and c.status == "False" and ctype == "AcceleratedHardwareReady":
            add(
                "critical",
                f"AcceleratedHardwareReady=False{_why(c)}",
                "the EKS node monitoring agent found a GPU fault: cordon and drain the node and let node auto-repair "
                f"reboot or replace it; kubectl get events --field-selector involvedObject.name={name} and dmesg "
                "(NVRM: Xid) name the GPU",
                "node.accelerated-hardware",
            )
        elif c and c.status == "False":
            add(
                "warning",
                f"{ctype}=False{_why(c)}",
                f"the EKS node monitoring agent reports a {ctype[:-5].lower()} fault: read the condition message and "
                "the node's events; cordon the node if it persists",
                "node.hardware-condition",
            )
    for ctype, fix in _PRESSURE_FIX.items():
        c = conds.get(ctype)
        if c and c.status == "True":
            add("warning", f"{ctype}=True{_why(c)}: the kubelet evicts pods and rejects new ones", fix, "node.pressure")

    gpu = is_gpu_node(node)
    cap, alloc = _gpus(node.capacity or {}), _gpus(node.allocatable or {})
    # A paste cut inside Allocatable shows some of its resources: a GPU resource it does not show is unknown, not 0.
    alloc_known = node.allocatable is not None and (node.cut != "Allocatable" or bool(alloc))
    plugin_age = min((age for pod, age in node.ages.items() if pod.startswith("nvidia-device-plugin")), default=None)
    if gpu and ready and ready.status == "True" and alloc_known and not sum(alloc.values()):
        if sum(cap.values()) and plugin_age is not None and plugin_age < _RESTART_GRACE_S:
            add(
                "warning",
                f"allocatable nvidia.com/gpu is 0 (capacity {sum(cap.values())}) while the device plugin "
                f"pod is {plugin_age}s old: it is still registering the GPUs with the kubelet",
                "wait a minute and describe the node again; if allocatable stays 0, read the device plugin pod's log "
                "(kubectl logs -n <namespace> <nvidia-device-plugin pod>) -- do not replace the node for this",
                "node.device-plugin-restarting",
            )
        elif sum(cap.values()):
            add(
                "critical",
                f"Ready but all {sum(cap.values())} GPUs are unhealthy (capacity {sum(cap.values())}, allocatable 0)",
                "the device plugin withdrew every GPU: read the nvidia-device-plugin-daemonset pod log on this node "
                "and dmesg (NVRM: Xid), run DCGM diagnostics, then drain and repair or replace the node",
                "node.gpu-not-allocatable",
            )
        else:
            add(
                "critical",
                "Ready but advertises no allocatable nvidia.com/gpu: the device plugin never registered",
                "check the nvidia-device-plugin-daemonset pod on this node (kubectl get pods -A -o wide "
                f"--field-selector spec.nodeName={name}) and the nvidia-operator-validator logs (driver and toolkit "
                "validation); the device plugin DaemonSet must tolerate the node's taints",
                "node.gpu-not-allocatable",
            )
    elif node.allocatable is not None:
        for res, n in sorted(cap.items()):
            if res in alloc and 0 < alloc[res] < n:
                add(
                    "warning",
                    f"{res}: capacity {n} but allocatable {alloc[res]}: {n - alloc[res]} device(s) marked unhealthy",
                    "the device plugin withdrew GPUs after an error: read its pod log on this node and dmesg "
                    "(NVRM: Xid) and run DCGM diagnostics (dcgmi diag -r 2); after a contained, recoverable XID "
                    "(e.g. 94) whose diagnostics pass, restarting the device plugin pod advertises the GPU again "
                    "(it does not re-check a withdrawn GPU by itself); otherwise drain and repair or replace the node",
                    "node.gpu-unhealthy",
                )
    # Fleet hygiene is gpufleet's to enforce only on the nodes it manages (their node-group label); elsewhere it is
    # context, since a small or single-tenant cluster runs fine without a taint or GFD.
    hygiene: Severity = "warning" if LABEL_NODE_GROUP in node.labels else "info"
    if (
        gpu
        and node.taints is not None
        and node.cut != "Taints"
        and not any(t.key == "nvidia.com/gpu" for t in node.taints)
    ):
        add(
            hygiene,
            "no nvidia.com/gpu taint: pods that do not ask for GPUs can land here and take its CPU and memory",
            "taint the node group nvidia.com/gpu=true:NoSchedule (EKS API: key nvidia.com/gpu, value true, effect "
            "NO_SCHEDULE; gpufleet: nodeGroups[].taints); GPU pods and the GPU DaemonSets must tolerate it",
            "node.no-gpu-taint",
        )
    if gpu and node.labels and PRODUCT not in node.labels and node.cut != "Labels":
        add(
            hygiene,
            f"no {PRODUCT} label: GPU Feature Discovery has not labelled this node",
            "run GPU Feature Discovery (GPU Operator gfd.enabled with Node Feature Discovery) and make sure its "
            "DaemonSet tolerates the node's taints; nodeSelectors and Kueue flavors on GPU labels cannot match "
            "until then",
            "node.no-product-label",
        )
    if node.cut != "Labels":  # a label the cut removed would read as a contradiction
        out += _mig_and_sharing(source, name, node.labels)
    out += _teams(source, name, node, hygiene)
    return out


_PRESSURE_FIX = {
    "MemoryPressure": (
        "find the pods without memory limits (data loaders, pinned host buffers) and size their "
        "requests, or move the job to an instance with more host memory"
    ),
    "DiskPressure": (
        "large training images and checkpoints fill the root volume: grow the node group's disk or put "
        "containerd and scratch on the instance-store NVMe (localStorage: RAID0), and prune old images"
    ),
    "PIDPressure": (
        "a pod forks without bound (data loader workers, a process leak): cap num_workers and set the "
        "kubelet podPidsLimit"
    ),
}


def _why(c: Condition) -> str:
    detail = ": ".join(x for x in (c.reason, c.message) if x)
    return f" ({detail})" if detail else ""


def _mig_and_sharing(source: str, name: str, labels: dict[str, str]) -> list[LogFinding]:
    out = []
    cfg, state = labels.get(MIG_CONFIG), labels.get(MIG_STATE)
    mig_on = bool(cfg) and cfg != "all-disabled"
    if cfg and state != "success":
        out.append(
            LogFinding(
                "warning",
                source,
                name,
                f"{MIG_CONFIG}={cfg} but {MIG_STATE}={state or '(absent)'}: the MIG layout is not applied",
                "MIG Manager has not finished: read the nvidia-mig-manager pod log on this node; it needs the GPUs free"
                " (drain GPU pods) and may reboot the node ('rebooting'); 'failed' means the profile does not fit"
                " this GPU",
                "node.mig-pending",
            )
        )
    if mig_on and labels.get(MIG_CAPABLE) == "false":
        out.append(
            LogFinding(
                "warning",
                source,
                name,
                f"{MIG_CONFIG}={cfg} on a node whose GPUs are not MIG-capable ({MIG_CAPABLE}=false)",
                "remove the MIG profile from this node group, or move it to a MIG-capable node group "
                "(A100, H100, H200, B200)",
                "node.mig-not-capable",
            )
        )
    problems = _sharing_problems(labels, cfg, mig_on)
    if problems:
        out.append(
            LogFinding(
                "warning",
                source,
                name,
                "; ".join(problems),
                f"make the node group's labels agree with its sharing mode: {DP_CONFIG} must name the device plugin"
                f" ConfigMap key with that mode's replicas and {MIG_CONFIG} the MIG profile (all-disabled otherwise);"
                " then restart the nvidia-device-plugin and gpu-feature-discovery pods on the node so the labels are"
                " refreshed",
                "node.sharing-inconsistent",
            )
        )
    return out


def _sharing_problems(labels: dict[str, str], cfg: str | None, mig_on: bool) -> list[str]:
    strategy, replicas = labels.get(STRATEGY), _int(labels.get(REPLICAS))
    problems = []
    if strategy in ("time-slicing", "mps") and (replicas or 0) < 2:
        problems.append(f"{STRATEGY}={strategy} but {REPLICAS}={labels.get(REPLICAS, '(absent)')}")
    if strategy == "none" and (replicas or 0) > 1:
        problems.append(f"{REPLICAS}={replicas} but {STRATEGY}=none")
    if strategy == "mps" and mig_on:
        problems.append(
            f"MPS sharing on MIG-enabled GPUs ({MIG_CONFIG}={cfg}), which the device plugin does not support"
        )
    fleet = labels.get(FLEET_SHARING)
    mode = re.sub(r"[-_ ]", "", fleet or "").lower()
    want = {"exclusive": "none", "timeslicing": "time-slicing", "mps": "mps", "mig": "none"}.get(mode)
    if fleet and want and strategy and strategy != want:
        problems.append(f"{FLEET_SHARING}={fleet} but {STRATEGY}={strategy}")
    elif strategy and (dp := labels.get(DP_CONFIG)):
        # A config key's name is free text; only a name that says "mps" or "time-slicing" is evidence.
        hint = "mps" if "mps" in dp.lower() else "time-slicing" if re.search(r"time|slic", dp.lower()) else None
        if hint and hint != strategy:
            problems.append(f"{DP_CONFIG}={dp} but {STRATEGY}={strategy}")
    if fleet and mode == "mig" and not mig_on:
        problems.append(f"{FLEET_SHARING}={fleet} but {MIG_CONFIG} is {cfg or '(absent)'}")
    if fleet and mode in ("exclusive", "timeslicing", "mps") and mig_on:
        problems.append(f"{FLEET_SHARING}={fleet} but {MIG_CONFIG}={cfg}")
    return problems


def _teams(source: str, name: str, node: Node, hygiene: Severity) -> list[LogFinding]:
    if node.pods is None or not is_gpu_node(node):
        return []
    requested = _int((node.allocated or {}).get("nvidia.com/gpu"))
    teams = sorted({ns for ns, _ in node.pods if ns not in _SYSTEM_NS and not ns.startswith(_SYSTEM_PREFIXES)})
    if len(teams) < 2 or requested == 0:
        return []
    labels = node.labels
    shared = is_shared(labels)
    # Non-terminated Pods shows no GPU requests per pod, so this names namespaces, not proven GPU users.
    return [
        LogFinding(
            "info" if shared else hygiene,
            source,
            name,
            f"pods from {len(teams)} team namespaces share this GPU node: {', '.join(teams)}",
            "give each team its own node group (taint and label) or admit GPU work only through Kueue flavors that map "
            "teams to node groups; share a node on purpose with time-slicing, MPS or MIG",
            "node.several-teams",
        )
    ]


def is_shared(labels: dict[str, str]) -> bool:
    """Sharing on purpose: GFD's sharing-strategy label, or (GFD before it had one) replicas > 1 and the "-SHARED"
    product suffix it appends for time-sliced GPUs, or a MIG layout."""
    return (
        labels.get(STRATEGY) in ("time-slicing", "mps")
        or (_int(labels.get(REPLICAS)) or 0) > 1
        or labels.get(PRODUCT, "").endswith("-SHARED")
        or labels.get(MIG_CONFIG, "all-disabled") != "all-disabled"
    )


def check_describe(source: str, text: str) -> list[LogFinding]:
    nodes = parse_nodes(text)
    if not nodes:
        return [
            LogFinding(
                "warning",
                source,
                "input",
                "not `kubectl describe node` output (no Name:, Labels:, Conditions:, Capacity:, Allocatable: "
                "or pods section)",
                "pass the output of kubectl describe node NODE",
                "input.not-node-describe",
            )
        ]
    return [f for node in nodes for f in check_node(source, node)]
