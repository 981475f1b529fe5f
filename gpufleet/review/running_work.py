"""What a change between two synth trees does to work running on the GPU nodes, beyond replaced or rolled node
groups (gpufleet.review.impact): the GPU Operator's version and driver, its operands' configs (MIG profiles, device
plugin sharing, DCGM counters). Pure: inventories in, `Effect`s out.

Why, with sources: docs/policies-and-diff.md, "Design notes", gpufleet/review/running_work.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from gpufleet.base.inputs import is_count, yaml_beyond_bounds
from gpufleet.facts import catalog
from gpufleet.plan.manifests.sharing import DEVICE_PLUGIN_CONFIGMAP, MIG_CONFIGMAP
from gpufleet.plan.manifests.telemetry import DCGM_METRICS_CONFIGMAP
from gpufleet.review.impact import CONFIG_MAP, NODE_POOL, Effect, NodeImpact, field_changes, fleet_cost
from gpufleet.spec.names import LABEL_WORKLOAD_CLASS, MIG_DISABLED

OPERATOR_RELEASE = "gpu-operator"  # the foundation stage's Helm release name (gpufleet/plan/stages/foundation.py)
KUEUE_RELEASE = "kueue"  # the admission stage's (gpufleet/plan/stages/admission.py)
RELEASE = "kubernetes:helm.sh/v3:Release"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"[0-9]+", text))


def _by_name(entries: Mapping[str, Mapping[str, Any]], rtype: str, name: str) -> tuple[str, Mapping[str, Any]] | None:
    for rid, entry in entries.items():
        inputs = entry.get("inputs") or {}
        if entry.get("type") == rtype and (
            inputs.get("name") == name or (inputs.get("metadata") or {}).get("name") == name
        ):
            return rid, inputs
    return None


def _operator(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    a, b = _by_name(old, RELEASE, OPERATOR_RELEASE), _by_name(new, RELEASE, OPERATOR_RELEASE)
    if a is None or b is None:
        return []
    rid, (va, vb) = b[0], (str(a[1].get("version", "")), str(b[1].get("version", "")))
    out = []
    if va != vb:
        out.append(
            Effect(
                id=rid,
                disruptive=False,
                what=(
                    f"GPU Operator {va} -> {vb}: every operand (device plugin, GPU feature discovery, DCGM, DCGM"
                    " exporter, validator, MIG manager) restarts on every GPU node; running pods keep their GPUs"
                ),
            )
        )
        if _version(vb) < _version(va):
            out.append(
                Effect(
                    id=rid,
                    disruptive=True,
                    what=(
                        f"DOWNGRADE of the GPU Operator {va} -> {vb}: Helm does not downgrade CRDs, so the"
                        f" ClusterPolicy CRD stays at {va}; check the release notes of {va} for migrations that do not"
                        " roll back"
                    ),
                )
            )
    values = field_changes((a[1].get("values") or {}), (b[1].get("values") or {}))
    driver = {p: v for p, v in values.items() if p.startswith("driver.")}
    if driver:
        old_v, new_v = values.get("driver.version", ("-", "-"))
        out.append(
            Effect(
                id=rid,
                disruptive=True,
                what=(
                    f"GPU driver change ({', '.join(sorted(driver))}; version {old_v} -> {new_v}): the driver pod on"
                    " every GPU node unloads and reloads the kernel module; GPU pods on a node stop while it does:"
                    " drain the nodes (node by node) first"
                ),
            )
        )
    if any(p.startswith("dcgmExporter.") for p in values):
        out.append(
            Effect(
                id=rid,
                disruptive=False,
                what=(
                    "DCGM exporter pods restart on every GPU node (changed counters or settings): a gap of about a"
                    " minute in GPU metrics; running work is unaffected"
                ),
            )
        )
    return out


def _releases(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    """Each Helm release other than the GPU Operator's (`_operator`) that stays and changes chart version or values:
    `helm upgrade` restarts its controller."""
    out = []
    for rid, entry in sorted(new.items()):
        before = old.get(rid)
        if entry.get("type") != RELEASE or before is None or before.get("type") != RELEASE:
            continue
        a, b = before.get("inputs") or {}, entry.get("inputs") or {}
        name = str(b.get("name") or rid)
        if name == OPERATOR_RELEASE:
            continue
        va, vb = str(a.get("version", "")), str(b.get("version", ""))
        values = sorted(field_changes(_mapping(a.get("values")), _mapping(b.get("values"))))
        if va == vb and not values:
            continue
        where = f"{name} ({b.get('namespace')})" if b.get("namespace") else name
        changed = [f"chart {va} -> {vb}"] if va != vb else []
        if values:
            shown = ", ".join(values[:3]) + (f" and {len(values) - 3} more" if len(values) > 3 else "")
            changed.append(f"values {shown}")
        if name == KUEUE_RELEASE and va == vb:
            restart = (
                "the Kueue controller restarts (its pod template carries the checksum of its Configuration): its"
                " replicas roll one at a time, admission waits while the leader changes, and admitted workloads keep"
                " running"
            )
        else:
            restart = (
                "its controller restarts where the change reaches its pod template (rolled a pod at a time); running"
                " GPU work is not restarted"
            )
        out.append(
            Effect(id=rid, disruptive=False, what=f"Helm release {where} is upgraded ({'; '.join(changed)}): {restart}")
        )
    return out


def _entries(inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict((inputs or {}).get("data") or {})


def _embedded(text: Any) -> dict[str, Any]:
    """A config file a ConfigMap holds, as a mapping; {} for one that is not YAML within the spec loader's bounds or
    not a mapping (a tree edited and sealed again may hold anything there)."""
    if not isinstance(text, str) or yaml_beyond_bounds(text) is not None:
        return {}
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError):
        return {}
    return data if isinstance(data, dict) else {}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mig(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    a, b = _by_name(old, CONFIG_MAP, MIG_CONFIGMAP), _by_name(new, CONFIG_MAP, MIG_CONFIGMAP)
    if b is None:
        return []
    before = _mapping(_embedded(_entries(a[1] if a else None).get("config.yaml")).get("mig-configs"))
    after = _mapping(_embedded(_entries(b[1]).get("config.yaml")).get("mig-configs"))
    out = []
    for group in sorted(set(before) | set(after)):
        if group in before and group != MIG_DISABLED and before.get(group) != after.get(group):
            out.append(
                Effect(
                    id=b[0],
                    disruptive=True,
                    what=(
                        f"MIG profile of node group {group} changes ({_profile(before.get(group))} ->"
                        f" {_profile(after.get(group))}): the MIG manager repartitions every GPU of the group and needs"
                        " them idle; running pods on those nodes lose their GPUs: drain the group first (kubectl drain"
                        f" -l gpufleet.io/node-group={group})"
                    ),
                )
            )
    return out


def _profile(config: Any) -> str:
    if not config:
        return "none"
    if not isinstance(config, list):
        return "?"
    devices = [d.get("mig-devices") for d in config if isinstance(d, Mapping) and d.get("mig-enabled")]
    return ", ".join(f"{k} x {v}" for d in devices if isinstance(d, Mapping) for k, v in d.items()) or "MIG off"


def _device_plugin(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    a, b = _by_name(old, CONFIG_MAP, DEVICE_PLUGIN_CONFIGMAP), _by_name(new, CONFIG_MAP, DEVICE_PLUGIN_CONFIGMAP)
    if a is None or b is None:
        return []
    before, after = _entries(a[1]), _entries(b[1])
    out = []
    for group in sorted(set(before) & set(after)):
        if before[group] == after[group]:
            continue
        if "mps" in _mapping(_embedded(before[group]).get("sharing")):
            out.append(
                Effect(
                    id=b[0],
                    disruptive=True,
                    what=(
                        f"MPS config of node group {group} changes: the MPS control daemon restarts and running pods on"
                        " the group lose their GPU: drain the group first"
                    ),
                )
            )
        else:
            out.append(
                Effect(
                    id=b[0],
                    disruptive=False,
                    what=(
                        f"device plugin config of node group {group} changes: the device plugin restarts and advertises"
                        " the new count; running pods keep their GPU (with fewer replicas the node stays"
                        " over-committed until they end)"
                    ),
                )
            )
    return out


def _dcgm_csv(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    a, b = _by_name(old, CONFIG_MAP, DCGM_METRICS_CONFIGMAP), _by_name(new, CONFIG_MAP, DCGM_METRICS_CONFIGMAP)
    if a is None or b is None or _entries(a[1]) == _entries(b[1]):
        return []
    return [
        Effect(
            id=b[0],
            disruptive=False,
            what=(
                "DCGM exporter counters change: the ConfigMap is patched in place; the exporter, which mounts the CSV"
                " with subPath and never sees the update, rolls through the CSV hash in the GPU Operator values"
            ),
        )
    ]


ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _node_access(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    """An access entry removed, or replaced by one for another principal, whose principal is the node role of a
    managed node group that stays: EKS creates that role's EC2_LINUX entry itself, and a principal is in one entry
    only (EKS user guide, creating access entries), so the entry deleted may be the one those nodes join through.

    Why: docs/policies-and-diff.md, "Design notes", running_work._node_access."""
    managed: dict[str, list[str]] = {}
    for entry in new.values():
        inputs = entry.get("inputs") or {}
        if entry.get("type") == NODE_GROUP and "nodeRoleArn" in inputs:
            name = str(inputs.get("nodeGroupNamePrefix") or inputs.get("nodeGroupName") or "").rstrip("-")
            managed.setdefault(str(inputs["nodeRoleArn"]), []).append(name)
    found = []
    for rid, entry in sorted(old.items()):
        principal = str((entry.get("inputs") or {}).get("principalArn"))
        if entry.get("type") != ACCESS_ENTRY or principal not in managed:
            continue
        after = new.get(rid)
        if after is not None and str((after.get("inputs") or {}).get("principalArn")) == principal:
            continue
        groups = ", ".join(sorted(managed[principal]))
        found.append(
            Effect(
                id=rid,
                disruptive=True,
                what=(
                    f"access entry {rid} of {principal} is deleted, and {principal} is the node role of managed node"
                    f" groups {groups}: a principal is in one access entry only, so where EKS let those nodes join"
                    " through this entry, they lose access to the cluster once it goes (aws eks"
                    " list-access-entries shows one entry for the role). Keep it: `pulumi state delete` its URN"
                    " before `pulumi up`, so the entry stays and the new one is created beside it"
                ),
            )
        )
    return found


JOB = "kubernetes:batch/v1:Job"
NCCL_GATE_PREFIX = "nccl-gate-"  # gpufleet/plan/manifests/network.py: the bandwidth gate of each EFA/RDMA group
PLANTED_FAULT_GATE = "gpufleet-planted-fault"  # gpufleet/plan/manifests/health.py: the health stage's verification


def _gates(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[Effect]:
    """A gate Job that is new or changed runs (again) on `pulumi up`: a Job's pod template is immutable, so any
    change replaces it and the replacement runs. What each gate does to the GPU nodes is shown."""
    found = []
    for rid, entry in new.items():
        inputs = entry.get("inputs") or {}
        name = str((inputs.get("metadata") or {}).get("name") or "")
        if entry.get("type") != JOB or (not name.startswith(NCCL_GATE_PREFIX) and name != PLANTED_FAULT_GATE):
            continue
        before = old.get(rid)
        if before is not None and (before.get("inputs") or {}) == inputs:
            continue
        spec = inputs.get("spec") or {}
        deadline = spec.get("activeDeadlineSeconds")
        limit = f" for up to {int(deadline) // 60} minutes" if isinstance(deadline, (int, float)) else ""
        runs = "runs" if before is None else "runs again (the Job is replaced)"
        if name == PLANTED_FAULT_GATE:
            what = (
                f"the planted-fault gate {runs}: it plants a fault on a real GPU node, which the health loop cordons"
                f" and drains (its pods are evicted){limit}"
            )
        else:
            pods = spec.get("parallelism") or 1
            what = (
                f"the bandwidth gate {name} {runs}: it holds {pods} GPU nodes of its group, every GPU of each,{limit}"
            )
        found.append(Effect(id=rid, disruptive=name == PLANTED_FAULT_GATE, what=what))
    return found


def drift_allowance(pool: Mapping[str, Any]) -> str | None:
    """How many of a NodePool's nodes Karpenter may disrupt at once for reason Drifted: the least `nodes` of the
    budgets that name Drifted or no reason, as written ("0", "1", "10%"); None when no budget applies (Karpenter's
    default is 10%).

    Why: docs/policies-and-diff.md, "Design notes", running_work.drift_allowance."""
    budgets = ((pool.get("spec") or {}).get("disruption") or {}).get("budgets") or []
    applies = [
        str(b.get("nodes"))
        for b in budgets
        if isinstance(b, Mapping) and "schedule" not in b and (not b.get("reasons") or "Drifted" in b["reasons"])
    ]
    if not applies:
        return None
    # A count and a percentage compare only against the pool's size, unknown here: the least count wins (a count is
    # a fixed ceiling), else the least percentage.
    counts = sorted((v for v in applies if is_count(v)), key=int)
    percents = sorted((v for v in applies if v.endswith("%") and is_count(v[:-1])), key=lambda v: int(v[:-1]))
    return counts[0] if counts else percents[0] if percents else None


def _pools(new: Mapping[str, Mapping[str, Any]], nodes: Sequence[NodeImpact]) -> list[Effect]:
    """What a drifted or removed Karpenter NodePool does to the work on its nodes (gpufleet.review.impact
    _pool_impacts): with a drift budget of 0 (gpufleet's Training and Interactive pools,
    gpufleet.plan.manifests.karpenter.disruption) nothing running is evicted: a drifted node leaves once empty; any
    other budget replaces the nodes that many at a time, each drained under its pods' PodDisruptionBudgets after
    Karpenter has launched its replacement."""
    out = []
    for n in nodes:
        if n.provisioner != "Karpenter":
            continue
        pool = (new.get(n.id) or {}).get("inputs") or {}
        labels = ((((pool.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}
        cls = labels.get(LABEL_WORKLOAD_CLASS)
        who = f"NodePool {n.node_group}" + (f" ({cls})" if cls else "")
        if n.action == "remove":
            out.append(
                Effect(
                    id=n.id,
                    disruptive=True,
                    what=(
                        f"{who} is removed: Karpenter drains and terminates every node it owns; their pods are evicted"
                        " (they stay Pending unless another pool fits them)"
                    ),
                )
            )
            continue
        allowance = drift_allowance(pool)
        after = ((pool.get("spec") or {}).get("disruption") or {}).get("consolidateAfter")
        if allowance == "0":
            out.append(
                Effect(
                    id=n.id,
                    disruptive=False,
                    what=(
                        f"{who} drifts: its drift budget is 0 (reason Drifted), so Karpenter takes no node that runs"
                        " work: each running job keeps its node, a drifted node leaves only once empty"
                        + (f" (consolidateAfter {after})" if after else "")
                        + ", and new pods land on nodes with the new settings"
                    ),
                )
            )
        else:
            at_a_time = f"{allowance} at a time" if allowance else "10% at a time (Karpenter's default budget)"
            out.append(
                Effect(
                    id=n.id,
                    disruptive=True,
                    what=(
                        f"{who} drifts: Karpenter replaces its nodes {at_a_time} (disruption budget), launching each"
                        " replacement first and then draining the drifted node under its pods' PodDisruptionBudgets:"
                        " running pods are evicted and rescheduled"
                    ),
                )
            )
    return out


def _gpu_model(instance_type: str | None) -> str | None:
    info = catalog.lookup(instance_type) if instance_type else None
    return info.gpu_model if info is not None and info.gpu_count else None


def _migrations(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]], nodes: Sequence[NodeImpact]
) -> list[Effect]:
    """A managed GPU node group removed in the same change that adds a Karpenter NodePool for the same GPU model: a
    migration done in one `pulumi up`.

    Why: docs/policies-and-diff.md, "Design notes", running_work._migrations."""
    removed = {n.node_group: n for n in nodes if n.action == "remove" and n.gpu and n.provisioner != "Karpenter"}
    if not removed:
        return []
    before = {c.node_group: c for c in fleet_cost(old.values()) if c.node_group in removed}
    pools = fleet_cost([e for rid, e in sorted(new.items()) if rid not in old and e.get("type") == NODE_POOL])
    out = []
    for name, group in sorted(before.items()):
        model = _gpu_model(group.instance_type)
        same = [p.node_group for p in pools if model is not None and _gpu_model(p.instance_type) == model]
        if same:
            out.append(
                Effect(
                    id=removed[name].id,
                    disruptive=True,
                    what=(
                        f"managed node group {name} ({model}) is removed in the same change that adds Karpenter"
                        f" NodePool {', '.join(same)} for the same GPUs: `pulumi up` creates the pool, then deletes"
                        " the group, whose nodes are drained and terminated with their jobs before the pool has a"
                        ' node; migrate in two steps (docs/karpenter.md, "Migrating from a managed node group")'
                    ),
                )
            )
    return out


def effects(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]], nodes: Sequence[NodeImpact] = ()
) -> list[Effect]:
    """Everything the change does to running GPU work, disruptive first (`nodes`: the report's node impacts, for
    what drifted or removed Karpenter pools do to their work)."""
    found = _operator(old, new) + _releases(old, new) + _mig(old, new) + _device_plugin(old, new) + _dcgm_csv(old, new)
    found += _gates(old, new)
    found += _pools(new, nodes) + _migrations(old, new, nodes) + _node_access(old, new)
    return sorted(found, key=lambda e: not e.disruptive)
