"""checkpoints.mountpoint: the Mountpoint for Amazon S3 CSI driver release and the teams' S3 volumes, held to the pinned
chart (../shared/charts/aws-mountpoint-s3-csi-driver/2.7.0) and the Kubernetes schemas."""

from __future__ import annotations

import json

import pytest

from gpufleet.base.errors import SpecError
from gpufleet.plan.manifests import mountpoint as mp
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.deployed import deployed_components
from tests.network.fleets import HEAD, fleet, group, plan
from tests.upstream import chart_values, require_shared, unknown_value_keys, validate_object

INFERENCE = group("serve", "g6e.12xlarge", local="RAID0", max_size=8).replace(
    "workloadClass: Training", "workloadClass: Inference"
)
TRAINING = group("train", "p5.48xlarge", "EFA", local="RAID0")
NO_ARRAY = group("batch", "g6.xlarge").replace("workloadClass: Training", "workloadClass: Batch")
MOUNTPOINT = """\
teams:
  - {name: llm, quotas: [{nodeGroup: train, gpus: 8}, {nodeGroup: serve, gpus: 4}]}
  - {name: eval, namespace: evaluation, quotas: [{nodeGroup: batch, gpus: 1}]}
checkpoints:
  bucket: team-checkpoints
  modelParameters: 70000000000
  meanTimeBetweenFailuresHours: 6
  mountpoint: {uid: 1001, gid: 2002}
"""


@pytest.fixture(scope="module")
def storage():
    f = fleet([TRAINING, INFERENCE, NO_ARRAY], MOUNTPOINT)
    return next(s for s in plan(f).stages if s.name == "storage").content


def _objects(content, kind: str) -> dict[str, dict]:
    return {
        r.args["object"]["metadata"]["name"]: r.args["object"]
        for r in content.resources
        if r.args.get("object", {}).get("kind") == kind
    }


def test_release_values_exist_in_the_pinned_chart(storage) -> None:
    require_shared()
    (release,) = [r for r in storage.resources if r.type == "kubernetes:helm.sh/v3:Release"]
    assert (release.args["chart"], release.args["version"], release.args["namespace"]) == (
        "aws-mountpoint-s3-csi-driver",
        "2.7.0",
        "kube-system",
    )
    assert release.args["repositoryOpts"] == {"repo": "https://awslabs.github.io/mountpoint-s3-csi-driver"}
    defaults = chart_values("aws-mountpoint-s3-csi-driver", "2.7.0")
    assert list(unknown_value_keys(release.args["values"], defaults)) == []
    # the chart's own default, which the node plugin's placement (and the model's operand) rests on
    assert defaults["node"]["tolerateAllTaints"] is True


def test_a_misspelt_value_key_is_caught() -> None:
    require_shared()
    defaults = chart_values("aws-mountpoint-s3-csi-driver", "2.7.0")
    assert list(unknown_value_keys({"node": {"tolerateAll": True}}, defaults)) == ["node.tolerateAll"]


def test_every_volume_and_claim_validates(storage) -> None:
    require_shared()
    objects = list(_objects(storage, "PersistentVolume").values()) + list(
        _objects(storage, "PersistentVolumeClaim").values()
    )
    assert len(objects) == 6  # llm: train, serve; eval: batch; a PV and a PVC each
    for obj in objects:
        assert validate_object(obj) == []


# Hand-computed: cacheFraction 0.5 of the instance store EC2 states (p5.48xlarge 30400 GB, g6e.12xlarge 3800 GB);
# throughput Mountpoint's table value for the type (p5.48xlarge 3200, g6e.12xlarge 100, g6.xlarge 10 Gbps).
@pytest.mark.parametrize(
    ("pv", "namespace", "claim", "access", "last_option", "throughput", "cache"),
    [
        ("llm-s3-train", "llm", "s3-train", "ReadWriteMany", "allow-delete", 3200, "15200G"),
        ("llm-s3-serve", "llm", "s3-serve", "ReadOnlyMany", "read-only", 100, "1900G"),
        ("eval-s3-batch", "evaluation", "s3-batch", "ReadWriteMany", "allow-delete", 10, None),
    ],
)
def test_volume_per_team_and_group(storage, pv, namespace, claim, access, last_option, throughput, cache) -> None:
    volume = _objects(storage, "PersistentVolume")[pv]["spec"]
    team = pv.split("-s3-")[0]
    assert volume["claimRef"] == {"namespace": namespace, "name": claim}
    assert volume["accessModes"] == [access] and volume["storageClassName"] == ""
    assert volume["mountOptions"] == [
        f"prefix {team}/",
        "region us-east-1",
        f"maximum-throughput-gbps {throughput}",
        "uid 1001",
        "gid 2002",
        "allow-other",
        last_option,
    ]
    attributes = volume["csi"]["volumeAttributes"]
    assert volume["csi"]["driver"] == "s3.csi.aws.com" and volume["csi"]["volumeHandle"] == pv
    assert attributes["bucketName"] == "team-checkpoints" and attributes["authenticationSource"] == "pod"
    assert attributes.get("cacheEmptyDirSizeLimit") == cache
    assert ("cache" in attributes) is (cache is not None)
    group_name = claim.removeprefix("s3-")
    assert volume["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "gpufleet.io/node-group", "operator": "In", "values": [group_name]}]}
    ]
    pvc = _objects(storage, "PersistentVolumeClaim")[claim]
    assert pvc["metadata"]["namespace"] == namespace
    assert pvc["spec"]["volumeName"] == pv and pvc["spec"]["accessModes"] == [access]


def test_claims_wait_for_their_volume(storage) -> None:
    ids = {r.id for r in storage.resources}
    for r in storage.resources:
        if r.args.get("object", {}).get("kind") == "PersistentVolumeClaim":
            (after,) = r.depends_on
            assert after in ids and after.startswith("persistentvolume-")


def test_volume_prefix_is_the_team_roles_prefix(storage) -> None:
    """Pod-level credentials: the Mountpoint Pod signs with the workload's checkpoint-writer role, which may touch
    exactly the prefix the volume mounts."""
    policy = next(r for r in storage.resources if r.id == "checkpoints-policy-llm").args["policy"]
    statements = {s["Sid"]: s for s in json.loads(policy)["Statement"]}
    assert statements["TeamPrefixObjects"]["Resource"] == "arn:aws:s3:::team-checkpoints/llm/*"
    assert statements["ListTeamPrefix"]["Condition"] == {"StringLike": {"s3:prefix": ["llm/*"]}}
    # Mountpoint's least-privilege set for a read-write prefix (mountpoint-s3 doc/CONFIGURATION.md "IAM permissions")
    assert {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"} <= set(
        statements["TeamPrefixObjects"]["Action"]
    )


def test_plan_notes_table(storage) -> None:
    assert (
        "| llm | `llm/s3-serve` | serve | `s3://team-checkpoints/llm/` | read-only | 100 Gbps |"
        " 1900 GB on the NVMe array (emptyDir) |"
    ) in storage.notes
    assert (
        "| eval | `evaluation/s3-batch` | batch | `s3://team-checkpoints/eval/` | read-write | 10 Gbps |"
        " none (no RAID0 array) |"
    ) in storage.notes


def test_without_mountpoint_no_driver_and_no_volumes() -> None:
    f = fleet(
        [TRAINING],
        MOUNTPOINT.replace("  mountpoint: {uid: 1001, gid: 2002}\n", "")
        .replace(", {nodeGroup: serve, gpus: 4}", "")
        .replace("quotas: [{nodeGroup: batch, gpus: 1}]", "quotas: [{nodeGroup: train, gpus: 1}]"),
    )
    content = next(s for s in plan(f).stages if s.name == "storage").content
    assert not [r for r in content.resources if r.type == "kubernetes:helm.sh/v3:Release"]
    assert not _objects(content, "PersistentVolume")
    assert "mountpointS3Csi" not in deployed_components(f)


def test_defaults_from_the_schema() -> None:
    f = fleet(
        [TRAINING],
        MOUNTPOINT.replace("{uid: 1001, gid: 2002}", "{}")
        .replace(", {nodeGroup: serve, gpus: 4}", "")
        .replace("quotas: [{nodeGroup: batch, gpus: 1}]", "quotas: [{nodeGroup: train, gpus: 1}]"),
    )
    assert f.checkpoints is not None and f.checkpoints.mountpoint is not None
    assert (f.checkpoints.mountpoint.uid, f.checkpoints.mountpoint.gid) == (1000, 1000)
    assert f.checkpoints.mountpoint.cache_fraction == 0.5
    assert f.versions.mountpoint_s3_csi == "2.7.0"
    volume = mp.volumes(f)[0][2]
    # 0.5 of 30400 GB, shared by the two teams with quota on train
    assert volume["spec"]["csi"]["volumeAttributes"]["cacheEmptyDirSizeLimit"] == "7600G"


def test_serving_model_size_only_for_inference_groups() -> None:
    text = (
        HEAD
        + "nodeGroups:\n"
        + TRAINING
        + INFERENCE
        + "workloads:\n  servingModelGB: {train: 140}\n"
        + "environments:\n  prod:\n    rollout: {through: cost}\n"
    )
    with pytest.raises(SpecError) as err:
        load_fleet_text(text, env="prod")
    (issue,) = [i for i in err.value.issues if i.path == ("workloads", "servingModelGB", "train")]
    assert issue.message == "node group train has workloadClass Training, not Inference"
    assert issue.hint == "allowed: serve"


def test_teams_on_one_group_share_the_cache_fraction() -> None:
    """Each team's pods get their own Mountpoint Pod and emptyDir on a node: two teams on train split 0.5 of
    30400 GB, 7600 GB each."""
    two = MOUNTPOINT.replace("quotas: [{nodeGroup: batch, gpus: 1}]", "quotas: [{nodeGroup: train, gpus: 8}]")
    f = fleet([TRAINING, INFERENCE, NO_ARRAY], two)
    limits = {
        pv["metadata"]["name"]: pv["spec"]["csi"]["volumeAttributes"].get("cacheEmptyDirSizeLimit")
        for _, _, pv, _ in mp.volumes(f)
    }
    assert limits == {"llm-s3-train": "7600G", "llm-s3-serve": "1900G", "eval-s3-train": "7600G"}


def test_a_cache_smaller_than_the_weights_warns() -> None:
    # g6e.12xlarge: 3800 GB x 0.1 = 380 GB; a 405 GB model on one node does not fit
    small = (
        MOUNTPOINT.replace("{uid: 1001, gid: 2002}", "{cacheFraction: 0.1}")
        + "workloads:\n  servingModelGB: {serve: 405}\n"
    )
    f = fleet([TRAINING, INFERENCE, NO_ARRAY], small)
    content = next(s for s in plan(f).stages if s.name == "storage").content
    assert (
        "claim llm/s3-serve: its Mountpoint cache on node group serve (380 GB) cannot hold the 405 GB of weights a node"
        " of a replica loads (workloads.servingModelGB): every load reads from S3; raise"
        " checkpoints.mountpoint.cacheFraction"
    ) in content.warnings
    fits = fleet([TRAINING, INFERENCE, NO_ARRAY], small.replace("{serve: 405}", "{serve: 380}"))
    content = next(s for s in plan(fits).stages if s.name == "storage").content
    assert not [w for w in content.warnings if "cannot hold" in w]
