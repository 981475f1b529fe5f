"""Stage 6, storage: where checkpoints go, who may write them, and how often they should be written.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/stages/storage.py.
"""

from __future__ import annotations

from gpufleet.facts import catalog, checkpoints, pricing
from gpufleet.plan.builders import fsx, mountpoint
from gpufleet.plan.builders.cluster import pod_identity_resources, pod_identity_warning, tags
from gpufleet.plan.builders.common import AWS_PROVIDER, k8s
from gpufleet.plan.manifests import storage as st
from gpufleet.plan.parts import BuildContext, Ref, Resource, StageContent
from gpufleet.plan.stages.cost import group_gpu_hour_usd
from gpufleet.spec.fleet import CheckpointJob, Checkpoints, Fleet, NodeGroup

BUCKET = "checkpoint-bucket"
KEY = "checkpoint-key"


def writer_group(fleet: Fleet) -> NodeGroup | None:
    """The group the largest job runs on: the Training group with the largest maxSize (else, without Training
    groups, the largest group that is not Inference: inference never checkpoints), the first of equals."""
    training = [g for g in fleet.node_groups if g.workload_class == "Training"]
    pool = training or [g for g in fleet.node_groups if g.workload_class != "Inference"]
    return max(pool, key=lambda g: g.max_size, default=None)


def local_gbps(cp: Checkpoints, group: NodeGroup | None) -> float:
    """One node's write bandwidth to its RAID0 array: the spec's figure, else devices x the per-device figure
    (RAID0 stripes every write over all devices)."""
    if cp.local_write_gbps is not None:
        return cp.local_write_gbps
    devices = catalog.local_nvme_devices(group.instance_type) if group is not None else 0
    return cp.local_device_write_gbps * max(devices, 1)


def host_copy_gbps(cp: Checkpoints, group: NodeGroup | None) -> float | None:
    """A node's GPU-to-host copy bandwidth when saves are asynchronous (its GPUs copy in parallel), else None."""
    if cp.save != "Asynchronous":
        return None
    info = catalog.lookup(group.instance_type) if group is not None else None
    return cp.host_copy_gbps * (info.gpu_count if info is not None else 1)


def fleet_writer_nodes(fleet: Fleet, cp: Checkpoints) -> int:
    if cp.writer_nodes is not None:
        return cp.writer_nodes
    group = writer_group(fleet)
    return group.max_size if group is not None and group.workload_class == "Training" else 1


def sizing(fleet: Fleet, cp: Checkpoints) -> checkpoints.Sizing:
    """The fleet-level figures: the largest model, written by every node of the largest job."""
    group = writer_group(fleet)
    return checkpoints.sizing(
        parameters=cp.model_parameters,
        bytes_per_parameter=cp.bytes_per_parameter,
        mtbf_hours=cp.mean_time_between_failures_hours,
        local_gbps=local_gbps(cp, group),
        bucket_gbps=cp.bucket_write_gbps,
        writer_nodes=fleet_writer_nodes(fleet, cp),
        staged=group is not None and group.local_storage == "RAID0",
        host_copy_gbps=host_copy_gbps(cp, group),
        interval_minutes=cp.interval_minutes,
    )


def job_mtbf_hours(fleet: Fleet, cp: Checkpoints, job: CheckpointJob) -> float:
    """The job's MTBF, else the fleet's scaled by node count: node failures are independent, so the fleet's MTBF
    (of a writerNodes-node job) times writerNodes / nodes."""
    if job.mean_time_between_failures_hours is not None:
        return job.mean_time_between_failures_hours
    return cp.mean_time_between_failures_hours * fleet_writer_nodes(fleet, cp) / job.nodes


def job_sizing(fleet: Fleet, cp: Checkpoints, job: CheckpointJob) -> checkpoints.Sizing:
    group = next((g for g in fleet.node_groups if g.name == job.node_group), None)
    return checkpoints.sizing(
        parameters=job.model_parameters,
        bytes_per_parameter=cp.bytes_per_parameter,
        mtbf_hours=job_mtbf_hours(fleet, cp, job),
        local_gbps=local_gbps(cp, group),
        bucket_gbps=cp.bucket_write_gbps,
        writer_nodes=job.nodes,
        staged=group is not None and group.local_storage == "RAID0",
        host_copy_gbps=host_copy_gbps(cp, group),
        interval_minutes=job.interval_minutes,
    )


def _encryption_rule(cp: Checkpoints) -> dict[str, object]:
    """SSE-S3, or SSE-KMS with the fleet's key and an S3 Bucket Key (S3 derives object keys from one bucket-level
    data key, so writing a sharded checkpoint is not one KMS request per object: KMS request quotas and cost)."""
    if not st.customer_managed_key(cp):
        return {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}
    return {
        "applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": Ref(KEY, "arn")},
        "bucketKeyEnabled": True,
    }


def key_resources(fleet: Fleet, cp: Checkpoints) -> list[Resource]:
    """checkpoints.encryption CustomerManagedKey: the key (yearly automatic rotation; protected and retained like
    the bucket, since deleting it would make every checkpoint unreadable) and an alias naming it."""
    if not st.customer_managed_key(cp):
        return []
    roles = [Ref(f"checkpoints-role-{t.name}", "arn") for t in fleet.teams]
    return [
        Resource(
            id=KEY,
            type="aws:kms/key:Key",
            provider=AWS_PROVIDER,
            protect=True,
            retain_on_delete=True,
            args={
                "description": f"Fleet {fleet.name}: checkpoints in s3://{cp.bucket} (SSE-KMS)",
                "enableKeyRotation": True,
                "policy": st.key_policy(fleet, roles),
                "tags": tags(fleet),
            },
        ),
        Resource(
            id=f"{KEY}-alias",
            type="aws:kms/alias:Alias",
            provider=AWS_PROVIDER,
            args={"name": st.key_alias(fleet), "targetKeyId": Ref(KEY, "keyId")},
        ),
    ]


def bucket_resources(fleet: Fleet, cp: Checkpoints) -> list[Resource]:
    """The bucket and its settings.

    Why: docs/network-and-storage.md, "Design notes", storage.bucket_resources."""
    name = Ref(BUCKET, "bucket")

    def setting(suffix: str, type_: str, args: dict[str, object], after: tuple[str, ...] = ()) -> Resource:
        return Resource(
            id=f"{BUCKET}-{suffix}",
            type=type_,
            provider=AWS_PROVIDER,
            retain_on_delete=True,
            depends_on=after,
            args={"bucket": name, **args},
        )

    return [
        Resource(
            id=BUCKET,
            type="aws:s3/bucket:Bucket",
            provider=AWS_PROVIDER,
            protect=True,
            retain_on_delete=True,
            args={"bucket": cp.bucket, "forceDestroy": False, "tags": tags(fleet)},
        ),
        setting(
            "versioning", "aws:s3/bucketVersioning:BucketVersioning", {"versioningConfiguration": {"status": "Enabled"}}
        ),
        setting(
            "encryption",
            "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
            {"rules": [_encryption_rule(cp)]},
        ),
        setting(
            "public-access-block",
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
            {
                "blockPublicAcls": True,
                "blockPublicPolicy": True,
                "ignorePublicAcls": True,
                "restrictPublicBuckets": True,
            },
        ),
        setting(
            "ownership",
            "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
            {"rule": {"objectOwnership": "BucketOwnerEnforced"}},
        ),
        setting(
            "policy",
            "aws:s3/bucketPolicy:BucketPolicy",
            {"policy": st.bucket_policy(fleet, cp)},
            after=(f"{BUCKET}-public-access-block",),
        ),
        # Noncurrent-version rules act only on a versioned bucket.
        setting(
            "lifecycle",
            "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
            {"rules": st.lifecycle_rules(cp)},
            after=(f"{BUCKET}-versioning",),
        ),
    ]


def identity_resources(
    fleet: Fleet, cp: Checkpoints, interval_s: float, job_intervals: dict[str, dict[str, float]]
) -> list[Resource]:
    """Per team: IAM role (trusting Pod Identity for its service account only), its prefix policy, the Pod
    Identity association, and the ServiceAccount and ConfigMap in the team's namespace (which the admission
    stage creates; this stage runs after it)."""
    out: list[Resource] = []
    for team in fleet.teams:
        out += [
            *pod_identity_resources(
                fleet,
                role=f"checkpoints-role-{team.name}",
                policy=f"checkpoints-policy-{team.name}",
                association=f"checkpoints-pod-identity-{team.name}",
                name_prefix=f"{fleet.name}-{team.name}-ckpt-",
                description=(
                    f"Team {team.name}: checkpoints under s3://{cp.bucket}/{st.team_prefix(team)} (EKS Pod Identity)"
                ),
                policy_name="checkpoint-prefix",
                policy_document=st.team_access_policy(
                    fleet, cp, team, Ref(KEY, "arn") if st.customer_managed_key(cp) else None
                ),
                namespace=team.namespace,
                service_account=st.CHECKPOINT_SERVICE_ACCOUNT,
            ),
            k8s(st.service_account(team)),
            k8s(st.checkpoint_configmap(fleet, cp, team, interval_s, job_intervals.get(team.name, {}))),
        ]
    return out


def _raid0_rows(groups: list[NodeGroup], s: checkpoints.Sizing) -> tuple[list[str], list[str]]:
    rows = [
        "| node group | instance | instance-store NVMe (RAID0) | mounted at | room for 2 checkpoint shards |",
        "|---|---|---|---|---|",
    ]
    warnings = []
    need = 2 * s.shard_bytes
    for g in groups:
        info = catalog.lookup(g.instance_type)
        nvme = (info.local_nvme_gib if info else 0) * checkpoints.GB
        fits = nvme >= need
        rows.append(
            f"| {g.name} | {g.instance_type} | {checkpoints.human_bytes(nvme) if nvme else 'none'} |"
            f" `{st.raid0_mount(g)}` | {'yes' if fits else 'no'} ({checkpoints.human_bytes(need)} needed) |"
        )
        if not fits:
            warnings.append(
                f'node group "{g.name}" ({g.instance_type}) has {checkpoints.human_bytes(nvme) if nvme else "no"}'
                f" instance-store NVMe; staging needs room for two checkpoint shards ({checkpoints.human_bytes(need)}:"
                " the one uploading and the one being written): raise checkpoints.writerNodes or write to the bucket"
                " directly"
            )
    return rows, warnings


def _sizing_notes(fleet: Fleet, cp: Checkpoints, s: checkpoints.Sizing) -> list[str]:
    d = checkpoints.duration
    group = writer_group(fleet)
    if cp.writer_nodes is not None:
        nodes = f"{s.writer_nodes} nodes in parallel (checkpoints.writerNodes)"
    elif s.writer_nodes > 1 and group is not None:
        nodes = f"every node of the largest job: {s.writer_nodes} nodes of `{group.name}` (its maxSize) in parallel"
    else:
        nodes = "1 node (no Training group)"
    lines = [
        (
            f"Checkpoint size: {cp.model_parameters:,} parameters x {cp.bytes_per_parameter} bytes ="
            f" **{checkpoints.human_bytes(s.checkpoint_bytes)}**, written by {nodes}, a"
            f" {checkpoints.human_bytes(s.shard_bytes)} shard each."
        ),
        "",
        "| tier | bandwidth per node | from | write time |",
        "|---|---|---|---|",
    ]
    if s.host_copy_s is not None and s.host_copy_gbps is not None:
        info = catalog.lookup(group.instance_type) if group is not None else None
        gpus = info.gpu_count if info is not None else 1
        lines.append(
            f"| GPU to host memory (asynchronous save: the part training waits for) | {s.host_copy_gbps:g} GB/s |"
            f" {gpus} GPUs x checkpoints.hostCopyGBps {cp.host_copy_gbps:g} | {d(s.host_copy_s)} |"
        )
    if s.local_write_s is not None:
        if cp.local_write_gbps is not None:
            source = "checkpoints.localWriteGBps"
        else:
            devices = max(catalog.local_nvme_devices(group.instance_type), 1) if group is not None else 1
            source = f"RAID0 of {devices} devices x checkpoints.localDeviceWriteGBps {cp.local_device_write_gbps:g}"
        lines.append(f"| node-local NVMe | {s.local_gbps:g} GB/s | {source} | {d(s.local_write_s)} |")
    lines.append(f"| bucket | {s.bucket_gbps:g} GB/s | checkpoints.bucketWriteGBps | {d(s.bucket_write_s)} |")
    if s.host_copy_gbps is not None:
        blocking = "the GPU-to-host copy; the writes run in the background"
    elif s.local_write_s is not None:
        blocking = "node-local NVMe write; the upload runs in the background"
    else:
        blocking = "bucket write"
    ratio = s.blocking_write_s / s.mtbf_s
    lines += [
        "",
        f"- Blocking write C = {d(s.blocking_write_s)} ({blocking}); MTBF M = {d(s.mtbf_s)}"
        f" (checkpoints.meanTimeBetweenFailuresHours); C/M = {ratio:.3g}.",
        f"- Daly's interval (Daly 2006): sqrt(2CM) x (1 + sqrt(C/2M)/3 + C/18M) - C = **{d(s.daly_s)}**"
        + (f", raised to the bucket write time {d(s.bucket_write_s)}" if s.recommended_interval_s > s.daly_s else "")
        + f"; Young's first-order sqrt(2CM) (Young 1974) is {d(s.young_s)}.",
    ]
    if s.configured_interval_s is None:
        lines.append(
            f"- Interval in use (checkpoint-config `CHECKPOINT_INTERVAL_SECONDS`): the optimum, {d(s.interval_s)}."
        )
    else:
        lines.append(f"- Interval in use (checkpoints.intervalMinutes): {d(s.interval_s)}.")
    lines.append(
        f"- Expected time lost to checkpointing and rework at that interval: about {s.waste:.1%}"
        " (Daly's model, restart time 0: 1 - T / (M (e^((T + C)/M) - 1)))."
    )
    per_day, held, held_usd = noncurrent_versions(cp, s)
    lines.append(
        f"- Noncurrent versions: at that interval the job writes {checkpoints.human_bytes(round(per_day))} a day; every"
        f" checkpoint deleted or overwritten stays billed as a noncurrent version for checkpoints.retentionDays"
        f" ({cp.retention_days}), up to {checkpoints.human_bytes(round(held))}, about"
        f" USD {held_usd:,.0f} a month in S3 Standard"
        " (lower retentionDays to shorten it)."
    )
    return lines


def noncurrent_versions(cp: Checkpoints, s: checkpoints.Sizing) -> tuple[float, float, float]:
    """Bytes the largest job writes a day, the noncurrent versions retentionDays keeps at most, and their monthly
    S3 Standard cost (every checkpoint deleted or overwritten in a versioned bucket stays billed until it expires)."""
    per_day = 86_400 / s.interval_s * s.checkpoint_bytes
    held = per_day * cp.retention_days
    return per_day, held, held / checkpoints.GB * pricing.S3_STANDARD_USD_PER_GB_MONTH


# Old checkpoints worth more than this share of the compute they protect are a cost to review, not a safety margin.
LARGE_RETENTION_SHARE = 0.10


def retention_warnings(fleet: Fleet, cp: Checkpoints, s: checkpoints.Sizing) -> list[str]:
    """A warning when the noncurrent versions retentionDays keeps may cost LARGE_RETENTION_SHARE or more of the
    largest job's monthly GPU cost (its nodes at the group's USD per GPU-hour); none where that price is unknown."""
    group = writer_group(fleet)
    info = catalog.lookup(group.instance_type) if group is not None else None
    if group is None or info is None:
        return []
    price, _ = group_gpu_hour_usd(fleet, group)
    if price is None:
        return []
    compute_usd = s.writer_nodes * info.gpu_count * price * pricing.HOURS_PER_MONTH
    _, held, held_usd = noncurrent_versions(cp, s)
    if held_usd < LARGE_RETENTION_SHARE * compute_usd:
        return []
    days = max(1, int(cp.retention_days * LARGE_RETENTION_SHARE * compute_usd / held_usd))
    return [
        f"checkpoints.retentionDays: noncurrent checkpoint versions may reach {checkpoints.human_bytes(round(held))},"
        f" about USD {held_usd:,.0f} a month, {held_usd / compute_usd:.0%} of the largest job's GPU cost"
        f" (USD {compute_usd:,.0f} a month for {s.writer_nodes} {group.instance_type} nodes): a retentionDays of"
        f" {days} or less keeps it under {LARGE_RETENTION_SHARE:.0%}"
    ]


def _job_rows(fleet: Fleet, cp: Checkpoints) -> tuple[list[str], list[str], dict[str, dict[str, float]]]:
    """Per-job guidance: each job's own size, blocking write, MTBF, Daly interval and loss."""
    if not cp.jobs:
        return [], [], {}
    d = checkpoints.duration
    rows = [
        "",
        "Per job (checkpoints.jobs; the team's checkpoint-config carries `CHECKPOINT_INTERVAL_SECONDS_<JOB>`):",
        "",
        "| job | team | nodes of group | checkpoint (shard) | blocking write | MTBF | Daly interval | interval in use"
        " | expected loss |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    warnings: list[str] = []
    intervals: dict[str, dict[str, float]] = {}
    for i, job in enumerate(cp.jobs):
        s = job_sizing(fleet, cp, job)
        size = checkpoints.human_bytes(s.checkpoint_bytes)
        rows.append(
            f"| {job.name} | {job.team} | {job.nodes} x {job.node_group} | {size}"
            f" ({checkpoints.human_bytes(s.shard_bytes)}) | {d(s.blocking_write_s)} ({s.blocking_what}) |"
            f" {d(s.mtbf_s)} | {d(s.daly_s)} | {d(s.interval_s)} | {s.waste:.1%} |"
        )
        warnings += checkpoints.interval_warnings(s, f"checkpoints.jobs[{i}].intervalMinutes")
        warnings += checkpoints.loss_warnings(s, f'checkpoint job "{job.name}"')
        intervals.setdefault(job.team, {})[job.name] = s.interval_s
    return rows, warnings, intervals


def _encryption_note(fleet: Fleet, cp: Checkpoints) -> str:
    if not st.customer_managed_key(cp):
        return "SSE-S3 encrypted"
    return (
        f"SSE-KMS encrypted with the fleet's key `{st.key_alias(fleet)}` (rotated yearly, protected and retained; "
        "cluster.admins administer it, only the teams' checkpoint roles may use it, and only through S3)"
    )


def build(ctx: BuildContext) -> StageContent:
    """The checkpoint bucket and its identities, then the FSx for Lustre file system (gpufleet.plan.builders.fsx)."""
    parts = [checkpoint_content(ctx), fsx.build(ctx, BUCKET if ctx.fleet.checkpoints is not None else None)]
    return StageContent(
        resources=tuple(r for p in parts for r in p.resources),
        warnings=tuple(w for p in parts for w in p.warnings),
        notes=tuple(n for p in parts for n in p.notes),
    )


def checkpoint_content(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    cp = fleet.checkpoints
    if cp is None:
        return StageContent(notes=("No checkpoints section: no bucket and no workload identity.",))
    # Inference groups never write checkpoints: their arrays hold model weights and caches, so no room check.
    raid0 = [g for g in fleet.node_groups if g.local_storage == "RAID0" and g.workload_class != "Inference"]
    s = sizing(fleet, cp)
    job_rows, job_warnings, job_intervals = _job_rows(fleet, cp)
    resources = (
        bucket_resources(fleet, cp)
        + identity_resources(fleet, cp, s.interval_s, job_intervals)
        + key_resources(fleet, cp)
    )
    warnings = checkpoints.interval_warnings(s) + checkpoints.loss_warnings(s, "the largest job (checkpoints)")
    warnings += retention_warnings(fleet, cp, s)
    warnings += job_warnings
    warning = pod_identity_warning(fleet, "the teams' checkpoint-writer service accounts get no AWS credentials")
    if fleet.teams and warning:
        warnings.append(warning)

    notes = [
        (
            f"Checkpoint bucket `{cp.bucket}` ({fleet.cluster.region}): versioned, {_encryption_note(fleet, cp)}, all"
            f" public access blocked, ACLs disabled, TLS only; noncurrent versions expire after {cp.retention_days}"
            f" days, incomplete uploads after {st.ABORT_MULTIPART_DAYS}. Pulumi `protect` and `retainOnDelete`: `pulumi"
            " destroy` stops at the bucket, and a deleted stack leaves it and its settings in place."
        ),
        "",
    ]
    if fleet.teams:
        notes += ["| team | service account | may read and write | role |", "|---|---|---|---|"]
        notes += [
            f"| {t.name} | `{t.namespace}/{st.CHECKPOINT_SERVICE_ACCOUNT}` | `s3://{cp.bucket}/{st.team_prefix(t)}*` |"
            f" `checkpoints-role-{t.name}` |"
            for t in fleet.teams
        ]
    else:
        notes.append("No teams: nobody may write checkpoints yet.")
    notes.append("")
    if raid0:
        rows, nvme_warnings = _raid0_rows(raid0, s)
        warnings += nvme_warnings
        notes += rows
        notes += [
            "",
            (
                "nodeadm (AL2023) and `apiclient ephemeral-storage bind` (Bottlerocket) bind-mount kubelet's directory"
                f" onto the array, so an emptyDir mounted at `{st.LOCAL_CHECKPOINT_DIR}` (checkpoint-config"
                " `CHECKPOINT_LOCAL_DIR`) is on NVMe."
            ),
            "",
        ]
    mount_resources, mount_notes, mount_warnings = mountpoint.content(fleet)
    resources += mount_resources
    notes += mount_notes
    warnings += mount_warnings
    notes += _sizing_notes(fleet, cp, s)
    notes += job_rows
    return StageContent(resources=tuple(resources), warnings=tuple(warnings), notes=tuple(notes))
