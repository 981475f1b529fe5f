"""Storage (stage 6) as plain data: the checkpoint bucket's configuration, the per-team IAM documents for EKS Pod
Identity, and the per-team Kubernetes objects (ServiceAccount, checkpoint ConfigMap).

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/manifests/storage.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpufleet.plan.parts import Concat, Ref, json_document
from gpufleet.spec.fleet import Checkpoints, Fleet, NodeGroup, Team
from gpufleet.spec.names import LABEL_MANAGED_BY, partition

CHECKPOINT_SERVICE_ACCOUNT = "checkpoint-writer"
CHECKPOINT_CONFIGMAP = "checkpoint-config"
# Where training pods mount their node-local checkpoint directory (an emptyDir).
# Why: docs/network-and-storage.md, "Design notes", storage.LOCAL_CHECKPOINT_DIR.
LOCAL_CHECKPOINT_DIR = "/local-checkpoints"
RAID0_MOUNT = "/mnt/k8s-disks/0"
# Bottlerocket's `apiclient ephemeral-storage bind` mounts its array here (bottlerocket-core-kit
# sources/api/apiserver/src/server/ephemeral_storage.rs, EPHEMERAL_MNT) and bind-mounts /var/lib/kubelet onto it.
BOTTLEROCKET_RAID0_MOUNT = "/mnt/.ephemeral"


def raid0_mount(group: NodeGroup) -> str:
    return BOTTLEROCKET_RAID0_MOUNT if group.ami_type.startswith("BOTTLEROCKET") else RAID0_MOUNT


ABORT_MULTIPART_DAYS = 7

# Object actions a team may take under its own prefix.
# Why: docs/network-and-storage.md, "Design notes", storage.OBJECT_ACTIONS.
OBJECT_ACTIONS = (
    "s3:AbortMultipartUpload",
    "s3:DeleteObject",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:ListMultipartUploadParts",
    "s3:PutObject",
)


# checkpoints.encryption CustomerManagedKey.
# Why: docs/network-and-storage.md, "Design notes", storage.KEY_USE_ACTIONS.
KEY_USE_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
# What the account root keeps: reading the key's metadata and policy (so IAM-granted auditors and the console see it),
# nothing that changes the key or its policy.
KEY_READ_ACTIONS = ("kms:Describe*", "kms:Get*", "kms:List*")
# Its "key administrators" actions (same page): manage the key, never encrypt or decrypt with it.
KEY_ADMIN_ACTIONS = (
    "kms:CancelKeyDeletion",
    "kms:Create*",
    "kms:Delete*",
    "kms:Describe*",
    "kms:Disable*",
    "kms:Enable*",
    "kms:Get*",
    "kms:List*",
    "kms:Put*",
    "kms:Revoke*",
    "kms:RotateKeyOnDemand",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:Update*",
)


def customer_managed_key(cp: Checkpoints) -> bool:
    return cp.encryption == "CustomerManagedKey"


def key_alias(fleet: Fleet) -> str:
    return f"alias/{fleet.name}-checkpoints"


def s3_endpoint(fleet: Fleet) -> str:
    """The service principal S3 calls KMS as, the value of kms:ViaService (s3.<region>.amazonaws.com[.cn])."""
    region = fleet.cluster.region
    return f"s3.{region}.amazonaws.com" + (".cn" if partition(region) == "aws-cn" else "")


def account_of(fleet: Fleet) -> str:
    """The fleet's account, from its first admin's ARN (EKS access entries only take principals of the cluster's
    account; the `checkpoints` rule requires an admin when the key exists)."""
    return fleet.cluster.admins[0].principal_arn.split(":")[4]


def key_policy(fleet: Fleet, team_roles: list[Ref]) -> str | Concat:
    """Who may do what with the checkpoint key. cluster.admins administer it, and only they: the principal that
    runs `pulumi up` is one of them (docs/tenancy-and-access.md), which satisfies KMS's lockout safety check (the
    creating principal must be allowed kms:PutKeyPolicy by the new policy).

    Why: docs/network-and-storage.md, "Design notes", storage.key_policy."""
    root = f"arn:{partition(fleet.cluster.region)}:iam::{account_of(fleet)}:root"
    statements: list[dict[str, Any]] = [
        {
            "Sid": "KeyAdministration",
            "Effect": "Allow",
            "Principal": {"AWS": [a.principal_arn for a in fleet.cluster.admins]},
            "Action": list(KEY_ADMIN_ACTIONS),
            "Resource": "*",
        },
        {
            "Sid": "AccountReadOnly",
            "Effect": "Allow",
            "Principal": {"AWS": root},
            "Action": list(KEY_READ_ACTIONS),
            "Resource": "*",
        },
    ]
    if team_roles:
        statements.append(
            {
                "Sid": "TeamCheckpointRolesThroughS3",
                "Effect": "Allow",
                "Principal": {"AWS": team_roles},
                "Action": list(KEY_USE_ACTIONS),
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:ViaService": s3_endpoint(fleet), "kms:CallerAccount": account_of(fleet)}
                },
            }
        )
    return json_document({"Version": "2012-10-17", "Statement": statements})


def bucket_arn(fleet: Fleet, bucket: str) -> str:
    return f"arn:{partition(fleet.cluster.region)}:s3:::{bucket}"


def team_prefix(team: Team) -> str:
    return f"{team.name}/"


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2)


def bucket_policy(fleet: Fleet, cp: Checkpoints) -> str:
    """Deny every request that is not over TLS (the bucket holds model weights)."""
    arn = bucket_arn(fleet, cp.bucket)
    return _json(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": [arn, f"{arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    )


def lifecycle_rules(cp: Checkpoints) -> list[dict[str, Any]]:
    """Noncurrent (overwritten or deleted) checkpoint versions expire after retentionDays; leftover delete
    markers and parts of abandoned multipart uploads (a writer killed mid-upload) are cleaned up."""
    return [
        {
            "id": "checkpoint-retention",
            "status": "Enabled",
            "filter": {},
            "noncurrentVersionExpiration": {"noncurrentDays": cp.retention_days},
            "expiration": {"expiredObjectDeleteMarker": True},
            "abortIncompleteMultipartUpload": {"daysAfterInitiation": ABORT_MULTIPART_DAYS},
        }
    ]


def team_access_policy(fleet: Fleet, cp: Checkpoints, team: Team, key: Ref | None) -> str | Concat:
    """Objects under <bucket>/<team>/ only, and listing only that prefix; with a customer-managed key, using the
    key through S3 (the key policy allows the role too: KMS needs both)."""
    arn = bucket_arn(fleet, cp.bucket)
    prefix = team_prefix(team)
    statements: list[dict[str, Any]] = [
        {"Sid": "TeamPrefixObjects", "Effect": "Allow", "Action": list(OBJECT_ACTIONS), "Resource": f"{arn}/{prefix}*"},
        {
            "Sid": "ListTeamPrefix",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        },
    ]
    if key is not None:
        statements.append(
            {
                "Sid": "CheckpointKeyThroughS3",
                "Effect": "Allow",
                "Action": list(KEY_USE_ACTIONS),
                "Resource": key,
                "Condition": {"StringEquals": {"kms:ViaService": s3_endpoint(fleet)}},
            }
        )
    return json_document({"Version": "2012-10-17", "Statement": statements})


def service_account(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": CHECKPOINT_SERVICE_ACCOUNT, "namespace": team.namespace, "labels": dict(LABEL_MANAGED_BY)},
    }


def job_interval_key(job: str) -> str:
    """checkpoint-config's key (and, through envFrom, the variable) for one job's interval."""
    return "CHECKPOINT_INTERVAL_SECONDS_" + job.upper().replace("-", "_")


def checkpoint_configmap(
    fleet: Fleet, cp: Checkpoints, team: Team, interval_s: float, job_intervals: Mapping[str, float]
) -> dict[str, Any]:
    """What a team's checkpoint writer reads: where to write (local directory and bucket prefix) and how often
    (the fleet's interval, and each of the team's checkpoints.jobs its own)."""
    prefix = team_prefix(team)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CHECKPOINT_CONFIGMAP, "namespace": team.namespace, "labels": dict(LABEL_MANAGED_BY)},
        "data": {
            "AWS_REGION": fleet.cluster.region,
            "CHECKPOINT_BUCKET": cp.bucket,
            "CHECKPOINT_INTERVAL_SECONDS": str(round(interval_s)),
            **{job_interval_key(job): str(round(s)) for job, s in sorted(job_intervals.items())},
            "CHECKPOINT_LOCAL_DIR": LOCAL_CHECKPOINT_DIR,
            "CHECKPOINT_PREFIX": prefix,
            "CHECKPOINT_S3_URI": f"s3://{cp.bucket}/{prefix}",
        },
    }
