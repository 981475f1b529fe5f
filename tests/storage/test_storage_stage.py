"""Stage 6: the protected bucket, per-team workload identity, NVMe staging and the sizing notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.facts import checkpoints
from gpufleet.plan.builders.cluster import POD_IDENTITY_ADDON
from gpufleet.plan.parts import Ref
from tests.network.fleets import HEAD, fleet, group, plan
from tests.trees import resources

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "trees"

CHECKPOINTS = """\
teams:
  - {name: llm, quotas: [{nodeGroup: g, gpus: 8}]}
  - {name: eval, namespace: evaluation, quotas: [{nodeGroup: g, gpus: 8}]}
checkpoints:
  bucket: team-checkpoints
  modelParameters: 70000000000
  meanTimeBetweenFailuresHours: 6
"""


def content(f):
    return next(s for s in plan(f).stages if s.name == "storage").content


def resource(c, rid: str):
    return next(r for r in c.resources if r.id == rid)


@pytest.fixture(scope="module")
def golden_inventory() -> dict[str, dict]:
    entries = resources(GOLDEN / "network-efa" / "prod")
    return {e["id"]: e for e in entries}


def test_bucket_options_in_inventory(golden_inventory) -> None:
    bucket = golden_inventory["checkpoint-bucket"]
    assert (bucket["type"], bucket["protect"], bucket["retainOnDelete"]) == ("aws:s3/bucket:Bucket", True, True)
    assert bucket["inputs"]["bucket"] == "efa-checkpoints-example"
    assert bucket["inputs"]["forceDestroy"] is False


@pytest.mark.parametrize(
    ("rid", "type_", "inputs"),
    [
        (
            "checkpoint-bucket-versioning",
            "aws:s3/bucketVersioning:BucketVersioning",
            {"versioningConfiguration": {"status": "Enabled"}},
        ),
        (
            "checkpoint-bucket-encryption",
            "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
            {"rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}]},
        ),
        (
            "checkpoint-bucket-public-access-block",
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
            {
                "blockPublicAcls": True,
                "blockPublicPolicy": True,
                "ignorePublicAcls": True,
                "restrictPublicBuckets": True,
            },
        ),
        (
            "checkpoint-bucket-ownership",
            "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
            {"rule": {"objectOwnership": "BucketOwnerEnforced"}},
        ),
        (
            "checkpoint-bucket-lifecycle",
            "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
            {
                "rules": [
                    {
                        "id": "checkpoint-retention",
                        "status": "Enabled",
                        "filter": {},
                        "noncurrentVersionExpiration": {"noncurrentDays": 14},  # the case's retentionDays
                        "expiration": {"expiredObjectDeleteMarker": True},
                        "abortIncompleteMultipartUpload": {"daysAfterInitiation": 7},
                    }
                ]
            },
        ),
    ],
)
def test_bucket_settings_in_inventory_are_retained(golden_inventory, rid: str, type_: str, inputs: dict) -> None:
    entry = golden_inventory[rid]
    assert entry["type"] == type_
    assert entry["retainOnDelete"] is True
    assert entry["inputs"] == {"bucket": "<ref:checkpoint-bucket.bucket>", **inputs}


def test_bucket_policy_denies_plain_http(golden_inventory) -> None:
    policy = json.loads(golden_inventory["checkpoint-bucket-policy"]["inputs"]["policy"])
    (statement,) = policy["Statement"]
    assert statement["Effect"] == "Deny" and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statement["Resource"] == ["arn:aws:s3:::efa-checkpoints-example", "arn:aws:s3:::efa-checkpoints-example/*"]


@pytest.fixture(scope="module")
def teams_content():
    return content(fleet([group("g", "p5.48xlarge", "EFA", local="RAID0")], CHECKPOINTS))


@pytest.mark.parametrize(("team", "namespace"), [("llm", "llm"), ("eval", "evaluation")])
def test_each_team_writes_only_its_prefix(teams_content, team: str, namespace: str) -> None:
    policy = json.loads(resource(teams_content, f"checkpoints-policy-{team}").args["policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert statements["TeamPrefixObjects"]["Resource"] == f"arn:aws:s3:::team-checkpoints/{team}/*"
    assert "s3:DeleteObjectVersion" not in statements["TeamPrefixObjects"]["Action"]
    assert all(a.startswith("s3:") and "*" not in a for a in statements["TeamPrefixObjects"]["Action"])
    assert statements["ListTeamPrefix"] == {
        "Sid": "ListTeamPrefix",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::team-checkpoints",
        "Condition": {"StringLike": {"s3:prefix": [f"{team}/*"]}},
    }
    assert set(statements) == {"TeamPrefixObjects", "ListTeamPrefix"}


@pytest.mark.parametrize(("team", "namespace"), [("llm", "llm"), ("eval", "evaluation")])
def test_role_trusts_pod_identity_for_the_team_service_account_only(teams_content, team: str, namespace: str) -> None:
    role = resource(teams_content, f"checkpoints-role-{team}")
    (statement,) = json.loads(role.args["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "t",
        "aws:RequestTag/kubernetes-namespace": namespace,
        "aws:RequestTag/kubernetes-service-account": "checkpoint-writer",
    }
    assoc = resource(teams_content, f"checkpoints-pod-identity-{team}")
    assert assoc.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation"
    assert assoc.args["namespace"] == namespace and assoc.args["serviceAccount"] == "checkpoint-writer"
    assert assoc.args["roleArn"] == Ref(role.id, "arn")
    assert POD_IDENTITY_ADDON in assoc.depends_on  # the agent add-on is pinned in tests.network.fleets
    sa = resource(teams_content, f"serviceaccount-{namespace}-checkpoint-writer").args["object"]
    assert sa["metadata"] == {
        "name": "checkpoint-writer",
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "gpufleet"},
    }


def test_checkpoint_config_carries_prefix_and_optimum_interval(teams_content) -> None:
    data = resource(teams_content, "configmap-evaluation-checkpoint-config").args["object"]["data"]
    assert data == {
        "AWS_REGION": "us-east-1",
        "CHECKPOINT_BUCKET": "team-checkpoints",
        # Daly's interval for C = 17.5 s (1.12 TB from 4 nodes, each a RAID0 of 8 x 2 GB/s) and M = 21600 s:
        # sqrt(2 x 17.5 x 21600) = 869.48 s; C/2M = 0.000405, sqrt 0.020127:
        # 869.48 x (1 + 0.006709 + 0.000045) - 17.5 = 875.35 - 17.5 = 857.9 s
        "CHECKPOINT_INTERVAL_SECONDS": "858",
        "CHECKPOINT_LOCAL_DIR": "/local-checkpoints",
        "CHECKPOINT_PREFIX": "eval/",
        "CHECKPOINT_S3_URI": "s3://team-checkpoints/eval/",
    }


def test_sizing_notes(teams_content) -> None:
    notes = "\n".join(teams_content.notes)
    assert (
        "70,000,000,000 parameters x 16 bytes = **1.12 TB**, written by every node of the largest job: 4 nodes of"
        " `g` (its maxSize) in parallel, a 280 GB shard each." in notes
    )
    # the array's aggregate (8 devices on p5.48xlarge), from every node: 1.12 TB / (16 GB/s x 4) = 17.5 s
    assert "| node-local NVMe | 16 GB/s | RAID0 of 8 devices x checkpoints.localDeviceWriteGBps 2 | 18 s |" in notes
    assert "| bucket | 1.25 GB/s | checkpoints.bucketWriteGBps | 3.7 min |" in notes  # 1.12 TB / 5 GB/s = 224 s
    assert "= **14.3 min**; Young's first-order sqrt(2CM) (Young 1974) is 14.5 min." in notes
    assert "about 4.0% (Daly's model" in notes
    # 86400 / 857.86 s = 100.7 checkpoints a day x 1.12 TB = 113 TB; x 30 days = 3.38 PB; x USD 0.023 per GB-month
    assert "writes 113 TB a day" in notes and "up to 3.38 PB, about USD 77,834 a month" in notes
    assert "| g | p5.48xlarge | 30.4 TB | `/mnt/k8s-disks/0` | yes (560 GB needed) |" in notes
    # USD 77,834 against 4 nodes x 8 GPUs x USD 6.88 x 730 h = USD 160,717: 48%; 30 x 0.1 / 0.484 = 6.2 days
    assert teams_content.warnings == (
        "checkpoints.retentionDays: noncurrent checkpoint versions may reach 3.38 PB, about USD 77,834 a month, 48% of"
        " the largest job's GPU cost (USD 160,717 a month for 4 p5.48xlarge nodes): a retentionDays of 6 or less"
        " keeps it under 10%",
    )


def test_unstaged_bucket_write_with_a_large_loss_warns() -> None:
    c = content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS + "  retentionDays: 1\n"))
    (warning,) = c.warnings
    assert warning.startswith(
        "the largest job (checkpoints): about 14% of the time would be lost to checkpointing and rework (blocking"
        " write 3.7 min, the bucket; interval 49.4 min, MTBF 6.0 h): save asynchronously"
    )
    assert "stage on a RAID0 NVMe group" in warning


def test_asynchronous_save_blocks_for_the_host_copy() -> None:
    c = content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS + "  save: Asynchronous\n"))
    notes = "\n".join(c.notes)
    # 280 GB shard / (8 GPUs x 10 GB/s) = 3.5 s blocking; the 224 s upload runs in the background
    assert "| GPU to host memory (asynchronous save: the part training waits for) | 80 GB/s |" in notes
    assert "8 GPUs x checkpoints.hostCopyGBps 10 | 4 s |" in notes
    # the short interval a 3.5 s blocking write allows keeps 7.51 PB of old checkpoints for 30 days: over the compute
    assert [w.split(",")[0] for w in c.warnings] == [
        "checkpoints.retentionDays: noncurrent checkpoint versions may reach 7.51 PB"
    ]


def test_per_job_guidance_and_intervals_in_the_team_configmap() -> None:
    jobs = (
        "  jobs:\n"
        "    - {name: pretrain-70b, team: llm, nodeGroup: g, nodes: 4, modelParameters: 70000000000}\n"
        "    - {name: finetune-8b, team: eval, nodeGroup: g, nodes: 1, modelParameters: 8000000000}\n"
    )
    c = content(fleet([group("g", "p5.48xlarge", "EFA", local="RAID0")], CHECKPOINTS + jobs))
    notes = "\n".join(c.notes)
    # finetune-8b: 128 GB from 1 node at 16 GB/s = 8 s; MTBF 6 h x 4 / 1 = 24 h
    assert "| finetune-8b | eval | 1 x g | 128 GB (128 GB) | 8 s (node-local NVMe) | 24.0 h |" in notes
    assert "| pretrain-70b | llm | 4 x g | 1.12 TB (280 GB) | 18 s (node-local NVMe) | 6.0 h | 14.3 min |" in notes
    data = resource(c, "configmap-evaluation-checkpoint-config").args["object"]["data"]
    assert data["CHECKPOINT_INTERVAL_SECONDS_FINETUNE_8B"] == str(round(checkpoints.daly_seconds(8.0, 86_400)))
    assert "CHECKPOINT_INTERVAL_SECONDS_PRETRAIN_70B" not in data
    llm = resource(c, "configmap-llm-checkpoint-config").args["object"]["data"]
    assert llm["CHECKPOINT_INTERVAL_SECONDS_PRETRAIN_70B"] == llm["CHECKPOINT_INTERVAL_SECONDS"] == "858"


def test_inference_groups_get_no_checkpoint_room_check() -> None:
    inference = group("inf", "g6.xlarge", local="RAID0", max_size=16).replace(
        "workloadClass: Training", "workloadClass: Inference"
    )
    assert "Inference" in inference
    c = content(fleet([group("g", "p5.48xlarge", "EFA", local="RAID0"), inference], CHECKPOINTS))
    assert not any('"inf"' in w for w in c.warnings)
    assert not any(n.startswith("| inf |") for n in c.notes)


def test_configured_interval_shorter_than_the_write_warns() -> None:
    c = content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS + "  intervalMinutes: 2\n"))
    assert any(
        w.startswith("checkpoints.intervalMinutes (2.0 min) is shorter than writing one checkpoint to the bucket")
        for w in c.warnings
    )
    data = resource(c, "configmap-llm-checkpoint-config").args["object"]["data"]
    assert data["CHECKPOINT_INTERVAL_SECONDS"] == "120"


def test_nvme_too_small_for_two_shards_warns() -> None:
    # 1.12 TB from 2 writer nodes: two 560 GB shards do not fit 250 GB
    c = content(fleet([group("g", "g6.xlarge", local="RAID0", max_size=16)], CHECKPOINTS + "  writerNodes: 2\n"))
    assert any('"g" (g6.xlarge) has 250 GB instance-store NVMe' in w for w in c.warnings)


def test_unpinned_pod_identity_agent_is_still_installed_and_waited_for() -> None:
    unpinned = HEAD.replace("  addons: {podIdentityAgent: v1.3.8-eksbuild.2}\n", "")
    assert unpinned != HEAD
    c = content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS, head=unpinned))
    # Mode Create always installs the agent (the foundation warns that its version is EKS's default).
    assert not any("get no AWS credentials" in w for w in c.warnings)
    assert POD_IDENTITY_ADDON in resource(c, "checkpoints-pod-identity-llm").depends_on


def test_existing_cluster_warns_that_the_agent_is_not_managed() -> None:
    existing = HEAD.replace('  systemNodes: {releaseVersion: "1.33.13-20260714"}\n', "  mode: Existing\n")
    c = content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS, head=existing))
    assert any("gpufleet manages no EKS add-ons on an existing cluster" in w for w in c.warnings)
    assert POD_IDENTITY_ADDON not in resource(c, "checkpoints-pod-identity-llm").depends_on


def test_no_checkpoints_no_storage_resources() -> None:
    c = content(fleet([group("g", "p5.48xlarge", "EFA")]))
    assert c.resources == () and c.warnings == ()


def test_checkpoint_sizing_defaults_from_the_schema() -> None:
    cp = fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS).checkpoints
    assert cp is not None
    assert (
        cp.bytes_per_parameter,
        cp.retention_days,
        cp.writer_nodes,
        cp.local_write_gbps,
        cp.local_device_write_gbps,
        cp.bucket_write_gbps,
        cp.interval_minutes,
        cp.save,
        cp.host_copy_gbps,
        cp.jobs,
    ) == (16, 30, None, None, 2.0, 1.25, None, "Synchronous", 10.0, ())


@pytest.fixture(scope="module")
def key_content():
    return content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS + "  encryption: CustomerManagedKey\n"))


def rendered(document) -> dict:
    """A policy whose Refs are shown as synth shows them (`<ref:resource.attribute>`)."""
    return json.loads(str(document))


def test_default_encryption_is_sse_s3_without_a_key(teams_content) -> None:
    assert resource(teams_content, "checkpoint-bucket-encryption").args["rules"] == [
        {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}
    ]
    assert not any(r.type.startswith("aws:kms/") for r in teams_content.resources)
    assert "SSE-S3 encrypted" in "\n".join(teams_content.notes)


def test_customer_managed_key_is_rotated_protected_and_aliased(key_content) -> None:
    key = resource(key_content, "checkpoint-key")
    assert (key.type, key.protect, key.retain_on_delete) == ("aws:kms/key:Key", True, True)
    assert key.args["enableKeyRotation"] is True
    alias = resource(key_content, "checkpoint-key-alias")
    assert alias.type == "aws:kms/alias:Alias"
    assert alias.args == {"name": "alias/t-checkpoints", "targetKeyId": Ref("checkpoint-key", "keyId")}
    assert resource(key_content, "checkpoint-bucket-encryption").args["rules"] == [
        {
            "applyServerSideEncryptionByDefault": {
                "sseAlgorithm": "aws:kms",
                "kmsMasterKeyId": Ref("checkpoint-key", "arn"),
            },
            "bucketKeyEnabled": True,
        }
    ]
    assert "SSE-KMS encrypted with the fleet's key `alias/t-checkpoints`" in "\n".join(key_content.notes)


def test_key_policy_admins_administer_and_only_team_roles_use_through_s3(key_content) -> None:
    statements = {s["Sid"]: s for s in rendered(resource(key_content, "checkpoint-key").args["policy"])["Statement"]}
    assert set(statements) == {"KeyAdministration", "AccountReadOnly", "TeamCheckpointRolesThroughS3"}
    admin = statements["KeyAdministration"]
    assert admin["Principal"] == {"AWS": ["arn:aws:iam::111122223333:role/platform-admin"]}
    assert not {"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*", "kms:*"} & set(admin["Action"])
    # issue 31: the root (any IAM policy of the account) could PutKeyPolicy or CreateGrant itself Decrypt
    root = statements["AccountReadOnly"]
    assert root["Principal"] == {"AWS": "arn:aws:iam::111122223333:root"}
    assert root["Action"] == ["kms:Describe*", "kms:Get*", "kms:List*"]
    use = statements["TeamCheckpointRolesThroughS3"]
    assert use["Principal"] == {"AWS": ["<ref:checkpoints-role-llm.arn>", "<ref:checkpoints-role-eval.arn>"]}
    assert use["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]  # what SSE-KMS needs, no Encrypt/ReEncrypt
    assert use["Condition"] == {
        "StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com", "kms:CallerAccount": "111122223333"}
    }


@pytest.mark.parametrize("team", ["llm", "eval"])
def test_team_role_may_use_the_key_through_s3(key_content, team: str) -> None:
    statements = {
        s["Sid"]: s for s in rendered(resource(key_content, f"checkpoints-policy-{team}").args["policy"])["Statement"]
    }
    assert statements["CheckpointKeyThroughS3"] == {
        "Sid": "CheckpointKeyThroughS3",
        "Effect": "Allow",
        "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
        "Resource": "<ref:checkpoint-key.arn>",
        "Condition": {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}},
    }
    assert statements["TeamPrefixObjects"]["Resource"] == f"arn:aws:s3:::team-checkpoints/{team}/*"


def test_key_without_teams_names_no_user() -> None:
    c = content(
        fleet(
            [group("g", "p5.48xlarge", "EFA")],
            "checkpoints:\n  bucket: b-ckpt\n  modelParameters: 1000\n  meanTimeBetweenFailuresHours: 6\n  encryption:"
            " CustomerManagedKey\n",
        )
    )
    statements = rendered(resource(c, "checkpoint-key").args["policy"])["Statement"]
    assert [s["Sid"] for s in statements] == ["KeyAdministration", "AccountReadOnly"]


def test_raid0_rows_name_where_each_os_mounts_the_array() -> None:
    bottlerocket = group("br", "p5.48xlarge", "EFA", local="RAID0").replace(
        'ami: {type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}',
        'ami: {type: BOTTLEROCKET_x86_64_NVIDIA, releaseVersion: "1.54.0-5043decc"}',
    )
    assert "BOTTLEROCKET" in bottlerocket
    notes = content(fleet([group("g", "p5.48xlarge", "EFA", local="RAID0"), bottlerocket], CHECKPOINTS)).notes
    # 1.12 TB over the 4 nodes of the largest Training group: 280 GB shards, two of them
    assert "| g | p5.48xlarge | 30.4 TB | `/mnt/k8s-disks/0` | yes (560 GB needed) |" in notes
    assert "| br | p5.48xlarge | 30.4 TB | `/mnt/.ephemeral` | yes (560 GB needed) |" in notes


def _retention_warnings(extra: str) -> list[str]:
    c = content(fleet([group("g", "p5.48xlarge", "EFA")], CHECKPOINTS + extra))
    return [w for w in c.warnings if w.startswith("checkpoints.retentionDays")]


def test_noncurrent_versions_worth_a_tenth_of_the_compute_are_warned() -> None:
    # 70e9 parameters x 16 B = 1.12 TB every 10 min: 161.28 TB a day, 4.84 PB over 30 days, x USD 0.023/GB-month =
    # USD 111,283; the 4 nodes x 8 GPUs x USD 6.88 x 730 h = USD 160,717 a month; 69%; 30 x 0.1 x 160717/111283 = 4.3.
    assert _retention_warnings("  intervalMinutes: 10\n") == [
        "checkpoints.retentionDays: noncurrent checkpoint versions may reach 4.84 PB, about USD 111,283 a month, 69% of"
        " the largest job's GPU cost (USD 160,717 a month for 4 p5.48xlarge nodes): a retentionDays of 4 or less"
        " keeps it under 10%"
    ]


def test_noncurrent_versions_below_a_tenth_of_the_compute_are_not_warned() -> None:
    # 1.12 TB an hour for 2 days: 53.76 TB, USD 1,236 a month, under 1% of USD 160,717.
    assert _retention_warnings("  intervalMinutes: 60\n  retentionDays: 2\n") == []
