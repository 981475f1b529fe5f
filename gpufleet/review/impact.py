"""What a change between two synth trees does to the running fleet: per resource add / remove / update /
replace with the changed field paths, which node groups are replaced or rolled (and why), nvidia.com/gpu quota
changes per team, and the fleet's cost at min and max size (its GPU nodes and FSx for Lustre file systems). Pure:
inventory dicts in, a `Report` out.

Why, with sources: docs/policies-and-diff.md, "Design notes", gpufleet/review/impact.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.base.inputs import is_count
from gpufleet.facts import catalog, pricing
from gpufleet.plan.manifests.headroom import APP as HEADROOM_APP
from gpufleet.spec.names import GPU_RESOURCE, LABEL_NODE_GROUP, LABEL_TEAM, MIG_RESOURCE_PREFIX, TAG_RESERVED_INSTANCES
from gpufleet.tree.entries import LAUNCH_TEMPLATE, NODE_GROUP, group_name, is_gpu_node_group

# Field paths (prefixes) whose change replaces a resource, by type token.
FORCE_NEW: Mapping[str, tuple[str, ...]] = {
    NODE_GROUP: (
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    ),
    LAUNCH_TEMPLATE: ("name", "namePrefix"),
    # A provider whose region changes replaces every resource it manages (each then lives elsewhere).
    "pulumi:providers:aws": ("region",),
    # terraform-provider-aws internal/service/eks/cluster.go: ForceNew among the inputs gpufleet sets.
    "aws:eks/cluster:Cluster": (
        "accessConfig.bootstrapClusterCreatorAdminPermissions",
        "bootstrapSelfManagedAddons",
        "name",
        "roleArn",
    ),
    "aws:eks/addon:Addon": ("addonName", "clusterName"),
    # terraform-provider-aws internal/service/ssm/parameter.go: name is ForceNew; value, type and tier update.
    "aws:ssm/parameter:Parameter": ("name",),
    "aws:ec2/placementGroup:PlacementGroup": ("name", "strategy", "partitionCount", "spreadLevel"),
    # ec2/vpc_security_group.go: name, name_prefix, description and vpc_id are ForceNew; the rules
    # (vpc_security_group_ingress_rule.go, a plugin-framework resource) replace only with their security group.
    "aws:ec2/securityGroup:SecurityGroup": ("description", "name", "namePrefix", "vpcId"),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ("securityGroupId",),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ("securityGroupId",),
    "aws:iam/role:Role": ("name", "namePrefix"),
    "aws:s3/bucket:Bucket": ("bucket", "bucketPrefix"),
    "aws:s3/bucketV2:BucketV2": ("bucket", "bucketPrefix"),
    # The other AWS types gpufleet renders, ForceNew (RequiresReplace in plugin-framework resources) in
    # terraform-provider-aws internal/service/<service>/<resource>.go.
    "aws:eks/accessEntry:AccessEntry": ("clusterName", "principalArn", "type"),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": (
        "accessScope",
        "clusterName",
        "policyArn",
        "principalArn",
    ),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("clusterName", "namespace", "serviceAccount"),
    "aws:iam/rolePolicy:RolePolicy": ("name", "namePrefix", "role"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("policyArn", "role"),
    "aws:kms/alias:Alias": ("name", "namePrefix"),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": ("bucket", "expectedBucketOwner"),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": ("bucket",),
    "aws:s3/bucketPolicy:BucketPolicy": ("bucket",),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": ("bucket",),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "bucket",
        "expectedBucketOwner",
    ),
    "aws:s3/bucketVersioning:BucketVersioning": ("bucket", "expectedBucketOwner"),
    # terraform-provider-aws internal/service/fsx/lustre_file_system.go: ForceNew among the inputs gpufleet sets
    # (a smaller storage_capacity forces a new file system too, in its CustomizeDiff: not a path, not listed);
    # data_repository_association.go: the linked path on either side and the file system.
    "aws:fsx/lustreFileSystem:LustreFileSystem": ("deploymentType", "securityGroupIds", "storageType", "subnetIds"),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (
        "dataRepositoryPath",
        "fileSystemId",
        "fileSystemPath",
    ),
    # pulumi-kubernetes provider/pkg/provider/helm_release.go (Diff: forceNewFields).
    "kubernetes:helm.sh/v3:Release": ("name", "namespace"),
    # pulumi-kubernetes provider/pkg/provider/diff.go `forceNew`, tag v4.32.0 (the same table from v4.26.0 to the source
    # of July 2026, the newest read; the pinned 4.34.2 was not available), for the kinds gpufleet renders, and
    # StatefulSet.
    "kubernetes:apps/v1:DaemonSet": ("spec.selector",),
    "kubernetes:apps/v1:Deployment": ("spec.selector",),
    "kubernetes:apps/v1:StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    "kubernetes:batch/v1:Job": ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    "kubernetes:core/v1:Service": ("spec.clusterIP",),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
}
# Every Kubernetes object (diff.go metadataForceNewProperties). apiVersion and kind are in the type token, so a
# change of either is a new URN (a replacement before any field is looked at).
K8S_IDENTITY = ("metadata.name", "metadata.namespace")
# pulumi-kubernetes replaces a ConfigMap whose data changes unless the provider sets enableConfigMapMutable and the
# ConfigMap is not `immutable: true` (diff.go forceNewProperties, clients.IsImmutable on the new inputs; the
# option is off by default).
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CONFIG_MAP_DATA = ("data", "binaryData")
K8S_PROVIDER_TYPE = "pulumi:providers:kubernetes"
NODE_GROUP_ROLL = ("launchTemplate.version", "releaseVersion", "version")
# Launch template inputs that do not create a new template version.
LT_NO_VERSION = ("tags", "tagsAll", "description", "updateDefaultVersion", "defaultVersion")
QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")
PRICE_RECORD = "gpufleet:gpu_hour_price_usd"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
# NodePool fields that drift nothing (behavioural), and those that drift only the nodes no longer matching them.
POOL_NO_DRIFT = ("spec.limits", "spec.weight", "spec.disruption", "metadata")
POOL_MATCHED = ("spec.template.spec.requirements",)
# EC2NodeClass fields Karpenter does not hash: resolved selector terms (drift where the resolved value changes) and
# ipPrefixCount (nothing).
NODE_CLASS_NO_DRIFT = ("spec.ipPrefixCount", "metadata")
NODE_CLASS_MATCHED = (
    "spec.amiSelectorTerms",
    "spec.subnetSelectorTerms",
    "spec.securityGroupSelectorTerms",
    "spec.capacityReservationSelectorTerms",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    id: str
    type: str
    stage: str | None
    action: str  # add | remove | update | replace
    paths: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    protected: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeImpact:
    node_group: str
    id: str
    action: str  # replace | roll | remove; drift (a Karpenter NodePool's nodes)
    gpu: bool
    reasons: tuple[str, ...]
    provisioner: str = "ManagedNodeGroup"  # or Karpenter: node_group is the NodePool's name


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaChange:
    team: str
    flavor: str
    field: str
    old: str | None
    new: str | None
    # What one counted device is, from the flavor's annotations (kueue.ANN_DEVICES_PER_GPU): "GPUs", or e.g.
    # "TimeSlicing replicas, 4 per GPU"; "devices" when the tree does not say (trees written before it did).
    unit: str = "devices"
    per_gpu: int = 1  # the new tree's devices per GPU
    # The old tree's, where the flavor's devices per GPU changed with the quota (a MIG profile change under
    # strategy single keeps the resource nvidia.com/gpu and its count per GPU changes); None: per_gpu.
    old_per_gpu: int | None = None

    @property
    def in_gpus(self) -> bool:
        """Whether the values are devices other than whole GPUs on either side, so worth saying in GPUs."""
        return self.per_gpu > 1 or (self.old_per_gpu or 1) > 1

    def gpus(self, value: str | None, per_gpu: int | None = None) -> str:
        """A quota value in physical GPUs, for a shared or sliced flavor: "4 GPUs" from 16 replicas of 4 per GPU."""
        n = per_gpu or self.per_gpu
        if value is None or not self.in_gpus or not is_count(value):
            return ""
        return f"{int(value) / n:g} GPUs"

    def old_gpus(self) -> str:
        return self.gpus(self.old, self.old_per_gpu)

    def new_gpus(self) -> str:
        return self.gpus(self.new)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupCost:
    node_group: str
    instance_type: str | None
    gpus_per_node: int
    min_size: int
    max_size: int
    gpu_hour_usd: float | None
    price_source: str
    warm_pool: int = 0
    warm_pool_running: bool = False
    disk_gib: int = 0
    reserved: int = 0  # instances of an On-Demand Capacity Reservation, billed whether they run or not
    headroom: int = 0  # nodes the headroom placeholders keep running (nodeGroups[].headroom.nodes)

    @property
    def idle_size(self) -> int:
        """The nodes an idle group runs: its minSize, or more where headroom placeholders hold warm nodes."""
        return max(self.min_size, self.headroom)

    def monthly(self, size: int) -> float | None:
        """At `size` nodes (at least the reserved ones: pricing.billed_nodes), plus the warm pool's standing cost
        (running: the full rate; stopped or hibernated: the root volumes, as the cost stage's estimate counts it)."""
        if self.gpu_hour_usd is None:
            return None
        hourly = self.gpus_per_node * self.gpu_hour_usd
        pool = self.warm_pool * (
            hourly * pricing.HOURS_PER_MONTH if self.warm_pool_running else self.disk_gib * pricing.GP3_USD_PER_GB_MONTH
        )
        return pricing.billed_nodes(size, self.reserved) * hourly * pricing.HOURS_PER_MONTH + pool


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSystemCost:
    """An FSx for Lustre file system: billed by provisioned capacity whatever the nodes do, so the same at every
    size (gpufleet.plan.builders.fsx.monthly_usd, the prices of gpufleet.facts.pricing)."""

    id: str
    deployment_type: str
    capacity_gib: int
    per_unit_throughput: int | None  # MB/s/TiB; None for the scratch types

    @property
    def monthly(self) -> float | None:
        price = pricing.FSX_LUSTRE_USD_PER_GB_MONTH.get((self.deployment_type, self.per_unit_throughput))
        return None if price is None else self.capacity_gib * price


@dataclass(frozen=True, slots=True, kw_only=True)
class Effect:
    """What a change does to work running on the GPU nodes (gpufleet.review.running_work)."""

    id: str  # the resource whose change causes it
    disruptive: bool  # running GPU work stops (drain first) rather than a daemon restarting beside it
    what: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    environment: str | None
    stages: tuple[str, ...]
    changes: tuple[Change, ...]
    nodes: tuple[NodeImpact, ...]
    quotas: tuple[QuotaChange, ...]
    cost_old: tuple[GroupCost, ...]
    cost_new: tuple[GroupCost, ...]
    storage_old: tuple[FileSystemCost, ...] = ()
    storage_new: tuple[FileSystemCost, ...] = ()
    work: tuple[Effect, ...] = ()  # gpufleet.review.running_work, filled in by gpufleet.commands.diff


# ---------------------------------------------------------------------------------------------------------------
# Field paths.


def _key(prefix: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return f"{prefix}.{key}" if prefix else key
    return f'{prefix}["{key}"]'


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf paths of nested dicts/lists, e.g. `spec.containers[pause].image`, `labels["example.com/tier"]`.

    Why: docs/policies-and-diff.md, "Design notes", impact.flatten."""
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key in sorted(value, key=str):
            out.update(flatten(value[key], _key(prefix, str(key))))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{_item_keys(value)[i]}]"))
        return out
    return {prefix: value}


# EKS spells taint effects NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE (aws:eks/nodeGroup taints[].effect);
# a reviewer reads them the Kubernetes way.
K8S_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def _item_keys(items: list[Any]) -> list[str]:
    """How a list's items are addressed: by distinct `name`s, taints as `key=value:Effect`, else by index."""
    names = [item.get("name") if isinstance(item, Mapping) else None for item in items]
    if all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names):
        return [str(n) for n in names]
    taints = [
        (
            f"{t['key']}={t.get('value', '')}:{K8S_EFFECT.get(str(t['effect']), t['effect'])}"
            if isinstance(t, Mapping) and {"key", "effect"} <= set(t)
            else None
        )
        for t in items
    ]
    if all(taints) and len(set(taints)) == len(taints):
        return [str(t) for t in taints]
    return [str(i) for i in range(len(items))]


def field_changes(old: Any, new: Any, prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """Changed field paths -> (old, new) value; a subtree that exists on one side only is one path (its value the
    whole subtree, the other side _MISSING)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping) and old and new:
        out: dict[str, tuple[Any, Any]] = {}
        for key in set(old) | set(new):
            out.update(field_changes(old.get(key, _MISSING), new.get(key, _MISSING), _key(prefix, str(key))))
        return out
    if isinstance(old, list) and isinstance(new, list) and old and new:
        a, b = dict(zip(_item_keys(old), old, strict=True)), dict(zip(_item_keys(new), new, strict=True))
        out = {}
        for key in set(a) | set(b):
            out.update(field_changes(a.get(key, _MISSING), b.get(key, _MISSING), f"{prefix}[{key}]"))
        return out
    return {} if old == new else {prefix: (old, new)}


def path_order(path: str) -> list[tuple[int, int | str]]:
    """Sort key: numeric list indices in numeric order (`[2]` before `[10]`)."""
    return [(0, int(part)) if is_count(part) else (1, part) for part in re.split(r"\[([0-9]+)\]", path)]


def changed_paths(old: Any, new: Any) -> list[str]:
    return sorted(field_changes(old, new), key=path_order)


_MISSING = object()


def _under(path: str, prefixes: Iterable[str]) -> str | None:
    """The prefix `path` falls under (`instanceTypes[0]` is under `instanceTypes`), or None."""
    for prefix in prefixes:
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return prefix
        if prefix.startswith(path + ".") or prefix.startswith(path + "["):  # a whole subtree added or removed
            return prefix
    return None


def _short(value: Any) -> str:
    if value is _MISSING:
        return "(none)"
    text = repr(value) if not isinstance(value, str) else value
    text = text if "\n" not in text else f"<{text.count(chr(10)) + 1} lines>"
    return text if len(text) <= 60 else text[:57] + "..."


def _top(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


# ---------------------------------------------------------------------------------------------------------------
# Compare.


def _options(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "protect": bool(entry.get("protect")),
        "retainOnDelete": bool(entry.get("retainOnDelete")),
        "ignoreChanges": sorted(entry.get("ignoreChanges") or []),
        "replaceOnChanges": sorted(entry.get("replaceOnChanges") or []),
        "deleteBeforeReplace": bool(entry.get("deleteBeforeReplace")),
    }


def _ref_paths(inputs: Any, targets: Mapping[str, tuple[str, ...] | None]) -> dict[str, str]:
    """Input paths holding `<ref:X.attr>` where X is in `targets` and attr is one of its changed attributes
    (None = all attributes), mapped to the referenced `X.attr`."""
    out = {}
    for path, value in flatten(inputs).items():
        if not isinstance(value, str):
            continue
        for rid, attr in re.findall(r"<ref:([a-z0-9][a-z0-9-]*)\.([^>]*)>", value):
            attrs = targets.get(rid, ())
            if rid in targets and (attrs is None or attr in attrs):
                out[path] = f"{rid}.{attr}"
    return out


def _classify(
    entry: Mapping[str, Any], paths: Sequence[str], old: Any, new: Any, via: Mapping[str, str], configmaps_mutable: bool
) -> tuple[str, list[str]]:
    """("replace" | "update", reasons) for a resource whose input `paths` changed (`via`: path -> the
    `<ref:X.attr>` of a changed resource it holds)."""
    rtype = str(entry.get("type"))
    prefixes = FORCE_NEW.get(rtype, ())
    if rtype.startswith("kubernetes:") and rtype != "kubernetes:helm.sh/v3:Release":
        prefixes = prefixes + K8S_IDENTITY
    if rtype == CONFIG_MAP and (not configmaps_mutable or isinstance(new, Mapping) and new.get("immutable") is True):
        prefixes = prefixes + CONFIG_MAP_DATA
    # What the resource itself declares the API server will not update in place (Pulumi replaceOnChanges).
    prefixes = prefixes + tuple(entry.get("replaceOnChanges") or ())
    reasons = []
    fields = field_changes(old, new)
    for path in paths:
        if not _under(path, prefixes):
            continue
        a, b = fields.get(path, (_MISSING, _MISSING))
        if path in via and a == b:
            reasons.append(f"{path}: new {via[path]} at deploy")
        else:
            reasons.append(f"{path}: {_short(a)} -> {_short(b)}")
    if reasons and entry.get("deleteBeforeReplace"):
        reasons.append(
            "deleteBeforeReplace: its name is fixed, so the old object is deleted before the new one is created"
        )
    return ("replace" if reasons else "update"), reasons


def configmaps_mutable(entries: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether the Kubernetes provider patches ConfigMaps in place (its `enableConfigMapMutable` input; provider inputs
    are recorded as strings)."""
    return any(
        e.get("type") == K8S_PROVIDER_TYPE and (e.get("inputs") or {}).get("enableConfigMapMutable") in (True, "true")
        for e in entries.values()
    )


def compare(
    old: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
    *,
    stages: Sequence[str] = (),
    environment: str | None = None,
) -> Report:
    """Every change between two inventories (resource id -> inventory entry), classified."""
    fixed: dict[str, Change] = {}
    for rid in sorted(set(old) - set(new)):
        e = old[rid]
        fixed[rid] = Change(
            id=rid, type=str(e.get("type")), stage=e.get("stage"), action="remove", protected=bool(e.get("protect"))
        )
    for rid in sorted(set(new) - set(old)):
        e = new[rid]
        fixed[rid] = Change(id=rid, type=str(e.get("type")), stage=e.get("stage"), action="add")
    common = sorted(set(old) & set(new))
    mutable = configmaps_mutable(new)
    own_inputs: dict[str, list[str]] = {}
    own_options: dict[str, list[str]] = {}
    for rid in common:
        a, b = old[rid], new[rid]
        own_inputs[rid] = changed_paths(a.get("inputs"), b.get("inputs"))
        own_options[rid] = [f"({k})" for k, v in _options(a).items() if _options(b)[k] != v]
        if a.get("type") != b.get("type") or a.get("parent") != b.get("parent"):
            why = "type" if a.get("type") != b.get("type") else "parent"
            fixed[rid] = Change(
                id=rid,
                type=str(b.get("type")),
                stage=b.get("stage"),
                action="replace",
                paths=tuple(own_inputs[rid] + own_options[rid]),
                reasons=(f"{why} changed: {a.get(why)} -> {b.get(why)} (a new Pulumi URN)",),
                protected=bool(a.get("protect")),
            )
    # Iterate to a fixpoint: an input holding a ref to a replaced resource (or to the version of a launch
    # template that gets a new version) changes at deploy time, which may replace or version its holder.
    changes: dict[str, Change] = dict(fixed)
    versioned: set[str] = set()
    while True:
        targets: dict[str, tuple[str, ...] | None] = {rid: ("latestVersion", "defaultVersion") for rid in versioned}
        targets.update({rid: None for rid, c in changes.items() if c.action == "replace"})
        current: dict[str, Change] = dict(fixed)
        for rid in common:
            if rid in fixed:
                continue
            a, b = old[rid], new[rid]
            via = _ref_paths(b.get("inputs"), targets)
            paths = sorted(set(own_inputs[rid]) | set(via))
            if not paths and not own_options[rid]:
                continue
            action, reasons = _classify(b, paths, a.get("inputs"), b.get("inputs"), via, mutable)
            current[rid] = Change(
                id=rid,
                type=str(b.get("type")),
                stage=b.get("stage"),
                action=action,
                paths=tuple(paths + own_options[rid]),
                reasons=tuple(reasons),
                protected=bool(a.get("protect")),
            )
            if (
                b.get("type") == LAUNCH_TEMPLATE
                and action == "update"
                and any(_top(p) not in LT_NO_VERSION for p in paths)
            ):
                versioned.add(rid)
        if current == changes:
            break
        changes = current
    ordered = sorted(changes.values(), key=lambda c: (_stage_index(c.stage, stages), c.action != "replace", c.id))
    return Report(
        environment=environment,
        stages=tuple(stages),
        changes=tuple(ordered),
        nodes=tuple(_node_impacts(old, new, changes, versioned)),
        quotas=tuple(quota_changes(old.values(), new.values())),
        cost_old=tuple(fleet_cost(old.values())),
        cost_new=tuple(repriced(fleet_cost(old.values()), fleet_cost(new.values()))),
        storage_old=tuple(storage_cost(old.values())),
        storage_new=tuple(storage_cost(new.values())),
    )


def _stage_index(stage: str | None, stages: Sequence[str]) -> int:
    return stages.index(stage) if stage in stages else len(stages)


def _node_impacts(
    old: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
    changes: Mapping[str, Change],
    lt_versioned: set[str],
) -> list[NodeImpact]:
    out = _pool_impacts(old, new, changes)
    for rid, change in sorted(changes.items()):
        if change.type != NODE_GROUP:
            continue
        entry = new.get(rid) or old[rid]
        name, gpu = group_name(entry), is_gpu_node_group(entry)
        if change.action == "remove":
            out.append(
                NodeImpact(
                    node_group=name,
                    id=rid,
                    action="remove",
                    gpu=gpu,
                    reasons=("node group removed: its nodes are drained and terminated",),
                )
            )
        elif change.action == "replace":
            out.append(NodeImpact(node_group=name, id=rid, action="replace", gpu=gpu, reasons=change.reasons))
        elif change.action == "update":
            rolls = [p for p in change.paths if _under(p, NODE_GROUP_ROLL)]
            if rolls:
                flat_a, flat_b = flatten(old[rid].get("inputs")), flatten(new[rid].get("inputs"))
                reasons = []
                for p in rolls:
                    src = next((lt for lt in lt_versioned if f"<ref:{lt}." in str(flat_b.get(p, ""))), None)
                    reasons.append(
                        f"{p}: new version of launch template {src} ({', '.join(_lt_paths(old, new, src))})"
                        if src
                        else f"{p}: {_short(flat_a.get(p))} -> {_short(flat_b.get(p))}"
                    )
                out.append(NodeImpact(node_group=name, id=rid, action="roll", gpu=gpu, reasons=tuple(reasons)))
    return out


def _pool_name(entry: Mapping[str, Any]) -> str:
    return str(((entry.get("inputs") or {}).get("metadata") or {}).get("name") or entry.get("id"))


def _drift_reasons(change: Change, no_drift: tuple[str, ...], matched: tuple[str, ...], what: str) -> list[str]:
    """Why `change` (to a NodePool or EC2NodeClass) drifts nodes: each path that Karpenter hashes ("every node"),
    or that it resolves per node ("nodes no longer matching")."""
    reasons = []
    for path in change.paths:
        if path.startswith("(") or _under(path, no_drift):
            continue
        who = "the nodes it no longer selects" if _under(path, matched) else "every node"
        reasons.append(f"{what} {path} changed: drifts {who}")
    return reasons


def _pool_impacts(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]], changes: Mapping[str, Change]
) -> list[NodeImpact]:
    """What NodePool and EC2NodeClass changes do to the nodes of each pool: drift (Karpenter replaces them under the
    pool's disruption budgets), or removal (a deleted or renamed NodePool's nodes go with it)."""
    pools = {rid: e for rid, e in new.items() if e.get("type") == NODE_POOL}
    reasons: dict[str, list[str]] = {}
    out: list[NodeImpact] = []
    for rid, change in sorted(changes.items()):
        if change.type == NODE_POOL and change.action in ("remove", "replace"):
            entry = new.get(rid) or old[rid]
            why = "NodePool removed" if change.action == "remove" else "NodePool replaced"
            out.append(
                NodeImpact(
                    node_group=_pool_name(old.get(rid) or entry),
                    id=rid,
                    action="remove",
                    gpu=True,
                    reasons=(f"{why}: Karpenter drains and terminates every node it owns", *change.reasons),
                    provisioner="Karpenter",
                )
            )
        elif change.type == NODE_POOL and change.action == "update":
            found = _drift_reasons(change, POOL_NO_DRIFT, POOL_MATCHED, "NodePool")
            if found:
                reasons.setdefault(rid, []).extend(found)
        elif change.type == NODE_CLASS and change.action == "update":
            name = _pool_name(new[rid])
            found = _drift_reasons(change, NODE_CLASS_NO_DRIFT, NODE_CLASS_MATCHED, f"EC2NodeClass {name}")
            for pool_id, pool in pools.items():
                ref = (((pool.get("inputs") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
                if found and (ref.get("nodeClassRef") or {}).get("name") == name:
                    reasons.setdefault(pool_id, []).extend(found)
    for rid in sorted(reasons):
        out.append(
            NodeImpact(
                node_group=_pool_name(new[rid]),
                id=rid,
                action="drift",
                gpu=True,
                reasons=tuple(reasons[rid]),
                provisioner="Karpenter",
            )
        )
    return out


def _lt_paths(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]], rid: str) -> list[str]:
    paths = [p for p in changed_paths(old[rid].get("inputs"), new[rid].get("inputs")) if _top(p) not in LT_NO_VERSION]
    return paths if len(paths) <= 4 else paths[:4] + [f"{len(paths) - 4} more"]


# ---------------------------------------------------------------------------------------------------------------
# Quotas and cost.


def _kube(entries: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [
        e["inputs"]
        for e in entries
        if str(e.get("type", "")).startswith("kubernetes:")
        and isinstance(e.get("inputs"), Mapping)
        and e["inputs"].get("kind") == kind
    ]


def gpu_quotas(entries: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], str]:
    """(team, flavor, field) -> value for nvidia.com/gpu in every ClusterQueue (team = the queue's name); the MIG
    resources of a mixed group as `field (nvidia.com/mig-<profile>)`."""
    out = {}
    for cq in _kube(entries, "ClusterQueue"):
        meta = cq.get("metadata") or {}
        team = str((meta.get("labels") or {}).get(LABEL_TEAM) or meta.get("name"))
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    name = str(res.get("name"))
                    if name != GPU_RESOURCE and not name.startswith(MIG_RESOURCE_PREFIX):
                        continue
                    for fld in QUOTA_FIELDS:
                        if res.get(fld) is not None:
                            out[(team, str(flavor.get("name")), fld if name == GPU_RESOURCE else f"{fld} ({name})")] = (
                                str(res[fld])
                            )
    return out


def flavor_units(entries: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], tuple[str, int]]:
    """(flavor, resource) -> (unit, devices per GPU) from the ResourceFlavors' annotations."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for flavor in _kube(entries, "ResourceFlavor"):
        meta = flavor.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        try:
            per_gpu = json.loads(str(annotations.get("gpufleet.io/devices-per-gpu", "")))
        except ValueError:
            continue
        strategy = str(annotations.get("gpufleet.io/sharing", ""))
        for resource, n in per_gpu.items() if isinstance(per_gpu, dict) else ():
            if not isinstance(n, int) or n < 1:
                continue
            kind = "MIG slices" if strategy == "MIG" else f"{strategy} replicas"
            out[(str(meta.get("name")), str(resource))] = ("GPUs" if n == 1 else f"{kind}, {n} per GPU", n)
    return out


def _resource_of(field: str) -> str:
    """The resource a gpu_quotas field names: "nominalQuota (nvidia.com/mig-1g.5gb)" -> nvidia.com/mig-1g.5gb."""
    match = re.search(r"\((\S+)\)$", field)
    return match.group(1) if match else GPU_RESOURCE


def quota_changes(old: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> list[QuotaChange]:
    old, new = list(old), list(new)
    a, b = gpu_quotas(old), gpu_quotas(new)
    units_old, units_new = flavor_units(old), flavor_units(new)
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) == b.get(k):
            continue
        key = (k[1], _resource_of(k[2]))
        unit, per_gpu = units_new.get(key) or units_old.get(key) or ("devices", 1)
        old_unit, old_per_gpu = units_old.get(key) or (unit, per_gpu)
        out.append(
            QuotaChange(
                team=k[0],
                flavor=k[1],
                field=k[2],
                old=a.get(k),
                new=b.get(k),
                unit=unit if old_unit == unit else f"{old_unit} -> {unit}",
                per_gpu=per_gpu,
                old_per_gpu=old_per_gpu if old_per_gpu != per_gpu else None,
            )
        )
    return out


def _prices(entries: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """USD per GPU-hour by node group, as the cost stage deploys them (`gpufleet:gpu_hour_price_usd` records)."""
    out = {}
    for rule in _kube(entries, "PrometheusRule"):
        for group in (rule.get("spec") or {}).get("groups") or []:
            for record in group.get("rules") or []:
                match = re.fullmatch(r"\s*vector\(\s*([0-9.eE+-]+)\s*\)\s*", str(record.get("expr", "")))
                name = (record.get("labels") or {}).get("node_group")
                if record.get("record") == PRICE_RECORD and match and name:
                    out[str(name)] = float(match.group(1))
    return out


def fleet_cost(entries: Iterable[Mapping[str, Any]]) -> list[GroupCost]:
    entries = list(entries)
    prices = _prices(entries)
    templates = {e["id"]: e for e in entries if e.get("type") == LAUNCH_TEMPLATE}
    out = []
    for e in entries:
        if not is_gpu_node_group(e):
            continue
        args = e.get("inputs") or {}
        types = args.get("instanceTypes") or []
        itype = types[0] if types else None
        if itype is None:  # Capacity Block groups name the type in their launch template
            ref = re.match(r"<ref:([a-z0-9-]+)\.", str((args.get("launchTemplate") or {}).get("id", "")))
            itype = (templates.get(ref.group(1), {}).get("inputs") or {}).get("instanceType") if ref else None
        info = catalog.lookup(itype) if isinstance(itype, str) else None
        name = group_name(e)
        scaling = args.get("scalingConfig") or {}
        price, source = prices.get(name), "cost stage"
        if price is None and isinstance(itype, str):
            price, source = pricing.gpu_hour_usd(itype), f"on-demand list price {pricing.PRICES_AS_OF}"
        pool = args.get("warmPoolConfig") or {}
        lt_ref = re.match(r"<ref:([a-z0-9-]+)\.", str((args.get("launchTemplate") or {}).get("id", "")))
        volumes = (
            (templates.get(lt_ref.group(1), {}).get("inputs") or {}).get("blockDeviceMappings") or [] if lt_ref else []
        )
        out.append(
            GroupCost(
                node_group=name,
                instance_type=itype,
                gpus_per_node=info.gpu_count if info else 0,
                min_size=int(scaling.get("minSize") or 0),
                max_size=int(scaling.get("maxSize") or 0),
                gpu_hour_usd=price,
                price_source=source if price is not None else "unknown",
                warm_pool=int(pool.get("minSize") or 0),
                warm_pool_running=pool.get("poolState") == "RUNNING",
                disk_gib=sum(int((v.get("ebs") or {}).get("volumeSize") or 0) for v in volumes),
                reserved=int((args.get("tags") or {}).get(TAG_RESERVED_INSTANCES) or 0),
            )
        )
    out += [c for e in entries if e.get("type") == NODE_POOL and (c := _pool_cost(e, prices)) is not None]
    warm = _headroom(entries)
    return sorted(
        (dataclasses.replace(c, headroom=warm[c.node_group]) if c.node_group in warm else c for c in out),
        key=lambda c: c.node_group,
    )


LUSTRE_FILE_SYSTEM = "aws:fsx/lustreFileSystem:LustreFileSystem"


def storage_cost(entries: Iterable[Mapping[str, Any]]) -> list[FileSystemCost]:
    """Each FSx for Lustre file system of a tree, by its inputs (gpufleet.plan.builders.fsx: deploymentType,
    storageCapacity in GiB, perUnitStorageThroughput for the persistent types)."""
    out = []
    for e in entries:
        args = e.get("inputs") or {}
        capacity, per_unit = args.get("storageCapacity"), args.get("perUnitStorageThroughput")
        if e.get("type") != LUSTRE_FILE_SYSTEM or not isinstance(capacity, int):
            continue
        out.append(
            FileSystemCost(
                id=str(e.get("id")),
                deployment_type=str(args.get("deploymentType")),
                capacity_gib=capacity,
                per_unit_throughput=per_unit if isinstance(per_unit, int) else None,
            )
        )
    return sorted(out, key=lambda c: c.id)


def _headroom(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per node group, the nodes its headroom placeholders hold: the replicas of gpufleet's headroom Deployment,
    one pod per node (gpufleet.plan.manifests.headroom)."""
    out: dict[str, int] = {}
    for e in entries:
        obj = e.get("inputs") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if e.get("type") == DEPLOYMENT and labels.get("app.kubernetes.io/name") == HEADROOM_APP:
            replicas = (obj.get("spec") or {}).get("replicas")
            if isinstance(replicas, int) and isinstance(labels.get(LABEL_NODE_GROUP), str):
                out[labels[LABEL_NODE_GROUP]] = replicas
    return out


def _pool_cost(entry: Mapping[str, Any], prices: Mapping[str, float]) -> GroupCost | None:
    """A Karpenter NodePool's cost figures: its instance type (the `node.kubernetes.io/instance-type` requirement;
    of several, the cheapest), no minimum, at most `limits` GPUs (maxSize nodes), the reserved instances of its ODCR
    (annotation gpufleet.io/reserved-instances, set by gpufleet.plan.builders.karpenter).

    Why: docs/policies-and-diff.md, "Design notes", impact._pool_cost."""
    obj = entry.get("inputs") or {}
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    requirement = next(
        (
            r
            for r in (template.get("spec") or {}).get("requirements") or []
            if isinstance(r, Mapping)
            and r.get("key") == "node.kubernetes.io/instance-type"
            and r.get("operator") == "In"
        ),
        None,
    )
    # One GPU model and count per pool (nodeGroups[].instanceTypes): priced as the cheapest type it may launch, the
    # one Karpenter picks for a node that any of them fits (and gpufleet's reference shape, the smallest).
    types = [t for t in (requirement or {}).get("values") or [] if isinstance(t, str) and catalog.lookup(t)]
    itype = min(types, key=lambda t: pricing.instance_hour_usd(t) or float("inf")) if types else None
    info = catalog.lookup(itype) if itype else None
    if itype is None or info is None or info.gpu_count == 0:
        return None
    limit = str((spec.get("limits") or {}).get(GPU_RESOURCE, "0"))
    name = str(labels.get(LABEL_NODE_GROUP) or (obj.get("metadata") or {}).get("name"))
    price, source = prices.get(name), "cost stage"
    if price is None:
        price, source = pricing.gpu_hour_usd(itype), f"on-demand list price {pricing.PRICES_AS_OF}"
    reserved = str(((obj.get("metadata") or {}).get("annotations") or {}).get(TAG_RESERVED_INSTANCES) or "0")
    return GroupCost(
        node_group=name,
        instance_type=itype,
        gpus_per_node=info.gpu_count,
        min_size=0,
        max_size=int(limit) // info.gpu_count if is_count(limit) else 0,
        gpu_hour_usd=price,
        price_source=source if price is not None else "unknown",
        reserved=int(reserved) if is_count(reserved) else 0,
    )


def repriced(old: Iterable[GroupCost], new: Iterable[GroupCost]) -> list[GroupCost]:
    """`new`, with the price of a group whose instance type changed but whose per-GPU price did not (a per-group
    `cost.gpuHourUsd` written for the old type) scaled by the list prices of the two types: a negotiated discount
    carries over, the type's own price does not stay behind."""
    before = {c.node_group: c for c in old}
    out = []
    for c in new:
        b = before.get(c.node_group)
        if (
            b
            and c.instance_type
            and b.instance_type
            and c.instance_type != b.instance_type
            and c.gpu_hour_usd == b.gpu_hour_usd
            and c.gpu_hour_usd is not None
        ):
            list_old, list_new = pricing.gpu_hour_usd(b.instance_type), pricing.gpu_hour_usd(c.instance_type)
            if list_old and list_new:
                c = dataclasses.replace(
                    c,
                    gpu_hour_usd=c.gpu_hour_usd * list_new / list_old,
                    price_source=(
                        f"{c.price_source}, re-priced for {c.instance_type} by the list price ratio"
                        f" {list_new:.4g}/{list_old:.4g}"
                    ),
                )
        out.append(c)
    return out
