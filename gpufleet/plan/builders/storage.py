"""Stage 6, storage: where checkpoints go, who may write them, and how often they should be written.

One S3 bucket per fleet, protected and retained (a deleted stack never deletes checkpoints), versioned,
encrypted, private, with noncurrent versions expiring after checkpoints.retentionDays. Each team gets a
`checkpoint-writer` ServiceAccount whose EKS Pod Identity role may touch only `<bucket>/<team>/`, and a
`checkpoint-config` ConfigMap (bucket prefix, local directory, interval). Groups with localStorage RAID0 stage
checkpoints on NVMe (the foundation's user data builds the array: nodeadm on AL2023, a bootstrap command on
Bottlerocket). plan.md shows the sizing and the
Young/Daly interval computed from the failure rate (gpufleet.facts.checkpoints).
"""

from __future__ import annotations

from gpufleet.facts import catalog, checkpoints
from gpufleet.plan.builders.cluster import pod_identity_resources, pod_identity_warning, tags
from gpufleet.plan.builders.common import AWS_PROVIDER, k8s
from gpufleet.plan.manifests import storage as st
from gpufleet.plan.parts import BuildContext, Ref, Resource, StageContent
from gpufleet.spec.fleet import Checkpoints, Fleet, NodeGroup

BUCKET = "checkpoint-bucket"
KEY = "checkpoint-key"


def sizing(cp: Checkpoints, staged: bool) -> checkpoints.Sizing:
    return checkpoints.sizing(
        parameters=cp.model_parameters,
        bytes_per_parameter=cp.bytes_per_parameter,
        mtbf_hours=cp.mean_time_between_failures_hours,
        local_gbps=cp.local_write_gbps,
        bucket_gbps=cp.bucket_write_gbps,
        writer_nodes=cp.writer_nodes,
        staged=staged,
        interval_minutes=cp.interval_minutes,
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
    """The bucket and its settings. Every one is retained on delete (removing the versioning resource would
    suspend versioning, removing the public access block would lift it); the bucket is also protected."""
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


def identity_resources(fleet: Fleet, cp: Checkpoints, interval_s: float) -> list[Resource]:
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
            k8s(st.checkpoint_configmap(fleet, cp, team, interval_s)),
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


def _sizing_notes(cp: Checkpoints, s: checkpoints.Sizing) -> list[str]:
    d = checkpoints.duration
    nodes = "1 node" if cp.writer_nodes == 1 else f"{cp.writer_nodes} nodes in parallel"
    lines = [
        (
            f"Checkpoint size: {cp.model_parameters:,} parameters x {cp.bytes_per_parameter} bytes ="
            f" **{checkpoints.human_bytes(s.checkpoint_bytes)}**, written by {nodes}."
        ),
        "",
        "| tier | assumed bandwidth per node | write time |",
        "|---|---|---|",
    ]
    if s.local_write_s is not None:
        lines.append(f"| node-local NVMe | {s.local_gbps:g} GB/s | {d(s.local_write_s)} |")
    lines.append(f"| bucket | {s.bucket_gbps:g} GB/s | {d(s.bucket_write_s)} |")
    blocking = (
        "node-local NVMe write; the upload runs in the background" if s.local_write_s is not None else "bucket write"
    )
    lines += [
        "",
        f"- Young/Daly interval: sqrt(2 x {d(s.blocking_write_s)} ({blocking}) x"
        f" {cp.mean_time_between_failures_hours:g} h MTBF) = **{d(s.young_daly_s)}**"
        + (
            f", raised to the bucket write time {d(s.bucket_write_s)}"
            if s.recommended_interval_s > s.young_daly_s
            else ""
        )
        + ".",
    ]
    if s.configured_interval_s is None:
        lines.append(
            f"- Interval in use (checkpoint-config `CHECKPOINT_INTERVAL_SECONDS`): the optimum, {d(s.interval_s)}."
        )
    else:
        lines.append(f"- Interval in use (checkpoints.intervalMinutes): {d(s.interval_s)}.")
    if s.interval_s >= s.blocking_write_s:  # the first-order model only holds then
        waste = checkpoints.waste_fraction(s.interval_s, s.blocking_write_s, s.mtbf_s)
        lines.append(f"- Expected time lost to checkpointing and rework at that interval: about {waste:.0%}.")
    return lines


def _encryption_note(fleet: Fleet, cp: Checkpoints) -> str:
    if not st.customer_managed_key(cp):
        return "SSE-S3 encrypted"
    return (
        f"SSE-KMS encrypted with the fleet's key `{st.key_alias(fleet)}` (rotated yearly, protected and retained; "
        "cluster.admins administer it, only the teams' checkpoint roles may use it, and only through S3)"
    )


def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    cp = fleet.checkpoints
    if cp is None:
        return StageContent(notes=("No checkpoints section: no bucket and no workload identity.",))
    raid0 = [g for g in fleet.node_groups if g.local_storage == "RAID0"]
    s = sizing(cp, staged=bool(raid0))
    resources = bucket_resources(fleet, cp) + identity_resources(fleet, cp, s.interval_s) + key_resources(fleet, cp)
    warnings = checkpoints.interval_warnings(s)
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
    notes += _sizing_notes(cp, s)
    return StageContent(resources=tuple(resources), warnings=tuple(warnings), notes=tuple(notes))
