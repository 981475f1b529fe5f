"""Hint replay (issue 18, item 6): every hint the validator prints, applied to the spec that produced it, gives a
spec that validates, no longer says it, and plans a deployment that is right.

Each REPLAYS row is a bad spec (the minimal spec, tests/specs/valid/minimal.yaml, with `broken` applied), the
exact hint it gets, and `fixed`: what the hint says, done literally to that spec. The replay then validates the
fixed spec (no error, and not the same hint again as a warning), builds its plan for every environment, and runs
the row's `check` on it where following the hint could deploy the wrong thing (the old trap: an ODCR id sent to
`type: CapacityBlock` rendered `marketType: capacity-block`, which fails at launch).

Every hint site is covered. A site is a call with a `hint=` argument in the validator's modules (VALIDATOR: the
loader's, the schema's, the rules', environment merging and the pipeline's), found by parsing them, named by
module, function and hint expression. While a bad spec is validated, the Issue constructor is watched and the
call stack mapped onto the sites, so each row knows which site printed its hint. A site that no row reaches
fails `test_every_hint_site_is_replayed`, unless UNREPLAYED says why it cannot be replayed on a spec: a new
hint needs its row.

Plan warnings that say what to do (set, add, raise, ...) are replayed the same way (PLAN_REPLAYS): the warning is
gone from the fixed spec's plan. Plan warnings are strings built in many places, so their coverage is checked
over what the plans of every golden case, every valid spec and every replayed spec print. (The fixes that
`gpufleet synth` and `explain` print from the behavioural model, gpufleet/simulate/self_check.py, are not replayed
here.)
"""

from __future__ import annotations

import ast
import copy
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.base.errors import Issue, SpecError
from gpufleet.facts import ami_releases
from gpufleet.facts.versions import NODE_MONITORING_AGENT_XIDS
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules import cross_field, sharing
from gpufleet.rules.pipeline import Validated, load_fleet, load_fleet_text
from gpufleet.spec import cold_start

ROOT = Path(__file__).resolve().parents[2]
MINIMAL: dict[str, Any] = yaml.safe_load(
    (ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text(encoding="utf-8")
)
VALIDATOR = (
    "gpufleet/base/inputs.py",  # the bounds the spec loader shares with every YAML input
    "gpufleet/spec/load.py",
    "gpufleet/spec/schema_errors.py",
    *(f"gpufleet/rules/{feature.__name__.rpartition('.')[2]}.py" for feature in cross_field.FEATURES),
    "gpufleet/rules/helm_values.py",
    "gpufleet/spec/environments.py",
    "gpufleet/rules/clusters.py",
    "gpufleet/rules/pipeline.py",
)
# Calls that pass a hint made elsewhere along: the site is where it was made.
PASS_THROUGH = {
    ("gpufleet/spec/load.py", "_issue", "hint"),
    ("gpufleet/spec/load.py", "fatal", "hint"),
    ("gpufleet/rules/pipeline.py", "validate_loaded", "issue.hint"),
}
DEL = object()  # as a value in a patch: remove the key (or list item)
ODCR = "cr-0a1b2c3d4e5f60718"
BLOCK = "cr-0123456789abcdef0"
ODCR_GROUP = "arn:aws:resource-groups:us-east-1:111122223333:group/training-odcrs"
BOTTLEROCKET = {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"}
P5_EFA = {
    "nodeGroups.0.instanceType": "p5.48xlarge",
    "nodeGroups.0.workloadClass": "Training",
    "nodeGroups.0.fabric": "EFA",
}
TEAM_MEMBER = {"teams.0.members": [{"principalArn": "arn:aws:iam::111122223333:role/vision-team"}]}
MIXED_LAYOUT = [{"gpus": 4, "profile": "1g.5gb"}, {"gpus": 4, "profile": "3g.20gb"}]
MIXED = {
    "nodeGroups.0.instanceType": "p4d.24xlarge",
    "nodeGroups.0.sharing": {"strategy": "MIG", "migStrategy": "Mixed", "layout": MIXED_LAYOUT},
}
STANDARD = {"nodeGroups.0.ami.type": "AL2023_x86_64_STANDARD"}
RDMA_GROUP = {
    "nodeGroups.0.instanceType": "p5en.48xlarge",
    "nodeGroups.0.workloadClass": "Training",
    "nodeGroups.0.fabric": "RDMA",
    "teams.0.quotas.0.gpus": 8,
}
NEWEST = ami_releases.catalog().releases["AL2023_x86_64_NVIDIA"]["1.33"][-1]
NEWEST_STANDARD = ami_releases.catalog().releases["AL2023_x86_64_STANDARD"]["1.33"][-1]
AGENT = sorted(NODE_MONITORING_AGENT_XIDS)[-1]
CHECKPOINTS = {"bucket": "mini-checkpoints", "modelParameters": 7_000_000_000, "meanTimeBetweenFailuresHours": 24}
Patch = Mapping[str, Any]
SERVE_GROUP = {
    "name": "l4",
    "instanceType": "g6.xlarge",
    "workloadClass": "Inference",
    "localStorage": "RAID0",
    "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
    "scaling": {"maxSize": 4},
}
# Kubernetes 1.34 for the minimal spec: the control plane, the system nodes and the GPU group's AMI (DRA needs it).
K134: Patch = {
    "cluster.kubernetesVersion": "1.34",
    "cluster.systemNodes.releaseVersion": "1.34.9-20260714",
    "nodeGroups.0.ami.releaseVersion": "1.34.9-20260714",
}
PREFETCH_BASE = {"nodeGroups.0": SERVE_GROUP, "checkpoints": {**CHECKPOINTS, "mountpoint": {}}}


# ---------------------------------------------------------------------------------------------------------------
# Specs as data, patched by dotted paths ("nodeGroups.0.capacity.type"; an index one past the end appends).


def patched(data: Mapping[str, Any], *patches: Patch) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(dict(data))
    for patch in patches:
        for path, value in patch.items():
            *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
            node: Any = out
            for key in parents:
                if isinstance(node, dict):
                    node = node.setdefault(key, {})
                else:
                    node = node[key]
            if value is DEL:
                del node[last]
            elif isinstance(node, list) and last == len(node):
                node.append(copy.deepcopy(value))
            else:
                node[last] = copy.deepcopy(value)
    return out


def dump(data: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)


def validate(spec: str | bytes, env: str | None = None) -> tuple[list[Issue], Validated | None]:
    """Validate spec text, or bytes through a file as `gpufleet validate` reads them."""
    try:
        if isinstance(spec, str):
            return list((valid := load_fleet_text(spec, env=env)).warnings), valid
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "fleet.yaml"
            path.write_bytes(spec)
            return list((valid := load_fleet(str(path), env)).warnings), valid
    except SpecError as exc:
        return exc.issues, None


@cache
def planned(spec: str | bytes, env: str | None = None) -> tuple[list[Issue], dict[str, RolloutPlan]]:
    """The issues of a spec and, when it is valid, the plan of each environment (each spec planned once a run)."""
    issues, valid = validate(spec, env)
    return issues, (
        {} if valid is None else {name: build_plan(fleet, name) for name, fleet in valid.environments.items()}
    )


# ---------------------------------------------------------------------------------------------------------------
# Hint sites.


@dataclass(frozen=True, slots=True, order=True)
class Site:
    module: str
    function: str
    hint: str  # the hint expression as written

    def __str__(self) -> str:
        return f"{self.module} {self.function}(): hint={self.hint}"


def _calls(fn: ast.AST) -> Iterator[ast.Call]:
    """The calls in a function's own body (not in the functions defined inside it)."""
    for child in ast.iter_child_nodes(fn):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Call):
            yield child
        yield from _calls(child)


def _hint_arguments(module: str, tree: ast.Module) -> dict[str, int]:
    """The pass-through functions of a module and the position of their hint parameter (self not counted)."""
    out = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and (module, fn.name, "hint") in PASS_THROUGH:
            params = [a.arg for a in fn.args.args if a.arg != "self"]
            out[fn.name] = params.index("hint")
    return out


def _hint_of(call: ast.Call, positional: Mapping[str, int]) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "hint":
            return kw.value
    name = (
        call.func.attr
        if isinstance(call.func, ast.Attribute)
        else call.func.id
        if isinstance(call.func, ast.Name)
        else ""
    )
    index = positional.get(name)
    return call.args[index] if index is not None and len(call.args) > index else None


@cache
def sites() -> dict[str, list[tuple[int, int, Site]]]:
    """Per module, (first line, last line, site) of every call that makes a hint: a hint= argument, or the hint
    parameter of a pass-through function (load.py's `_issue` and `fatal`) given by position."""
    out: dict[str, list[tuple[int, int, Site]]] = {}
    for module in VALIDATOR:
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        positional = _hint_arguments(module, tree)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for call in _calls(fn):
                hint = _hint_of(call, positional)
                if hint is None or (isinstance(hint, ast.Constant) and hint.value == ""):
                    continue
                key = (module, fn.name, ast.unparse(hint))
                if key not in PASS_THROUGH:
                    assert call.end_lineno is not None
                    out.setdefault(module, []).append((call.lineno, call.end_lineno, Site(*key)))
    return out


def all_sites() -> set[Site]:
    return {site for spans in sites().values() for _, _, site in spans}


def _site_of(frame: Any) -> Site | None:
    """The innermost hint site on the stack from `frame` outwards."""
    while frame is not None:
        module = Path(frame.f_code.co_filename).resolve()
        rel = module.relative_to(ROOT).as_posix() if module.is_relative_to(ROOT) else ""
        found = [(end - start, site) for start, end, site in sites().get(rel, []) if start <= frame.f_lineno <= end]
        if found:
            return min(found)[1]
        frame = frame.f_back
    return None


def hinted(spec: str | bytes, env: str | None = None) -> tuple[list[Issue], dict[str, set[Site]]]:
    """Validate, recording the site on the stack of every Issue made with a hint."""
    made: dict[str, set[Site]] = {}
    original = Issue.__init__

    def watching(self: Issue, **fields: Any) -> None:
        original(self, **fields)
        site = _site_of(sys._getframe(1)) if fields.get("hint") else None
        if site is not None:
            made.setdefault(fields["hint"], set()).add(site)

    Issue.__init__ = watching  # type: ignore[method-assign]
    try:
        issues, _ = validate(spec, env)
    finally:
        Issue.__init__ = original  # type: ignore[method-assign]
    return issues, made


# ---------------------------------------------------------------------------------------------------------------
# Checks that the fixed spec deploys what the hint meant.


def _resource(plan: RolloutPlan, rid: str) -> Any:
    return next(r for stage in plan.stages for r in stage.content.resources if r.id == rid)


def odcr_launch_template(plan: RolloutPlan) -> None:
    """An ODCR stays On-Demand: the launch template targets the reservation and names no capacity-block market."""
    lt = _resource(plan, "l4-launch-template").args
    assert "instanceMarketOptions" not in lt
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"] == {"capacityReservationId": BLOCK}
    assert _resource(plan, "l4-node-group").args["capacityType"] == "ON_DEMAND"


def capacity_block_launch_template(plan: RolloutPlan) -> None:
    lt = _resource(plan, "l4-launch-template").args
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert _resource(plan, "l4-node-group").args["capacityType"] == "CAPACITY_BLOCK"


@dataclass(frozen=True, slots=True, eq=False)
class Replay:
    name: str
    broken: Patch  # applied to the minimal spec (after `base`)
    hint: str
    fixed: Patch  # what the hint says, applied to the broken spec
    base: Patch = field(default_factory=dict)  # a valid variant of the minimal spec to break
    env: str | None = None
    fixed_env: str | None = None  # the hint is about the command's --env, not the spec
    edit: Callable[[str], str] | None = None  # a break in the YAML text (the loader's hints), after `broken`
    unedit: Callable[[str], str] | None = None  # the hint, done to that text (instead of `fixed`)
    encoding: str = "utf-8"  # the broken spec's bytes
    check: Callable[[RolloutPlan], None] | None = None

    def broken_spec(self) -> str | bytes:
        text = dump(patched(MINIMAL, self.base, self.broken))
        text = self.edit(text) if self.edit else text
        return text if self.encoding == "utf-8" else text.encode(self.encoding)

    def fixed_spec(self) -> str:
        if self.unedit is not None:
            return self.unedit(self.edit(dump(patched(MINIMAL, self.base, self.broken))) if self.edit else "")
        return dump(patched(MINIMAL, self.base, self.broken, self.fixed))


def _operator_values(plan: RolloutPlan, key: str, want: Any) -> None:
    """The GPU Operator release's values hold `want` at `key`: the overlay the hint leads to is what Helm gets."""
    release = next(r for s in plan.stages for r in s.content.resources if r.id == "helm-gpu-operator")
    assert release.args["values"][key] == want


def _mig_needs() -> str:
    return f"MIG needs {sharing.mig_gpus()} GPUs; use MPS or TimeSlicing on this group"


def _timeout() -> int:
    fleet = load_fleet_text(yaml.safe_dump(MINIMAL)).environments["dev"]
    return cold_start.default_timeout_seconds(fleet)[0]


R = Replay
THROUGH_HEALTH: Patch = {"environments.dev.rollout.through": "health"}
# The minimal spec as clusters[]: a manager and a worker that runs its node group (docs/multi-cluster.md).
NETWORK = {"vpcId": "vpc-0a1b2c3d", "subnetIds": ["subnet-0aa", "subnet-0bb"]}
MANAGER = {"name": "mini-manager", "role": "Manager", "region": "us-east-1", "network": NETWORK}
WORKER = {"name": "mini-use1", "role": "Worker", "region": "us-east-1", "network": NETWORK}
MULTI: Patch = {
    "cluster.name": DEL,
    "cluster.region": DEL,
    "cluster.network": DEL,
    "clusters": [MANAGER, {**WORKER, "nodeGroups": MINIMAL["nodeGroups"]}],
    "nodeGroups": DEL,
}
L4_WEST = {**MINIMAL["nodeGroups"][0], "name": "l4-usw2"}
WEST = {"name": "mini-usw2", "role": "Worker", "region": "us-west-2", "network": NETWORK, "nodeGroups": [L4_WEST]}
DCGM_OLD = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
DCGM_NOW = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"  # GPU Operator v26.7.0's, the minimal spec's
# Six anchors, each ten times the one before: 10^6 values once expanded.
ALIAS_BOMB = "x0: &x0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 10)}]\n" for i in range(1, 6)
)
TIMEOUT = _timeout()
CHECKPOINT_JOBS = {"bucket": "mini-ckpt", "modelParameters": 7_000_000_000, "meanTimeBetweenFailuresHours": 24}
CHECKPOINT_JOB = {"name": "pretrain", "team": "vision", "nodeGroup": "l4", "nodes": 2, "modelParameters": 7_000_000_000}
# An FSx for Lustre file system beside the minimal spec's group, pinned to one of its subnets.
FSX = {"nodeGroups.0.subnetIds": ["subnet-0aa"], "fsxLustre": {"nodeGroup": "l4", "perUnitStorageThroughput": 125}}
DATASETS = {"bucket": "mini-datasets", "prefix": "train/", "fileSystemPath": "/datasets"}
REPLAYS: tuple[Replay, ...] = (
    # --- gpufleet/rules ----------------------------------------------------------------------------------------------
    R(
        "explicit-pins",
        {"versions.pinning": "Explicit", "versions.kueue": DEL},
        "pin it: versions.kueue.chart: 0.19.2 (the release this gpufleet is tested with)",
        {"versions.kueue": {"chart": "0.19.2"}},
    ),
    R(
        "trainer-without-jobset",
        {"workloads": {"trainer": "Install", "jobSet": "None"}},
        "remove jobSet: None (or set jobSet: Install), or set trainer: None",
        {"workloads.jobSet": DEL},
    ),
    R(
        "replica-gpus-unknown-group",
        {"nodeGroups.0.workloadClass": "Inference", "workloads": {"inferenceReplicaGpus": {"l4x": 2}}},
        'did you mean "l4"?',
        {"workloads.inferenceReplicaGpus": {"l4": 2}},
    ),
    R(
        "image-pull-rate-unknown-group",
        {"workloads": {"imagePullGBps": {"l4x": 0.25}}},
        'did you mean "l4"?',
        {"workloads.imagePullGBps": {"l4": 0.25}},
    ),
    R(
        "replica-gpus-no-inference-group",
        {"workloads": {"inferenceReplicaGpus": {"l5": 2}}},
        "remove the entry: the fleet has no Inference group",
        {"workloads": DEL},
    ),
    R(
        "replica-gpus-not-inference",
        {"workloads": {"inferenceReplicaGpus": {"l4": 2}}},
        "name an Inference node group, or remove the entry",
        {"workloads": DEL},
    ),
    R(
        "replica-gpus-part-of-a-node",
        {
            "nodeGroups.0.instanceType": "g6.12xlarge",
            "nodeGroups.0.workloadClass": "Inference",
            "workloads": {"inferenceReplicaGpus": {"l4": 6}},
        },
        "use a multiple of 4",
        {"workloads.inferenceReplicaGpus.l4": 8},
    ),
    R(
        "multi-node-replica-without-lws",
        {
            "nodeGroups.0.instanceType": "g6.12xlarge",
            "nodeGroups.0.workloadClass": "Inference",
            "workloads": {"inferenceReplicaGpus": {"l4": 8}, "leaderWorkerSet": "None"},
        },
        "remove leaderWorkerSet: None",
        {"workloads.leaderWorkerSet": DEL},
    ),
    R(
        "duplicate-group-name",
        {"nodeGroups.1": {**MINIMAL["nodeGroups"][0]}},
        "names identify resources; make each one unique",
        {"nodeGroups.1.name": "l4-b"},
    ),
    R(
        "shared-namespace",
        {"teams.1": {"name": "nlp", "namespace": "vision", "quotas": [{"nodeGroup": "l4", "gpus": 4}]}},
        "each team gets its own namespace; its ClusterQueue admits only that one",
        {"teams.1.namespace": DEL},
    ),
    R(
        "second-quota",
        {"teams.0.quotas.0.gpus": 2, "teams.0.quotas.1": {"nodeGroup": "l4", "gpus": 2}},
        "merge the quotas into one entry",
        {"teams.0.quotas.0.gpus": 4, "teams.0.quotas.1": DEL},
    ),
    R(
        "unknown-instance-type",
        {"nodeGroups.0.instanceType": "g6.xlarg"},
        'did you mean "g6.xlarge"?',
        {"nodeGroups.0.instanceType": "g6.xlarge"},
    ),
    R(
        "unknown-image-set",
        {
            "imageSets": [{"name": "training", "images": ["nvcr.io/nvidia/pytorch:25.08-py3"]}],
            "nodeGroups.0.images": ["trainin"],
        },
        'did you mean "training"?',
        {"nodeGroups.0.images": ["training"]},
    ),
    R(
        "unknown-image-set-none-close",
        {"nodeGroups.0.images": ["training"]},
        "define it under imageSets",
        {"imageSets": [{"name": "training", "images": ["nvcr.io/nvidia/pytorch:25.08-py3"]}]},
    ),
    R(
        "quota-unknown-group",
        {"teams.0.quotas.0.nodeGroup": "l4x"},
        'did you mean "l4"?',
        {"teams.0.quotas.0.nodeGroup": "l4"},
    ),
    R(
        "checkpoint-job-unknown-team",
        {"checkpoints": {**CHECKPOINT_JOBS, "jobs": [{**CHECKPOINT_JOB, "team": "visoin"}]}},
        'did you mean "vision"?',
        {"checkpoints.jobs.0.team": "vision"},
    ),
    R(
        "checkpoint-job-unknown-group",
        {"checkpoints": {**CHECKPOINT_JOBS, "jobs": [{**CHECKPOINT_JOB, "nodeGroup": "l4x"}]}},
        'did you mean "l4"?',
        {"checkpoints.jobs.0.nodeGroup": "l4"},
    ),
    R(
        "checkpoint-job-too-many-nodes",
        {"checkpoints": {**CHECKPOINT_JOBS, "jobs": [{**CHECKPOINT_JOB, "nodes": 6}]}},
        "lower nodes to 4, or raise the group's scaling.maxSize",
        {"checkpoints.jobs.0.nodes": 4},
    ),
    R(
        "fsx-persistent-without-throughput",
        {"fsxLustre.perUnitStorageThroughput": DEL},
        "set perUnitStorageThroughput to one of 125, 250, 500, 1000",
        {"fsxLustre.perUnitStorageThroughput": 125},
        base=FSX,
    ),
    R(
        "fsx-throughput-not-a-tier",
        {"fsxLustre.perUnitStorageThroughput": 50},
        "use one of 125, 250, 500, 1000",
        {"fsxLustre.perUnitStorageThroughput": 125},
        base=FSX,
    ),
    R(
        "fsx-scratch-with-throughput",
        {"fsxLustre.deploymentType": "SCRATCH_2"},
        "remove perUnitStorageThroughput, or use deploymentType PERSISTENT_2",
        {"fsxLustre.perUnitStorageThroughput": DEL},
        base=FSX,
    ),
    R(
        "fsx-capacity-between-steps",
        {"fsxLustre.storageCapacityGiB": 3000},
        "use 2400 or 4800",
        {"fsxLustre.storageCapacityGiB": 2400},
        base=FSX,
    ),
    R(
        "fsx-unknown-group",
        {"fsxLustre.nodeGroup": "l4x"},
        'did you mean "l4"?',
        {"fsxLustre.nodeGroup": "l4"},
        base=FSX,
    ),
    R(
        "fsx-no-training-group",
        {"fsxLustre.nodeGroup": DEL},
        "set fsxLustre.nodeGroup to the group whose jobs read and write it",
        {"fsxLustre.nodeGroup": "l4"},
        base=FSX,
    ),
    R(
        "fsx-group-spans-subnets",
        {"nodeGroups.0.subnetIds": DEL},
        "set fsxLustre.subnetId to the subnet of the zone the group's jobs run in",
        {"fsxLustre.subnetId": "subnet-0bb"},
        base=FSX,
    ),
    R(
        "fsx-subnet-of-another-zone",
        {"fsxLustre.subnetId": "subnet-0cc"},
        "use one of subnet-0aa, or name the group in fsxLustre.nodeGroup",
        {"fsxLustre.subnetId": "subnet-0aa"},
        base=FSX,
    ),
    R(
        "fsx-scratch-1-repository",
        {"fsxLustre": {"deploymentType": "SCRATCH_1", "nodeGroup": "l4", "dataRepositories": [DATASETS]}},
        "use deploymentType SCRATCH_2 or PERSISTENT_2",
        {"fsxLustre.deploymentType": "SCRATCH_2"},
        base=FSX,
    ),
    R(
        "fsx-repository-without-bucket",
        {"fsxLustre.dataRepositories": [{"fileSystemPath": "/"}]},
        "set bucket to the S3 bucket to link",
        {"fsxLustre.dataRepositories.0.bucket": "mini-datasets"},
        base=FSX,
    ),
    R(
        "fsx-repository-checkpoint-key",
        {
            "checkpoints": {**CHECKPOINTS, "encryption": "CustomerManagedKey"},
            "fsxLustre.dataRepositories": [{"fileSystemPath": "/"}],
        },
        "link another bucket, or use checkpoints.encryption S3Managed",
        {"checkpoints.encryption": "S3Managed"},
        base=FSX,
    ),
    R(
        "fsx-repository-paths-overlap",
        {"fsxLustre.dataRepositories": [DATASETS, {**DATASETS, "prefix": "eval/", "fileSystemPath": "/datasets/eval"}]},
        "link each association to its own directory, none inside another (`/` only alone)",
        {"fsxLustre.dataRepositories.1.fileSystemPath": "/eval"},
        base=FSX,
    ),
    R(
        "fsx-repository-linked-twice",
        {"fsxLustre.dataRepositories": [DATASETS, {**DATASETS, "fileSystemPath": "/more"}]},
        "link each bucket or prefix once",
        {"fsxLustre.dataRepositories.1.prefix": "more/"},
        base=FSX,
    ),
    R(
        "fsx-repository-prefix-without-slash",
        {"fsxLustre.dataRepositories": [{**DATASETS, "prefix": "/train/eval"}]},
        'write prefix: "train/eval/"',
        {"fsxLustre.dataRepositories.0.prefix": "train/eval/"},
        base=FSX,
    ),
    R(
        "fsx-repository-prefix-bad-character",
        {"fsxLustre.dataRepositories": [{**DATASETS, "prefix": "train data/"}]},
        'keep letters, digits and ! _ . * \' ( ) - in each segment, and end it with / (e.g. "datasets/")',
        {"fsxLustre.dataRepositories.0.prefix": "datasets/"},
        base=FSX,
    ),
    R(
        "team-unknown-priority",
        {"teams.0.priorities": ["trainin"]},
        'did you mean "training"?',
        {"teams.0.priorities": ["training"]},
    ),
    R(
        "price-unknown-group",
        {"cost": {"gpuHourUsd": {"l4x": 0.9}}},
        'did you mean "l4"?',
        {"cost.gpuHourUsd": {"l4": 0.9}},
    ),
    R(
        "lending-above-nominal",
        {"teams.0.cohort": "research", "teams.0.quotas.0.lendingLimit": 8},
        "a team can lend at most what it owns: set lendingLimit to 4 or less",
        {"teams.0.quotas.0.lendingLimit": 4},
    ),
    R(
        "quota-above-group",
        {"teams.0.quotas.0.gpus": 8},
        "lower the quota to at most 4, or raise the group's maxSize",
        {"teams.0.quotas.0.gpus": 4},
    ),
    R(
        "limit-without-cohort",
        {"teams.0.quotas.0.borrowingLimit": 2},
        "set teams[].cohort, or remove the limit (without a cohort there is nothing to borrow from or lend to)",
        {"teams.0.cohort": "research"},
    ),
    R(
        "mps-with-mig",
        {"nodeGroups.0.sharing": {"strategy": "MPS", "replicas": 2, "profile": "1g.10gb"}},
        "remove profile: MPS shares whole GPUs (the L4 has no MIG)",
        {"nodeGroups.0.sharing.profile": DEL},
    ),
    R(
        "replicas-missing",
        {"nodeGroups.0.sharing": {"strategy": "MPS"}},
        "add replicas: 2 to 48",
        {"nodeGroups.0.sharing.replicas": 2},
    ),
    R(
        "replicas-unused",
        {"nodeGroups.0.sharing": {"strategy": "Exclusive", "replicas": 2}},
        "remove replicas",
        {"nodeGroups.0.sharing.replicas": DEL},
    ),
    R(
        "profile-unused",
        {"nodeGroups.0.sharing": {"strategy": "Exclusive", "profile": "1g.10gb"}},
        "remove profile (the L4 has no MIG)",
        {"nodeGroups.0.sharing.profile": DEL},
    ),
    R(
        "mig-not-capable",
        {"nodeGroups.0.sharing": {"strategy": "MIG", "profile": "1g.10gb"}},
        _mig_needs(),
        {"nodeGroups.0.sharing": {"strategy": "MPS", "replicas": 2}},
    ),
    R(
        "mig-without-profile",
        {"nodeGroups.0.instanceType": "p4d.24xlarge", "nodeGroups.0.sharing": {"strategy": "MIG"}},
        "profiles of the A100 in p4d.24xlarge: 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb",
        {"nodeGroups.0.sharing.profile": "1g.5gb"},
    ),
    R(
        "mig-profile-unknown",
        {"nodeGroups.0.instanceType": "p4d.24xlarge", "nodeGroups.0.sharing": {"strategy": "MIG", "profile": "2g.5gb"}},
        'did you mean "1g.5gb"?',
        {"nodeGroups.0.sharing.profile": "1g.5gb"},
    ),
    R(
        "mixed-with-profile",
        {
            "nodeGroups.0.instanceType": "p4d.24xlarge",
            "nodeGroups.0.sharing": {"strategy": "MIG", "migStrategy": "Mixed", "profile": "1g.5gb"},
        },
        "use layout: [{gpus: 8, profile: 1g.5gb}]",
        {"nodeGroups.0.sharing.profile": DEL, "nodeGroups.0.sharing.layout": [{"gpus": 8, "profile": "1g.5gb"}]},
    ),
    R(
        "mixed-without-layout",
        {
            "nodeGroups.0.instanceType": "p4d.24xlarge",
            "nodeGroups.0.sharing": {"strategy": "MIG", "migStrategy": "Mixed"},
        },
        "add layout: [{gpus: 4, profile: <profile>}, {gpus: 4, profile: <profile>}]",
        {"nodeGroups.0.sharing.layout": MIXED_LAYOUT},
    ),
    R(
        "mixed-on-bottlerocket",
        {**MIXED, "nodeGroups.0.ami": BOTTLEROCKET},
        "use an AL2023 NVIDIA AMI, or migStrategy Single with one profile",
        {"nodeGroups.0.ami": MINIMAL["nodeGroups"][0]["ami"]},
    ),
    R(
        "layout-profile-unknown",
        {**MIXED, "nodeGroups.0.sharing.layout.1.profile": "2g.5gb"},
        'did you mean "1g.5gb"?',
        {"nodeGroups.0.sharing.layout.1.profile": "1g.5gb"},
    ),
    R(
        "layout-not-covering",
        {**MIXED, "nodeGroups.0.sharing.layout.1.gpus": 2},
        "make the gpus of the layout add up to 8",
        {"nodeGroups.0.sharing.layout.1.gpus": 4},
    ),
    R(
        "layout-under-single",
        {**MIXED, "nodeGroups.0.sharing.migStrategy": "Single"},
        "set migStrategy: Mixed, or replace layout with one profile",
        {"nodeGroups.0.sharing.migStrategy": "Mixed"},
    ),
    R(
        "mig-strategy-without-mig",
        {"nodeGroups.0.sharing": {"strategy": "Exclusive", "migStrategy": "Mixed"}},
        "remove migStrategy (the L4 has no MIG)",
        {"nodeGroups.0.sharing.migStrategy": DEL},
    ),
    R(
        "single-beside-mixed",
        {
            **MIXED,
            "nodeGroups.1": {
                **MINIMAL["nodeGroups"][0],
                "name": "a100",
                "instanceType": "p4d.24xlarge",
                "sharing": {"strategy": "MIG", "profile": "1g.5gb"},
            },
        },
        "set migStrategy: Mixed with layout: [{gpus: <all GPUs>, profile: 1g.5gb}] here too (its pods then request"
        " nvidia.com/mig-1g.5gb), or use Single everywhere",
        {
            "nodeGroups.1.sharing": {
                "strategy": "MIG",
                "migStrategy": "Mixed",
                "layout": [{"gpus": 8, "profile": "1g.5gb"}],
            }
        },
    ),
    R(
        "mps-beside-mixed",
        {
            **MIXED,
            "nodeGroups.1": {
                **MINIMAL["nodeGroups"][0],
                "name": "mps",
                "workloadClass": "Interactive",
                "sharing": {"strategy": "MPS", "replicas": 4},
            },
        },
        "use TimeSlicing on this group, or migStrategy Single on the MIG groups (one profile per group), or put the MPS"
        " and the Mixed groups in different clusters",
        {"nodeGroups.1.sharing": {"strategy": "TimeSlicing", "replicas": 4}},
    ),
    R(
        "time-slicing-training",
        {"nodeGroups.0.workloadClass": "Training", "nodeGroups.0.sharing": {"strategy": "TimeSlicing", "replicas": 2}},
        "time-slicing is for notebooks, CI and bursty low-stakes work; use MPS (the L4 has no MIG), or set"
        " sharing.acknowledgeNoIsolation: true",
        {"nodeGroups.0.sharing.acknowledgeNoIsolation": True},
    ),
    R(
        "efa-taint-without-efa",
        {"nodeGroups.0.efaTaint": "Disabled"},
        "remove efaTaint",
        {"nodeGroups.0.efaTaint": DEL},
    ),
    R(
        "placement-group-without-efa",
        {"nodeGroups.0.placementGroup": "hpc"},
        "remove placementGroup",
        {"nodeGroups.0.placementGroup": DEL},
    ),
    R(
        "efa-not-supported",
        {"nodeGroups.0.fabric": "EFA"},
        "use fabric None, or an EFA instance type (p4d, p5, p5e, p5en, p6, g6e.8xlarge and larger...)",
        {"nodeGroups.0.fabric": "None"},
    ),
    R(
        "efa-without-zone",
        {**P5_EFA, "nodeGroups.0.subnetIds": ["subnet-0aa"]},
        "set zone to the zone ID of the group's subnet, e.g. zone: use1-az4",
        {"nodeGroups.0.zone": "use1-az4"},
    ),
    R(
        "efa-two-subnets",
        {**P5_EFA, "nodeGroups.0.zone": "use1-az4"},
        "set subnetIds to the one subnet in the group's zone",
        {"nodeGroups.0.subnetIds": ["subnet-0aa"]},
    ),
    R(
        "warm-pool-above-max",
        {"nodeGroups.0.warmPool": {"minSize": 5}},
        "the pool only holds instances the group may run: set minSize to 4 or less",
        {"nodeGroups.0.warmPool.minSize": 4},
    ),
    R(
        "warm-pool-hibernated-p5",
        {"nodeGroups.0.instanceType": "p5.48xlarge", "nodeGroups.0.warmPool": {"state": "Hibernated"}},
        "use state: Stopped",
        {"nodeGroups.0.warmPool.state": "Stopped"},
    ),
    R(
        "warm-pool-bottlerocket-reuse",
        {"nodeGroups.0.ami": BOTTLEROCKET, "nodeGroups.0.warmPool": {"reuseOnScaleIn": True}},
        "remove reuseOnScaleIn (scaled-in instances are terminated), or use an AL2023 AMI",
        {"nodeGroups.0.warmPool.reuseOnScaleIn": DEL},
    ),
    R(
        "warm-pool-capacity-block",
        {"nodeGroups.0.capacity": {"type": "CapacityBlock", "reservationId": BLOCK}, "nodeGroups.0.warmPool": {}},
        "remove warmPool",
        {"nodeGroups.0.warmPool": DEL},
    ),
    R(
        "warm-pool-spot",
        {"nodeGroups.0.capacity": {"type": "Spot"}, "nodeGroups.0.warmPool": {}},
        "remove warmPool, or use capacity type OnDemand",
        {"nodeGroups.0.warmPool": DEL},
    ),
    # teams[].prefetch: the minimal group as an Inference group with an array, and the claims
    R(
        "prefetch-needs-mountpoint",
        {"checkpoints": CHECKPOINTS, "teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["m/"]}]},
        "add checkpoints.mountpoint: {} (docs/network-and-storage.md), or remove prefetch",
        {"checkpoints.mountpoint": {}},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-unknown-group",
        {"teams.0.prefetch": [{"nodeGroup": "l44", "paths": ["m/"]}]},
        'did you mean "l4"?',
        {"teams.0.prefetch.0.nodeGroup": "l4"},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-no-quota",
        {
            "nodeGroups.1": {**SERVE_GROUP, "name": "serve"},
            "teams.0.prefetch": [{"nodeGroup": "serve", "paths": ["m/"]}],
        },
        "add a quota on serve, or prefetch on a group of the team's quotas: l4",
        {"teams.0.quotas.1": {"nodeGroup": "serve", "gpus": 1}},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-not-inference",
        {"nodeGroups.0.workloadClass": "Batch", "teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["m/"]}]},
        "remove this entry: the team has no Inference group with localStorage RAID0 to prefetch on",
        {"teams.0.prefetch.0": DEL},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-no-raid0",
        {"nodeGroups.0.localStorage": "None", "teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["m/"]}]},
        "set localStorage: RAID0 on l4 (an instance type with instance store)",
        {"nodeGroups.0.localStorage": "RAID0"},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-group-twice",
        {"teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["a/"]}, {"nodeGroup": "l4", "paths": ["b/"]}]},
        "merge the paths into one entry",
        {"teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["a/", "b/"]}]},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-absolute-path",
        {"teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["/m/"]}]},
        "write 'm/' (the claim's root is s3://<bucket>/<team>/)",
        {"teams.0.prefetch.0.paths.0": "m/"},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-dot-segment",
        {"teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["m/../x"]}]},
        "name the objects' keys below the team's prefix, e.g. models/llama-3.1-405b-awq/",
        {"teams.0.prefetch.0.paths.0": "models/llama-3.1-405b-awq/"},
        base=PREFETCH_BASE,
    ),
    R(
        "prefetch-slower-cache",
        {
            "teams.0.prefetch": [{"nodeGroup": "l4", "paths": ["m/"]}],
            "workloads.weightLoadGBps": {"l4": {"s3": 6, "nvme": 3.5}},
        },
        "remove this entry",
        {"teams.0.prefetch.0": DEL},
        base=PREFETCH_BASE,
    ),
    R(
        "cache-rate-without-a-cache",
        {"nodeGroups.0.localStorage": "None", "workloads.weightLoadGBps": {"l4": {"s3": 2, "nvme": 4}}},
        "remove nvme",
        {"workloads.weightLoadGBps.l4.nvme": DEL},
        base=PREFETCH_BASE,
    ),
    R(
        "headroom-above-max-size",
        {"nodeGroups.0.headroom": {"nodes": 5}},
        "the placeholders hold only nodes the group may run: set headroom.nodes to 4 or less, or raise scaling.maxSize",
        {"nodeGroups.0.headroom.nodes": 4},
    ),
    R(
        "headroom-nothing-scales-up",
        {"cluster.autoscaler": "None", "nodeGroups.0.headroom": {"nodes": 1}},
        "set cluster.autoscaler: Install, or headroom.nodes to at most minSize (0)",
        {"cluster.autoscaler": "Install"},
    ),
    R(
        "headroom-tas",
        {
            **P5_EFA,
            "nodeGroups.0.zone": "use1-az4",
            "nodeGroups.0.subnetIds": ["subnet-0aa"],
            "nodeGroups.0.scaling": {"minSize": 2, "maxSize": 2},
            "nodeGroups.0.headroom": {"nodes": 1},
            "teams.0.quotas": [{"nodeGroup": "l4", "gpus": 16}],
        },
        "set topology.placement: None on the group, or remove headroom",
        {"nodeGroups.0.topology.placement": "None"},
    ),
    R(
        "headroom-part-of-a-replica",
        {
            "nodeGroups.0.instanceType": "g6e.12xlarge",
            "nodeGroups.0.workloadClass": "Inference",
            "nodeGroups.0.headroom": {"nodes": 1},
            "workloads": {"inferenceReplicaGpus": {"l4": 8}},
            "teams.0.quotas": [{"nodeGroup": "l4", "gpus": 16}],
        },
        "set headroom.nodes to a multiple of 2",
        {"nodeGroups.0.headroom.nodes": 2},
    ),
    R(
        "headroom-serving-priority",
        {
            "nodeGroups.0.headroom": {"nodes": 1},
            "admission.priorities": [{"name": "serving", "value": -10, "preemptible": False}],
        },
        "give serving a value above -10",
        {"admission.priorities.0.value": 100},
    ),
    R(
        "dra-before-1.34",
        {"nodeGroups.0.devices": "DRA"},
        "use devices: DevicePlugin until the cluster runs Kubernetes 1.34",
        {"nodeGroups.0.devices": "DevicePlugin"},
    ),
    R(
        "dra-on-karpenter",
        {"nodeGroups.0.devices": "DRA", "nodeGroups.0.provisioner": "Karpenter"},
        "use provisioner ManagedNodeGroup for this group, or devices: DevicePlugin",
        {"nodeGroups.0.provisioner": "ManagedNodeGroup"},
        base=K134,
    ),
    R(
        "dra-shared",
        {"nodeGroups.0.devices": "DRA", "nodeGroups.0.sharing": {"strategy": "MPS", "replicas": 2}},
        "remove sharing (Exclusive: whole GPUs by claim), or use devices: DevicePlugin",
        {"nodeGroups.0.sharing": DEL},
        base=K134,
    ),
    R(
        "dra-old-bottlerocket",
        {"nodeGroups.0.devices": "DRA", "nodeGroups.0.ami": BOTTLEROCKET},
        "use a Bottlerocket release 1.63.0 or later, an AL2023 NVIDIA AMI, or devices: DevicePlugin",
        {"nodeGroups.0.ami.releaseVersion": "1.63.0-b2c7a1d9"},
        base=K134,
    ),
    R(
        "dra-tas",
        {"nodeGroups.0.devices": "DRA", "nodeGroups.0.topology": {"placement": "Preferred"}},
        "remove topology.placement (a DRA group is placed without TAS), or use devices: DevicePlugin",
        {"nodeGroups.0.topology.placement": DEL},
        base=K134,
    ),
    R(
        "karpenter-warm-pool",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.warmPool": {"minSize": 1}},
        "replace warmPool with headroom: {nodes: 1} (placeholder pods keep that many nodes running;"
        " docs/karpenter.md), or use provisioner ManagedNodeGroup",
        {"nodeGroups.0.warmPool": DEL, "nodeGroups.0.headroom": {"nodes": 1}},
    ),
    R(
        "karpenter-desired-size",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.scaling.desiredSize": 0},
        "remove scaling.desiredSize",
        {"nodeGroups.0.scaling.desiredSize": DEL},
    ),
    R(
        "karpenter-min-size",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.scaling.minSize": 1},
        "set minSize to 0, or use provisioner ManagedNodeGroup for nodes that always run",
        {"nodeGroups.0.scaling.minSize": 0},
    ),
    R(
        "karpenter-update",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.update": {"maxUnavailable": 2}},
        "remove update.maxUnavailable",
        {"nodeGroups.0.update.maxUnavailable": DEL},
    ),
    R(
        "karpenter-reservation-group",
        {
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.capacity": {"reservation": {"resourceGroupArn": ODCR_GROUP, "instanceCount": 4}},
        },
        "name the reservation: reservation: {id: cr-..., instanceCount: <instances reserved>}",
        {"nodeGroups.0.capacity.reservation": {"id": ODCR, "instanceCount": 4}},
    ),
    R(
        "karpenter-reservation-open",
        {
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.capacity": {"reservation": {"open": True, "instanceCount": 4}},
        },
        "name the reservation: reservation: {id: cr-..., instanceCount: <instances reserved>}",
        {"nodeGroups.0.capacity.reservation": {"id": ODCR, "instanceCount": 4}},
    ),
    R(
        "snapshot-on-al2023",
        {"nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0"},
        "remove dataVolumeSnapshotId",
        {"nodeGroups.0.dataVolumeSnapshotId": DEL},
    ),
    R(
        "snapshot-with-raid0",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.instanceType": "g6.2xlarge",
            "nodeGroups.0.localStorage": "RAID0",
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
        },
        "remove dataVolumeSnapshotId, or set localStorage: None",
        {"nodeGroups.0.dataVolumeSnapshotId": DEL},
    ),
    R(
        "snapshot-initialization-on-al2023",
        {"nodeGroups.0.snapshotInitialization": {"mode": "Default"}},
        "remove snapshotInitialization",
        {"nodeGroups.0.snapshotInitialization": DEL},
    ),
    R(
        "snapshot-initialization-without-a-snapshot",
        {"nodeGroups.0.ami": BOTTLEROCKET, "nodeGroups.0.snapshotInitialization": {"mode": "Default"}},
        "remove snapshotInitialization, or set dataVolumeSnapshotId",
        {"nodeGroups.0.snapshotInitialization": DEL},
    ),
    R(
        "provisioned-rate-without-a-rate",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
            "nodeGroups.0.snapshotInitialization": {"mode": "ProvisionedRate"},
        },
        "set volumeInitializationRate: 300",
        {"nodeGroups.0.snapshotInitialization.volumeInitializationRate": 300},
    ),
    R(
        "volume-initialization-rate-with-fast-snapshot-restore",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
            "nodeGroups.0.snapshotInitialization": {
                "mode": "FastSnapshotRestore",
                "availabilityZones": ["us-east-1a"],
                "volumeInitializationRate": 300,
            },
        },
        "remove volumeInitializationRate, or set mode: ProvisionedRate",
        {"nodeGroups.0.snapshotInitialization.volumeInitializationRate": DEL},
    ),
    R(
        "fast-snapshot-restore-without-zones",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
            "nodeGroups.0.snapshotInitialization": {"mode": "FastSnapshotRestore"},
        },
        "set availabilityZones: the zone names of the group's subnets, e.g. [us-east-1a]",
        {"nodeGroups.0.snapshotInitialization.availabilityZones": ["us-east-1a"]},
    ),
    R(
        "zones-without-fast-snapshot-restore",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
            "nodeGroups.0.snapshotInitialization": {"mode": "Default", "availabilityZones": ["us-east-1a"]},
        },
        "remove availabilityZones, or set mode: FastSnapshotRestore",
        {"nodeGroups.0.snapshotInitialization.availabilityZones": DEL},
    ),
    R(
        "fast-snapshot-restore-zone-of-another-region",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
            "nodeGroups.0.snapshotInitialization": {"mode": "FastSnapshotRestore", "availabilityZones": ["us-west-2a"]},
        },
        "use a zone of us-east-1, such as us-east-1a",
        {"nodeGroups.0.snapshotInitialization.availabilityZones": ["us-east-1a"]},
    ),
    R(
        "parallel-pull-before-the-gate",
        {
            "nodeGroups.0.ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.3-20250819"},
            "nodeGroups.0.imagePull": {"mode": "Parallel"},
        },
        "pin AL2023 release v20250821 or later in ami.releaseVersion, or set imagePull.mode: Default",
        {"nodeGroups.0.imagePull.mode": "Default"},
    ),
    R(
        "parallel-pull-with-a-snapshot",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.dataVolumeSnapshotId": "snap-0123456789abcdef0",
            "nodeGroups.0.imagePull": {"mode": "Parallel"},
        },
        "set imagePull.mode: Default, or remove dataVolumeSnapshotId",
        {"nodeGroups.0.imagePull.mode": "Default"},
    ),
    R(
        "parallel-pull-on-a-slow-volume",
        {"nodeGroups.0.imagePull": {"mode": "Parallel"}, "nodeGroups.0.diskThroughputMiBps": 300},
        "set diskThroughputMiBps: 600 or more, or imagePull.mode: Default",
        {"nodeGroups.0.diskThroughputMiBps": 600},
    ),
    R(
        "soci-tuning-on-al2023",
        {"nodeGroups.0.imagePull": {"maxConcurrentDownloadsPerImage": 10}},
        "remove imagePull.maxConcurrentDownloadsPerImage",
        {"nodeGroups.0.imagePull.maxConcurrentDownloadsPerImage": DEL},
    ),
    R(
        "soci-tuning-with-the-default-pull",
        {
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.imagePull": {"mode": "Default", "discardUnpackedLayers": False},
        },
        "remove imagePull.discardUnpackedLayers, or set imagePull.mode: Parallel",
        {"nodeGroups.0.imagePull.discardUnpackedLayers": DEL},
    ),
    R(
        "gp3-throughput-beyond-the-iops",
        {"nodeGroups.0.diskThroughputMiBps": 1000, "nodeGroups.0.diskIops": 3000},
        "set diskIops: 4000 or more, or lower diskThroughputMiBps",
        {"nodeGroups.0.diskIops": 4000},
    ),
    R(
        "instance-types-on-a-managed-group",
        {"nodeGroups.0.instanceTypes": ["g6.xlarge", "g6.2xlarge"]},
        "remove instanceTypes, or use provisioner Karpenter",
        {"nodeGroups.0.instanceTypes": DEL},
    ),
    R(
        "instance-types-without-the-reference",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.instanceTypes": ["g6.2xlarge", "g6.4xlarge"]},
        "add g6.xlarge to instanceTypes",
        {"nodeGroups.0.instanceTypes": ["g6.2xlarge", "g6.4xlarge", "g6.xlarge"]},
    ),
    R(
        "instance-types-unknown",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.instanceTypes": ["g6.xlarge", "g6.2xlarg"]},
        'did you mean "g6.2xlarge"?',
        {"nodeGroups.0.instanceTypes.1": "g6.2xlarge"},
    ),
    R(
        "instance-types-another-gpu",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.instanceTypes": ["g6.xlarge", "g6e.xlarge"]},
        "remove g6e.xlarge from instanceTypes (another node group can have it)",
        {"nodeGroups.0.instanceTypes": ["g6.xlarge"]},
    ),
    R(
        "instance-types-efa-interfaces",
        {
            **P5_EFA,
            "nodeGroups.0.zone": "use1-az4",
            "nodeGroups.0.subnetIds": ["subnet-0aa"],
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.instanceType": "p5e.48xlarge",
            "nodeGroups.0.instanceTypes": ["p5e.48xlarge", "p5en.48xlarge"],
        },
        "remove p5en.48xlarge from instanceTypes (another node group can have it)",
        {"nodeGroups.0.instanceTypes": ["p5e.48xlarge"]},
    ),
    R(
        "instance-types-reference-not-smallest",
        {
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.instanceType": "g6.2xlarge",
            "nodeGroups.0.instanceTypes": ["g6.2xlarge", "g6.xlarge"],
        },
        "set instanceType to g6.xlarge",
        {"nodeGroups.0.instanceType": "g6.xlarge"},
    ),
    R(
        "karpenter-fallback-order",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.capacity": {"fallback": ["OnDemand", "Spot"]}},
        "write [Spot, OnDemand]; to prefer On-Demand over Spot, make two groups and name the On-Demand one first in"
        " the teams' quotas (Kueue tries a ClusterQueue's flavors in order)",
        {"nodeGroups.0.capacity.fallback": ["Spot", "OnDemand"]},
    ),
    R(
        "karpenter-fallback-type",
        {
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.capacity": {"type": "Spot", "fallback": ["Spot", "OnDemand"]},
        },
        "remove capacity.type (OnDemand, the price basis of the estimate) and keep fallback",
        {"nodeGroups.0.capacity.type": DEL},
    ),
    R(
        "karpenter-fallback-reserved-without-reservation",
        {"nodeGroups.0.provisioner": "Karpenter", "nodeGroups.0.capacity": {"fallback": ["Reserved", "OnDemand"]}},
        "add capacity.reservation: {tags: {<key>: <value>}, instanceCount: <instances reserved>} (or id: cr-... for"
        " one reservation)",
        {"nodeGroups.0.capacity.reservation": {"tags": {"team": "vision"}, "instanceCount": 2}},
    ),
    R(
        "karpenter-fallback-unused-reservation",
        {
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.capacity": {
                "fallback": ["Spot", "OnDemand"],
                "reservation": {"tags": {"team": "vision"}, "instanceCount": 2},
            },
        },
        "put Reserved first in fallback, or remove reservation",
        {"nodeGroups.0.capacity.fallback": ["Reserved", "Spot", "OnDemand"]},
    ),
    R(
        "fallback-on-a-managed-group",
        {"nodeGroups.0.capacity": {"fallback": ["Spot", "OnDemand"]}},
        "remove capacity.fallback, or use provisioner Karpenter",
        {"nodeGroups.0.capacity.fallback": DEL},
    ),
    R(
        "reservation-tags-on-a-managed-group",
        {"nodeGroups.0.capacity": {"reservation": {"tags": {"team": "vision"}, "instanceCount": 4}}},
        "name the reservation by id, or use provisioner Karpenter",
        {"nodeGroups.0.capacity.reservation": {"id": ODCR, "instanceCount": 4}},
    ),
    R(
        "karpenter-reservation-id-and-tags",
        {
            "nodeGroups.0.provisioner": "Karpenter",
            "nodeGroups.0.capacity": {"reservation": {"id": ODCR, "tags": {"team": "vision"}, "instanceCount": 4}},
        },
        "keep one: id (one reservation) or tags (every reservation with those tags)",
        {"nodeGroups.0.capacity.reservation.tags": DEL},
    ),
    R(
        "min-above-max",
        {"nodeGroups.0.scaling.minSize": 5},
        "lower minSize or raise maxSize",
        {"nodeGroups.0.scaling.minSize": 4},
    ),
    R(
        "desired-outside",
        {"nodeGroups.0.scaling.desiredSize": 5},
        "set it within the range, or leave it out (it defaults to minSize)",
        {"nodeGroups.0.scaling.desiredSize": DEL},
    ),
    R(
        "max-unavailable-twice",
        {"nodeGroups.0.update": {"maxUnavailable": 1, "maxUnavailablePercentage": 10}},
        "remove one of them",
        {"nodeGroups.0.update.maxUnavailablePercentage": DEL},
    ),
    R(
        "capacity-block-without-reservation",
        {"nodeGroups.0.capacity": {"type": "CapacityBlock"}},
        "add capacity.reservationId, e.g. reservationId: cr-0123456789abcdef0",
        {"nodeGroups.0.capacity.reservationId": BLOCK},
        check=capacity_block_launch_template,
    ),
    R(
        "reservation-id-on-on-demand",
        {"nodeGroups.0.capacity": {"reservationId": BLOCK}},
        f"replace reservationId with reservation: {{id: {BLOCK}, instanceCount: <instances reserved>}}",
        {"nodeGroups.0.capacity": {"reservation": {"id": BLOCK, "instanceCount": 4}}},
        check=odcr_launch_template,
    ),
    R(
        "reservation-id-on-spot",
        {"nodeGroups.0.capacity": {"type": "Spot", "reservationId": BLOCK}},
        "remove reservationId",
        {"nodeGroups.0.capacity.reservationId": DEL},
    ),
    R(
        "odcr-on-spot",
        {"nodeGroups.0.capacity": {"type": "Spot", "reservation": {"id": ODCR, "instanceCount": 1}}},
        "remove reservation",
        {"nodeGroups.0.capacity.reservation": DEL},
    ),
    R(
        "odcr-two-targets",
        {
            "nodeGroups.0.capacity": {"reservation": {"id": ODCR, "open": True, "instanceCount": 4}},
            "nodeGroups.0.scaling.minSize": 4,
        },
        "keep one: id (one reservation), resourceGroupArn (a Capacity Reservation group) or open: true",
        {"nodeGroups.0.capacity.reservation.open": DEL},
    ),
    R(
        "odcr-above-reserved",
        {"nodeGroups.0.capacity": {"reservation": {"id": ODCR, "instanceCount": 2}}, "nodeGroups.0.scaling.minSize": 2},
        "lower scaling.maxSize to 2",
        {"nodeGroups.0.scaling.maxSize": 2, "teams.0.quotas.0.gpus": 2},
    ),
    R(
        "odcr-group-other-region",
        {
            "nodeGroups.0.capacity": {
                "reservation": {"resourceGroupArn": ODCR_GROUP.replace("us-east-1", "us-west-2"), "instanceCount": 1}
            },
            "nodeGroups.0.scaling.minSize": 1,
        },
        "use the ARN of a Capacity Reservation group in the cluster's region",
        {"nodeGroups.0.capacity.reservation.resourceGroupArn": ODCR_GROUP},
    ),
    R(
        "odcr-idle-reserved",
        {"nodeGroups.0.capacity": {"reservation": {"open": True, "instanceCount": 2}}},
        "set scaling.minSize to 2: running reserved instances costs nothing more",
        {"nodeGroups.0.scaling.minSize": 2},
    ),
    R(
        "too-many-taints",
        {
            "nodeGroups.0.taints": [
                {"key": f"example.com/t{i}", "value": "x", "effect": "NoSchedule"} for i in range(50)
            ]
        },
        "remove at least 1 (labels carry information that need not repel pods)",
        {"nodeGroups.0.taints.49": DEL},
    ),
    R(
        "gpu-taint-in-spec",
        {"nodeGroups.0.taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
        "remove it from the spec",
        {"nodeGroups.0.taints": DEL},
    ),
    R(
        "repeated-taint",
        {
            "nodeGroups.0.taints": [
                {"key": "example.com/a", "value": "x", "effect": "NoSchedule"},
                {"key": "example.com/a", "value": "y", "effect": "NoSchedule"},
            ]
        },
        "remove the repeated taint",
        {"nodeGroups.0.taints.1": DEL},
    ),
    R(
        "ami-architecture",
        {"nodeGroups.0.ami.type": "AL2023_ARM_64_NVIDIA"},
        "use type: AL2023_x86_64_NVIDIA",
        {"nodeGroups.0.ami.type": "AL2023_x86_64_NVIDIA"},
    ),
    R(
        "ami-release-other-kubernetes",
        {"nodeGroups.0.ami.releaseVersion": "1.32.9-20260714"},
        f"use a 1.33 release of AL2023_x86_64_NVIDIA; the newest known is {NEWEST}",
        {"nodeGroups.0.ami.releaseVersion": NEWEST},
    ),
    R(
        "chart-not-pinned",
        {"versions.kueue.chart": "0.19.x"},
        "pin one exact version: 0.18.1, 0.19.2",
        {"versions.kueue.chart": "0.19.2"},
    ),
    R(
        "chart-unsupported",
        {"versions.kueue.chart": "0.19.1"},
        "pin one of them, e.g. 0.19.2 (Helm values are rendered for the keys of these exact versions)",
        {"versions.kueue.chart": "0.19.2"},
    ),
    R(
        "driver-without-version",
        {**STANDARD, "versions.driver": {"source": "Operator"}},
        'add version, e.g. version: "595.91.07"',
        {"versions.driver.version": "595.91.07"},
    ),
    R(
        "driver-version-preinstalled",
        {"versions.driver": {"source": "Preinstalled", "version": "595.91.07"}},
        "remove it, or set source: Operator",
        {"versions.driver.version": DEL},
    ),
    R(
        "driver-not-pinned",
        {**STANDARD, "versions.driver": {"source": "Operator", "version": "latest"}},
        "pin one exact version, e.g. 595.91.07",
        {"versions.driver.version": "595.91.07"},
    ),
    R(
        "agent-unknown",
        {"versions.addons": {"nodeMonitoringAgent": "v1.0.0-eksbuild.1"}},
        f"pin {AGENT}-eksbuild.1",
        {"versions.addons.nodeMonitoringAgent": f"{AGENT}-eksbuild.1"},
    ),
    R(
        "kubernetes-unsupported",
        {"cluster.kubernetesVersion": "1.29"},
        'pin one of them, quoted, e.g. kubernetesVersion: "1.33"',
        {"cluster.kubernetesVersion": "1.33"},
    ),
    R(
        "image-not-pinned",
        {
            "imageSets": [{"name": "training", "images": ["nvcr.io/nvidia/pytorch"]}],
            "nodeGroups.0.images": ["training"],
        },
        "add an exact tag (not latest) or @sha256:... so every node pulls the same bits",
        {"imageSets.0.images": ["nvcr.io/nvidia/pytorch:25.08-py3"]},
    ),
    R(
        "existing-namespace-with-install",
        {"telemetry": {"prometheus": "Install", "existingNamespace": "monitoring"}},
        "remove existingNamespace, or set prometheus: Existing",
        {"telemetry.existingNamespace": DEL},
    ),
    R(
        # Only an unsupported Kubernetes version leaves mode Create without system nodes (no release to default
        # to): both hints are printed, and both are followed.
        "system-nodes-missing",
        {"cluster.systemNodes": DEL, "cluster.kubernetesVersion": "1.29"},
        'add cluster.systemNodes: {releaseVersion: "<the AMI release of your GPU groups>"}',
        {
            "cluster.kubernetesVersion": "1.33",
            "cluster.systemNodes": {"releaseVersion": MINIMAL["nodeGroups"][0]["ami"]["releaseVersion"]},
        },
    ),
    R(
        "system-nodes-release",
        {"cluster.systemNodes.releaseVersion": "1.32.9-20260714"},
        f"use a 1.33 release of AL2023_x86_64_STANDARD; the newest known is {NEWEST_STANDARD}",
        {"cluster.systemNodes.releaseVersion": NEWEST_STANDARD},
    ),
    R(
        "public-endpoint-private",
        {"cluster.endpointAccess": "Private", "cluster.publicEndpoint": {"cidrs": ["198.51.100.0/24"]}},
        "remove publicEndpoint, or set endpointAccess: PublicAndPrivate",
        {"cluster.publicEndpoint": DEL},
    ),
    R(
        "acknowledged-but-closed",
        {
            "cluster.publicEndpoint": {
                "cidrs": ["198.51.100.0/24"],
                "acknowledgeOpenToInternet": "CI runners without fixed egress",
            }
        },
        "remove acknowledgeOpenToInternet (it would record a reason for an exposure that does not exist)",
        {"cluster.publicEndpoint.acknowledgeOpenToInternet": DEL},
    ),
    R(
        "admins-missing",
        {"cluster.admins": DEL},
        'add cluster.admins: [{principalArn: "arn:aws:iam::<account>:role/<the role that runs pulumi up>"}]',
        {"cluster.admins": [{"principalArn": "arn:aws:iam::111122223333:role/platform-admin"}]},
    ),
    R(
        "customer-key-without-admins",
        {
            "cluster.mode": "Existing",
            "cluster.systemNodes": DEL,
            "cluster.admins": DEL,
            "checkpoints": {**CHECKPOINTS, "encryption": "CustomerManagedKey"},
        },
        "add cluster.admins, or use encryption S3Managed",
        {"cluster.admins": [{"principalArn": "arn:aws:iam::111122223333:role/platform-admin"}]},
    ),
    R(
        "admin-other-partition",
        {"cluster.admins.0.principalArn": "arn:aws-cn:iam::111122223333:role/platform-admin"},
        "use the principal's arn:aws:iam::... ARN",
        {"cluster.admins.0.principalArn": "arn:aws:iam::111122223333:role/platform-admin"},
    ),
    R(
        "principal-twice",
        {"teams.0.members": [{"principalArn": "arn:aws:iam::111122223333:role/platform-admin"}]},
        "give each principal one role in the spec (a person in two teams assumes a different role for each)",
        {"teams.0.members.0.principalArn": "arn:aws:iam::111122223333:role/vision-team"},
    ),
    R(
        "principals-one-resource-id",
        {
            "teams.0.members": [
                {"principalArn": "arn:aws:iam::111122223333:role/x.y"},
                {"principalArn": "arn:aws:iam::111122223333:role/x_y"},
            ]
        },
        (
            "a resource id keeps only the lowercased letters, digits and dashes of a name: rename one of the two, or"
            " list one principal in its place"
        ),
        {"teams.0.members.1": DEL},
    ),
    R(
        "gpu-node-group-named-system",
        {"nodeGroups.0.name": "system", "teams.0.quotas.0.nodeGroup": "system"},
        "name the GPU node group otherwise, e.g. after its instance type",
        {"nodeGroups.0.name": "l4", "teams.0.quotas.0.nodeGroup": "l4"},
    ),
    R(
        "kube-proxy-of-another-minor",
        {"versions.addons": {"kubeProxy": "v1.32.5-eksbuild.2"}},
        "pin a v1.33.<patch>-eksbuild.<n> build (aws eks describe-addon-versions --addon-name kube-proxy"
        " --kubernetes-version 1.33)",
        {"versions.addons": {"kubeProxy": "v1.33.3-eksbuild.6"}},
    ),
    R(
        "node-group-name-prefix-too-long",
        {"nodeGroups.0.name": "l" * 32, "teams.0.quotas.0.nodeGroup": "l" * 32},
        "shorten the node group name to at most 31 characters (or metadata.name)",
        {"nodeGroups.0.name": "l" * 31, "teams.0.quotas.0.nodeGroup": "l" * 31},
    ),
    R(
        "fleet-name-too-long-for-node-group-prefixes",
        {"metadata.name": "m" * 30},
        "shorten metadata.name to at most 29 characters",
        {"metadata.name": "m" * 29},
    ),
    R(
        "operator-driver-on-nvidia-ami",
        {"versions.driver": {"source": "Operator", "version": "595.91.07"}},
        "use AL2023_x86_64_STANDARD (the operator installs the driver), or driver source Preinstalled",
        {"nodeGroups.0.ami.type": "AL2023_x86_64_STANDARD"},
    ),
    R(
        "standard-ami-preinstalled",
        STANDARD,
        "use an *_NVIDIA AMI type, or set versions.driver.source: Operator with a pinned version",
        {"nodeGroups.0.ami.type": "AL2023_x86_64_NVIDIA"},
    ),
    R(
        "gdrcopy-without-operator-driver",
        {"versions.driver": {"source": "Preinstalled", "gdrCopy": "Enabled"}},
        "set source: Operator (its driver DaemonSet loads gdrdrv), or gdrCopy: Disabled; a node that loads gdrdrv"
        " itself gets GDRCopy from the device plugin without this setting",
        {"versions.driver.gdrCopy": "Disabled"},
    ),
    R(
        "rdma-without-networks",
        {**RDMA_GROUP, "environments.dev.rollout.through": "network"},
        "add network.rdma.networks: [{name: rail0, interface: <netdev, e.g. ibp24s0>, hca: <RDMA device, e.g."
        " mlx5_0>}]",
        {"network": {"rdma": {"networks": [{"name": "rail0", "interface": "ibp24s0", "hca": "mlx5_0"}]}}},
    ),
    R(
        "rdma-without-rdma-nics",
        {
            **RDMA_GROUP,
            "nodeGroups.0.instanceType": "p5.48xlarge",
            "network": {"rdma": {"networks": [{"name": "rail0", "interface": "ibp24s0", "hca": "mlx5_0"}]}},
        },
        "use fabric EFA (p5.48xlarge has 32 EFA interface(s))",
        {
            "nodeGroups.0.fabric": "EFA",
            "nodeGroups.0.zone": "use1-az4",
            "nodeGroups.0.subnetIds": ["subnet-0aa"],
            "network": DEL,
        },
    ),
    R(
        "rdma-port-twice",
        {
            **RDMA_GROUP,
            "network": {
                "rdma": {
                    "networks": [
                        {"name": "rail0", "interface": "ibp24s0", "hca": "mlx5_0"},
                        {"name": "rail1", "interface": "ibp24s0", "hca": "mlx5_1"},
                    ]
                }
            },
        },
        "one entry per RDMA port",
        {"network.rdma.networks.1.interface": "ibp41s0"},
    ),
    R(
        "gate-image-not-pinned",
        {"network": {"bandwidthGate": {"image": "public.ecr.aws/hpc-cloud/nccl-tests"}}},
        "the gate must measure the same bits every time: append the digest the tag resolves to, as"
        " <image>@sha256:<64 hex digits> (`docker buildx imagetools inspect <image:tag>` prints it)",
        {"network.bandwidthGate.image": "public.ecr.aws/hpc-cloud/nccl-tests@sha256:" + "0" * 64},
    ),
    # The privileged images' digests (issue 31 item 8). FAKE digests: "0" * 64 names no real image.
    R(
        "image-digest-for-another-tag",
        {"images": {"dcgm": f"{DCGM_OLD}@sha256:{'0' * 64}"}},
        f"take the digest of {DCGM_NOW} (`crane digest {DCGM_NOW}` or `docker buildx imagetools inspect {DCGM_NOW}`)"
        f' and write images.dcgm: "{DCGM_NOW}@sha256:<digest>"',
        {"images.dcgm": f"{DCGM_NOW}@sha256:{'0' * 64}"},
        base=THROUGH_HEALTH,
    ),
    R(
        "image-digest-unused",
        {"images": {"multus": f"ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0-thick@sha256:{'0' * 64}"}},
        "the Multus CNI image runs only where docs/tenancy-and-access.md says; remove images.multus",
        {"images.multus": DEL},
    ),
    R(
        "images-require-digests",
        {"images": {"requireDigests": True, "python": f"python:3.13.5-slim-bookworm@sha256:{'0' * 64}"}},
        f'write images.dcgm: "{DCGM_NOW}@sha256:<digest>", the digest from `crane digest {DCGM_NOW}` or'
        f" `docker buildx imagetools inspect {DCGM_NOW}`",
        {"images.dcgm": f"{DCGM_NOW}@sha256:{'0' * 64}"},
        base=THROUGH_HEALTH,
    ),
    R(
        "pods-ready-timeout-short",
        {"admission": {"podsReadyTimeoutSeconds": 60}},
        f"remove podsReadyTimeoutSeconds (the default is {TIMEOUT}s), or set at least {TIMEOUT}",
        {"admission.podsReadyTimeoutSeconds": DEL},
    ),
    R(
        "borrow-without-reclaim",
        {"admission": {"preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": "LowerPriority"}}},
        "set reclaimWithinCohort: LowerPriority or Any, or borrowWithinCohort: Never",
        {"admission.preemption.reclaimWithinCohort": "LowerPriority"},
    ),
    R(
        "preemptible-above-protected",
        {
            "admission": {
                "priorities": [
                    {"name": "serving", "value": 100, "preemptible": False},
                    {"name": "batch", "value": 1000, "preemptible": True},
                ]
            }
        },
        "give every non-preemptible class a higher value than every preemptible one",
        {"admission.priorities.0.value": 10000},
    ),
    R(
        "system-namespace",
        {"teams.0.namespace": "kube-system"},
        "give the team its own namespace (teams[].namespace; omitted, it is the team name)",
        {"teams.0.namespace": DEL},
    ),
    R(
        "placement-without-topology-labels",
        {"nodeGroups.0.topology": {"placement": "Required"}},
        "set placement: None, or use an instance type EC2 reports topology for (p4d, p5, p5e, p5en, p6, g6e)",
        {"nodeGroups.0.topology.placement": "None"},
    ),
    R(
        "group-named-like-a-config-entry",
        {
            "nodeGroups.0.name": "default",
            "nodeGroups.0.sharing": {"strategy": "MPS", "replicas": 2},
            "teams.0.quotas.0.nodeGroup": "default",
            "environments.dev.rollout.through": "sharing",
        },
        "rename the node group",
        {"nodeGroups.0.name": "l4", "teams.0.quotas.0.nodeGroup": "l4"},
    ),
    # --- schema_errors.py --------------------------------------------------------------------------------------
    R(
        "unknown-field",
        {"nodeGroups.0.scaling": {"maxSiz": 4}},
        'did you mean "maxSize"?',
        {"nodeGroups.0.scaling": {"maxSize": 4}},
    ),
    R(
        "moved-field",
        {"cluster.publicAccessCidrs": ["198.51.100.0/24"]},
        "publicAccessCidrs moved: write publicEndpoint: {cidrs: [...]} (an endpoint open to 0.0.0.0/0 also needs"
        " publicEndpoint.acknowledgeOpenToInternet)",
        {"cluster.publicAccessCidrs": DEL, "cluster.publicEndpoint": {"cidrs": ["198.51.100.0/24"]}},
    ),
    R(
        "missing-required",
        {"nodeGroups.0.scaling": {}},
        "maxSize: most nodes; quotas and cost estimates are checked against it.",
        {"nodeGroups.0.scaling.maxSize": 4},
    ),
    R("quote-string", {"cluster.kubernetesVersion": 1.33}, 'quote it: "1.33"', {"cluster.kubernetesVersion": "1.33"}),
    R(
        "not-finite",
        {"cost": {"gpuHourUsd": {"l4": float("nan")}}},
        "write a number such as 0.5",
        {"cost.gpuHourUsd.l4": 0.5},
    ),
    R(
        "not-whole",
        {"nodeGroups.0.scaling.maxSize": 4.5},
        "write an integer without a decimal point or exponent, e.g. 8",
        {"nodeGroups.0.scaling.maxSize": 4},
    ),
    R(
        "quoted-number",
        {"nodeGroups.0.scaling.maxSize": "4"},
        "write a number, without quotes: maxSize: 4",
        {"nodeGroups.0.scaling.maxSize": 4},
    ),
    R(
        "eks-spelling",
        {"nodeGroups.0.capacity": {"type": "ON_DEMAND"}},
        "write type: OnDemand (gpufleet converts it for the EKS API)",
        {"nodeGroups.0.capacity.type": "OnDemand"},
    ),
    R(
        "enum-did-you-mean",
        {"nodeGroups.0.workloadClass": "batch"},
        'did you mean "Batch"?',
        {"nodeGroups.0.workloadClass": "Batch"},
    ),
    R(
        "enum-yaml-boolean",
        {"nodeGroups.0.efaTaint": False},
        "YAML 1.1 reads a plain on/off/yes/no as a boolean; write one of the values above",
        {"nodeGroups.0.efaTaint": DEL},
    ),
    R(
        "pattern",
        {"nodeGroups.0.zone": "us-east-1a"},
        "list the zone IDs of your region: aws ec2 describe-availability-zones --query"
        " 'AvailabilityZones[].[ZoneName,ZoneId]'",
        {"nodeGroups.0.zone": "use1-az4"},
    ),
    R(
        "const",
        {"apiVersion": "gpufleet/v1"},
        "write apiVersion: gpufleet/v1alpha1",
        {"apiVersion": "gpufleet/v1alpha1"},
    ),
    R(
        "duplicate-entries",
        {"cluster.network.subnetIds": ["subnet-0aa", "subnet-0aa"]},
        "list each entry once",
        {"cluster.network.subnetIds": ["subnet-0aa", "subnet-0bb"]},
    ),
    R(
        "environment-name",
        {"environments": {"Dev": MINIMAL["environments"]["dev"]}},
        "environment names are also Pulumi stack names, e.g. dev, prod, staging-eu",
        {"environments": {"dev": MINIMAL["environments"]["dev"]}},
    ),
    # --- environments.py, pipeline.py --------------------------------------------------------------------------
    R(
        "override-unknown-group",
        {"environments.dev.overrides": {"nodeGroups": {"l4x": {"scaling": {"minSize": 1}}}}},
        'did you mean "l4"?',
        {"environments.dev.overrides": {"nodeGroups": {"l4": {"scaling": {"minSize": 1}}}}},
    ),
    R("unknown-environment", {}, 'did you mean "dev"?', {}, env="de", fixed_env="dev"),
    R(
        "unknown-cluster-stack",
        {},
        'did you mean "mini-use1"?',
        {},
        base=MULTI,
        env="dev.mini-use2",
        fixed_env="dev.mini-use1",
    ),
    # --- clusters.py -------------------------------------------------------------------------------------------
    R(
        "multikueue-without-clusters",
        {"admission": {"multiKueue": {"stepSize": 2}}},
        "remove it, or describe the manager and its workers in clusters[] (docs/multi-cluster.md)",
        {"admission.multiKueue": DEL},
    ),
    R(
        "clusters-and-node-groups",
        {"nodeGroups": [L4_WEST]},
        "move each group to clusters[].nodeGroups of the worker that runs it",
        {"nodeGroups": DEL, "clusters.2": WEST},
        base=MULTI,
    ),
    R(
        "clusters-and-cluster-region",
        {"cluster.region": "us-east-1"},
        "move it to the clusters[] entry it belongs to: clusters[].region",
        {"cluster.region": DEL},
        base=MULTI,
    ),
    R(
        "clusters-without-manager",
        {"clusters.0": WEST},
        "add a small CPU-only cluster with role: Manager (docs/multi-cluster.md)",
        {"clusters.2": MANAGER},
        base=MULTI,
    ),
    R(
        "clusters-second-manager",
        {"clusters.2": {**MANAGER, "name": "mini-manager-2"}},
        "make it a Worker, or describe the second fleet in a spec of its own",
        {"clusters.2": WEST},
        base=MULTI,
    ),
    R(
        "clusters-without-worker",
        {"clusters.1": {**MANAGER, "name": "mini-manager-2"}, "teams.0.quotas.0.nodeGroup": "l4-usw2"},
        "add the GPU clusters with role: Worker and their nodeGroups",
        {"clusters.1": WEST},
        base=MULTI,
    ),
    R(
        "clusters-same-name",
        {"clusters.2": {**WEST, "name": "mini-use1"}},
        "give each cluster its own EKS name",
        {"clusters.2.name": "mini-usw2"},
        base=MULTI,
    ),
    R(
        "clusters-manager-runs-gpus",
        {"clusters.0.nodeGroups": [L4_WEST]},
        "move these node groups to a Worker; the manager keeps only its CPU system nodes",
        {"clusters.0.nodeGroups": DEL, "clusters.2": WEST},
        base=MULTI,
    ),
    R(
        "clusters-worker-without-groups",
        {"clusters.2": {k: v for k, v in WEST.items() if k != "nodeGroups"}},
        "give it nodeGroups, or remove it",
        {"clusters.2": DEL},
        base=MULTI,
    ),
    R(
        "clusters-group-name-twice",
        {"clusters.2": {**WEST, "nodeGroups": [MINIMAL["nodeGroups"][0]]}},
        "name it for its region, e.g. l4-us-west-2",
        {"clusters.2.nodeGroups.0.name": "l4-us-west-2"},
        base=MULTI,
    ),
    R(
        "clusters-quota-on-no-worker",
        {"teams.0.quotas.0.nodeGroup": "l5"},
        "name a node group of clusters[].nodeGroups of a Worker",
        {"teams.0.quotas.0.nodeGroup": "l4"},
        base=MULTI,
    ),
    # --- load.py: breaks in the YAML text ----------------------------------------------------------------------
    R(
        "duplicate-key",
        {},
        "YAML keeps only the last value; remove one of them",
        {},
        edit=lambda t: t.replace("kind: Fleet\n", "kind: Fleet\nkind: Fleet\n", 1),
        unedit=lambda t: t.replace("kind: Fleet\n", "", 1),
    ),
    R(
        "yaml11-key",
        {"nodeGroups.0.labels": {"KEY": "x"}},
        'quote it: "on"',
        {},
        edit=lambda t: t.replace("KEY:", "on:"),
        unedit=lambda t: t.replace("on: x\n", '"on": x\n'),
    ),
    R(
        "merge-key-not-mapping",
        {},
        "merge an anchored mapping, e.g. <<: *defaults",
        {},
        edit=lambda t: t.replace("metadata:\n", "metadata:\n  <<: 5\n", 1),
        unedit=lambda t: t.replace("  <<: 5\n", "", 1),
    ),
    R(
        "octal",
        {},
        "drop the leading zero, or quote it if a string is meant",
        {},
        edit=lambda t: t.replace("maxSize: 4\n", "maxSize: 04\n"),
        unedit=lambda t: t.replace("maxSize: 04\n", "maxSize: 4\n"),
    ),
    R(
        "unknown-tag",
        {},
        "remove the tag: the spec uses plain YAML values",
        {},
        edit=lambda t: t.replace("maxSize: 4\n", "maxSize: !count 4\n"),
        unedit=lambda t: t.replace("!count ", ""),
    ),
    R(
        "empty-tagged-value",
        {},
        "write an int after the tag",
        {},
        edit=lambda t: t.replace("maxSize: 4\n", "maxSize: !!int\n"),
        unedit=lambda t: t.replace("maxSize: !!int\n", "maxSize: !!int 4\n"),
    ),
    R(
        "invalid-yaml11-value",
        {},
        'quote it if a string is meant: "2026-13-45"',
        {},
        edit=lambda t: t.replace("name: mini\n", "name: 2026-13-45\n", 1),
        unedit=lambda t: t.replace("2026-13-45", '"2026-13-45"'),
    ),
    R(
        "base-60",
        {},
        "write the number you mean (e.g. 90), or quote it if a string is meant",
        {},
        edit=lambda t: t.replace("maxSize: 4\n", "maxSize: 1:30\n"),
        unedit=lambda t: t.replace("maxSize: 1:30\n", "maxSize: 90\n"),
    ),
    R(
        "too-deep",
        {},
        "a fleet spec is about ten levels deep",
        {},
        edit=lambda t: t + "deep: " + "[" * 80 + "]" * 80 + "\n",
        unedit=lambda t: t[: t.index("deep: ")],
    ),
    R(
        "alias-bomb",
        {},
        "use aliases for small shared blocks only; a fleet spec has a few thousand values at most",
        {},
        edit=lambda t: t + ALIAS_BOMB,
        unedit=lambda t: t[: t.index("x0: ")],
    ),
    R(
        "recursive-anchor",
        {},
        "YAML anchors here must not be recursive",
        {},
        edit=lambda t: t + "loop: &loop [*loop]\n",
        unedit=lambda t: t[: t.index("loop: ")],
    ),
    R(
        "two-documents",
        {},
        "put one Fleet in each file (remove the second `---` and what follows)",
        {},
        edit=lambda t: t + "---\nkind: Fleet\n",
        unedit=lambda t: t[: t.index("---\n")],
    ),
    R(
        "empty-file",
        {},
        "start from the example fleet.yaml",
        {},
        edit=lambda t: "# a fleet, one day\n",
        unedit=lambda t: (ROOT / "fleet.yaml").read_text(encoding="utf-8"),
    ),
    R(
        "not-utf8",
        {"metadata.name": "mini"},
        "save the file as UTF-8",
        {},
        edit=lambda t: "# caf\u00e9\n" + t,
        unedit=lambda t: t,
        encoding="latin-1",
    ),
    # Helm values overlays (gpufleet.rules.helm_values): each key checked against the pinned chart's values.
    R(
        "helm-unknown-key",
        {"helm.gpuOperator.values.operater": {"priorityClassName": "system-cluster-critical"}},
        'did you mean "operator"?',
        {
            "helm.gpuOperator.values.operater": DEL,
            "helm.gpuOperator.values.operator": {"priorityClassName": "system-cluster-critical"},
        },
        check=lambda plan: _operator_values(plan, "operator", {"priorityClassName": "system-cluster-critical"}),
    ),
    R(
        "helm-guarded-value",
        {
            "helm.gpuOperator.values.cdi": {"enabled": True},
            "helm.gpuOperator.values.operator": {"priorityClassName": "system-cluster-critical"},
        },
        "remove helm.gpuOperator.values.cdi",
        {"helm.gpuOperator.values.cdi": DEL},
        check=lambda plan: _operator_values(plan, "cdi", {"enabled": False}),
    ),
    R(
        "helm-map-for-a-scalar",
        {"helm.gpuOperator.values.psa": {"enabled": {"x": 1}}},
        "give psa.enabled a boolean value, as its default is",
        {"helm.gpuOperator.values.psa.enabled": True},
        check=lambda plan: _operator_values(plan, "psa", {"enabled": True}),
    ),
    R(
        "helm-node-selector-value-not-a-string",
        {"helm.gpuOperator.values.operator": {"nodeSelector": {"kubernetes.io/os": 1}}},
        'quote it: kubernetes.io/os: "1"',
        {"helm.gpuOperator.values.operator": {"nodeSelector": {"kubernetes.io/os": "1"}}},
    ),
    R(
        "helm-subchart-values-absent",
        {"helm.kubePrometheusStack.values.grafana": {"adminUser": "ops", "notAValue": 1}},
        "remove helm.kubePrometheusStack.values.grafana.notAValue",
        {"helm.kubePrometheusStack.values.grafana.notAValue": DEL},
    ),
    R(
        "helm-unknown-chart",
        {"helm.kueu": {"values": {"controllerManager": {"replicas": 3}}}},
        'did you mean "kueue"?',
        {"helm.kueu": DEL, "helm.kueue": {"values": {"controllerManager": {"replicas": 3}}}},
    ),
    R(
        "helm-chart-not-installed",
        {"helm.karpenter": {"values": {"replicas": 1}}},
        "remove helm.karpenter",
        {"helm.karpenter": DEL},
    ),
)

UNREPLAYED: dict[Site, str] = {
    Site(
        "gpufleet/rules/pipeline.py",
        "_not_a_fleet",
        "f'gpufleet reads a fleet spec (apiVersion: gpufleet/v1alpha1, kind: Fleet; `gpufleet init` writes one); whether this {kind} would run on a fleet: gpufleet explain SPEC --env ENV {name}'",
    ): (
        "the file is not a spec to fix but another document (a workload manifest): the hint names the command that"
        " reads it; tests/specs/invalid/not-a-fleet-spec.err holds the message and hint exactly"
    ),
}


_BROKEN: dict[str, tuple[list[Issue], dict[str, set[Site]]]] = {}


def broken(replay: Replay) -> tuple[list[Issue], dict[str, set[Site]]]:
    """The bad spec's issues and the sites of their hints (each replay validated once per run)."""
    if replay.name not in _BROKEN:
        _BROKEN[replay.name] = hinted(replay.broken_spec(), replay.env)
    return _BROKEN[replay.name]


@pytest.mark.parametrize("replay", REPLAYS, ids=lambda r: r.name)
def test_following_the_hint_gives_a_valid_spec_that_deploys_right(replay: Replay) -> None:
    issues, made = broken(replay)
    assert replay.hint in [i.hint for i in issues], "\n".join(f"{i.message} | hint: {i.hint}" for i in issues)
    assert made.get(replay.hint), f"no hint site on the stack of: {replay.hint}"
    after, plans = planned(replay.fixed_spec(), replay.fixed_env or replay.env)
    assert plans, "the fixed spec fails:\n" + "\n".join(f"{i.message} | hint: {i.hint}" for i in after)
    assert replay.hint not in [i.hint for i in after], "the hint is printed again"
    for plan in plans.values():
        if replay.check is not None:
            replay.check(plan)


def test_every_hint_site_is_replayed() -> None:
    reached = {site for replay in REPLAYS for site in broken(replay)[1].get(replay.hint, set())}
    missing = sorted(all_sites() - reached - set(UNREPLAYED))
    assert not missing, "hint sites without a replay row in REPLAYS:\n" + "\n".join(map(str, missing))
    assert not set(UNREPLAYED) & reached, "replayed sites still listed in UNREPLAYED"
    assert set(UNREPLAYED) <= all_sites(), "UNREPLAYED names sites that no longer exist"


# ---------------------------------------------------------------------------------------------------------------
# Plan warnings that say what to do.


@dataclass(frozen=True, slots=True, eq=False)
class PlanReplay:
    name: str
    broken: Patch  # applied to the minimal spec
    warning: str  # a regular expression for the warning (every warning it matches is this row's)
    fixed: Patch  # what the warning says, applied to the broken spec


P = PlanReplay
EFA_GATE = {
    **P5_EFA,
    "nodeGroups.0.zone": "use1-az4",
    "nodeGroups.0.subnetIds": ["subnet-0aa"],
    "cluster.autoscaler": "None",
    "environments.dev.rollout.through": "network",
}
PLAN_REPLAYS: tuple[PlanReplay, ...] = (
    P(
        "addon-not-pinned",
        {},
        r"EKS add-ons not pinned: .*\)\. EKS installs its default version of each at creation.* To silence this, pin"
        r" each .*",
        {
            "versions.addons.coreDns": "v1.12.4-eksbuild.1",
            "versions.addons.kubeProxy": "v1.33.5-eksbuild.2",
            "versions.addons.nodeMonitoringAgent": "v1.7.0-eksbuild.1",
            "versions.addons.podIdentityAgent": "v1.3.8-eksbuild.2",
            "versions.addons.vpcCni": "v1.20.4-eksbuild.1",
        },
    ),
    P(
        "endpoint-open-to-all",
        {},
        r"cluster endpoint is public to 0\.0\.0\.0/0 and gpufleet check fails on it: set"
        r" cluster\.publicEndpoint\.cidrs, or say why in publicEndpoint\.acknowledgeOpenToInternet",
        {"cluster.publicEndpoint": {"cidrs": ["198.51.100.0/24"]}},
    ),
    P(
        "team-without-members",
        {},
        r"team \S+ has no members: nobody can submit its work, and gpufleet check fails \(add teams\[\]\.members\)",
        TEAM_MEMBER,
    ),
    P(
        "existing-cluster-autoscaler-credentials",
        {"cluster.mode": "Existing", "cluster.systemNodes": DEL},
        r"gpufleet manages no EKS add-ons on an existing cluster: the eks-pod-identity-agent add-on must be installed,"
        r" or the Cluster Autoscaler gets no AWS credentials and scales nothing \(or set cluster\.autoscaler: None"
        r" .*\)",
        {"cluster.autoscaler": "None"},
    ),
    P(
        "bandwidth-gate-one-node",
        EFA_GATE,
        r'node group "\S+" may run fewer than two nodes \(minSize \d+\): the bandwidth gate waits up to \d+ min for two'
        r" \(cluster\.autoscaler is None: your autoscaler must add them, or raise minSize\)",
        {"nodeGroups.0.scaling.minSize": 2},
    ),
    P(
        "checkpoint-loss-large",
        {
            "checkpoints": {
                "bucket": "mini-ckpt",
                "modelParameters": 70_000_000_000,
                "meanTimeBetweenFailuresHours": 12,
            },
            "environments.dev.rollout.through": "storage",
        },
        r"the largest job \(checkpoints\): about \d+% of the time would be lost to checkpointing and rework .*",
        {"checkpoints.save": "Asynchronous"},
    ),
    P(
        "bottlerocket-mig-unpartitioned",
        {
            "nodeGroups.0.instanceType": "p6-b200.48xlarge",
            "nodeGroups.0.ami": BOTTLEROCKET,
            "nodeGroups.0.sharing": {"strategy": "MIG", "profile": "1g.23gb"},
            "environments.dev.rollout.through": "sharing",
        },
        r"node group \S+: Bottlerocket partitions only A100, H100 and H200 with MIG; \S+ will come up unpartitioned"
        r" \(use an AL2023 AMI, where the GPU Operator's MIG manager does it\)",
        {"nodeGroups.0.ami": MINIMAL["nodeGroups"][0]["ami"]},
    ),
)
# Warnings whose fix words are not about the spec (the fix is in the AWS account or on the cluster).
NOT_SPEC_FIXES = (r"gpufleet adds access entries to the existing cluster: .* \(import or remove that entry\)",)
# What a plan warning that tells the reader what to change in the spec looks like.
FIX_WORDS = re.compile(r"\b(set|add|raise|lower|remove|pin|use) (?!up )|is not pinned \(")


def plan_warnings(spec: str | bytes, env: str | None = None) -> list[str]:
    issues, plans = planned(spec, env)
    assert plans, "\n".join(i.message for i in issues)
    return [w for plan in plans.values() for w in plan.warnings]


@pytest.mark.parametrize("replay", PLAN_REPLAYS, ids=lambda r: r.name)
def test_following_a_plan_warning_clears_it(replay: PlanReplay) -> None:
    before = [w for w in plan_warnings(dump(patched(MINIMAL, replay.broken))) if re.fullmatch(replay.warning, w)]
    assert before, f"no plan warning matches {replay.warning}"
    after = plan_warnings(dump(patched(MINIMAL, replay.broken, replay.fixed)))
    assert not set(before) & set(after), "the warning is printed again"


def corpus() -> Iterator[str | bytes]:
    """Every spec whose plan this test reads: the golden cases, the valid specs, and every replayed spec."""
    for path in [
        ROOT / "fleet.yaml",
        *sorted((ROOT / "tests" / "golden" / "cases").glob("*/fleet.yaml")),
        *sorted((ROOT / "tests" / "specs" / "valid").glob("*.yaml")),
    ]:
        yield path.read_text(encoding="utf-8")
    for replay in REPLAYS:
        if replay.fixed_env is None:  # the other one is the minimal spec
            yield replay.fixed_spec()
    for plan_replay in PLAN_REPLAYS:
        yield dump(patched(MINIMAL, plan_replay.broken))


def test_every_plan_warning_that_says_what_to_change_is_replayed() -> None:
    patterns = [r.warning for r in PLAN_REPLAYS] + list(NOT_SPEC_FIXES)
    said = {w for spec in corpus() for w in plan_warnings(spec) if FIX_WORDS.search(w)}
    missing = sorted(w for w in said if not any(re.fullmatch(p, w) for p in patterns))
    assert not missing, "plan warnings with a fix but no row in PLAN_REPLAYS (or NOT_SPEC_FIXES):\n" + "\n".join(
        missing
    )
