"""Storage (stage 6) as plain data: the checkpoint bucket's configuration, the per-team IAM documents for EKS Pod
Identity, and the per-team Kubernetes objects (ServiceAccount, checkpoint ConfigMap).

IAM documents name the bucket by its static ARN (the name is in the spec), so a reviewer reads exactly which
prefix each team may touch.
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.names import LABEL_MANAGED_BY, partition
from gpufleet.spec import Checkpoints, Fleet, Team

CHECKPOINT_SERVICE_ACCOUNT = "checkpoint-writer"
CHECKPOINT_CONFIGMAP = "checkpoint-config"
# Where training pods mount their node-local checkpoint directory (an emptyDir). On RAID0 groups nodeadm
# bind-mounts /var/lib/kubelet onto the NVMe array, so emptyDir volumes live on NVMe
# (awslabs/amazon-eks-ami templates/al2023/runtime/bin/setup-local-disks).
LOCAL_CHECKPOINT_DIR = "/local-checkpoints"
RAID0_MOUNT = "/mnt/k8s-disks/0"
ABORT_MULTIPART_DAYS = 7

# Object actions a team may take under its own prefix. No s3:DeleteObjectVersion and no lifecycle or policy
# actions: a team deletes a checkpoint by adding a delete marker, and the bucket keeps the old version for
# checkpoints.retentionDays.
OBJECT_ACTIONS = (
    "s3:AbortMultipartUpload",
    "s3:DeleteObject",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:ListMultipartUploadParts",
    "s3:PutObject",
)


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
            "noncurrent_version_expiration": {"noncurrent_days": cp.retention_days},
            "expiration": {"expired_object_delete_marker": True},
            "abort_incomplete_multipart_upload": {"days_after_initiation": ABORT_MULTIPART_DAYS},
        }
    ]


def team_access_policy(fleet: Fleet, cp: Checkpoints, team: Team) -> str:
    """Objects under <bucket>/<team>/ only, and listing only that prefix."""
    arn = bucket_arn(fleet, cp.bucket)
    prefix = team_prefix(team)
    return _json(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "TeamPrefixObjects", "Effect": "Allow", "Action": list(OBJECT_ACTIONS), "Resource": f"{arn}/{prefix}*"},
                {
                    "Sid": "ListTeamPrefix",
                    "Effect": "Allow",
                    "Action": "s3:ListBucket",
                    "Resource": arn,
                    "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
                },
            ],
        }
    )


def service_account(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": CHECKPOINT_SERVICE_ACCOUNT, "namespace": team.namespace, "labels": dict(LABEL_MANAGED_BY)},
    }


def checkpoint_configmap(fleet: Fleet, cp: Checkpoints, team: Team, interval_s: float) -> dict[str, Any]:
    """What a team's checkpoint writer reads: where to write (local directory and bucket prefix) and how often."""
    prefix = team_prefix(team)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CHECKPOINT_CONFIGMAP, "namespace": team.namespace, "labels": dict(LABEL_MANAGED_BY)},
        "data": {
            "AWS_REGION": fleet.cluster.region,
            "CHECKPOINT_BUCKET": cp.bucket,
            "CHECKPOINT_INTERVAL_SECONDS": str(round(interval_s)),
            "CHECKPOINT_LOCAL_DIR": LOCAL_CHECKPOINT_DIR,
            "CHECKPOINT_PREFIX": prefix,
            "CHECKPOINT_S3_URI": f"s3://{cp.bucket}/{prefix}",
        },
    }
