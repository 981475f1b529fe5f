"""Stage 6, FSx for Lustre (`fsxLustre`): the security group rules, the file system and its data repository
associations, the FSx CSI driver with its Pod Identity, the per-team PV and PVC, and plan.md's throughput and cost,
each against the upstream fact it rests on (gpufleet.facts.fsx)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.components.recording import record
from gpufleet.facts import fsx as facts
from gpufleet.facts import pricing
from gpufleet.plan.builders.cluster import POD_IDENTITY_ADDON
from gpufleet.plan.manifests import fsx as fm
from gpufleet.plan.parts import Concat, Ref
from gpufleet.plan.stages import cost
from gpufleet.rules.pipeline import load_fleet
from tests.network.fleets import fleet, group, plan
from tests.upstream import chart_values, require_shared, unknown_value_keys, validate_object

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "tests" / "golden" / "cases" / "fsx-lustre" / "fleet.yaml"
NODES = Ref("cluster", "vpcConfig.clusterSecurityGroupId")
FS_GROUP = Ref("fsx-security-group", "id")

TEAMS = """\
teams:
  - {name: llm, quotas: [{nodeGroup: g, gpus: 8}]}
  - {name: eval, namespace: evaluation, quotas: [{nodeGroup: g, gpus: 8}]}
"""
CHECKPOINTS = """\
checkpoints:
  bucket: team-checkpoints
  modelParameters: 70000000000
  meanTimeBetweenFailuresHours: 6
"""


def lustre(spec: str = "perUnitStorageThroughput: 250", extra: str = TEAMS + CHECKPOINTS, **kw):
    body = "fsxLustre:\n" + "".join(f"  {line}\n" for line in spec.splitlines())
    return fleet([group("g", "p5.48xlarge", "EFA")], extra=extra + body, **kw)


def storage(f):
    return next(s for s in plan(f).stages if s.name == "storage").content


def by_id(content) -> dict:
    return {r.id: r for r in content.resources}


def test_no_fsx_section_no_file_system() -> None:
    c = storage(fleet([group("g", "p5.48xlarge", "EFA")], extra=TEAMS + CHECKPOINTS))
    assert not [r for r in c.resources if "fsx" in r.id or "lustre" in r.id]
    assert not any("FSx" in n for n in c.notes)


def test_lustre_ports_open_from_the_nodes_and_the_file_system_itself() -> None:
    res = by_id(storage(lustre()))
    ingress = {
        (r.args["securityGroupId"], r.args["referencedSecurityGroupId"], r.args["fromPort"], r.args["toPort"])
        for r in res.values()
        if r.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    }
    # FSx for Lustre user guide, limit-access-security-groups.html: TCP 988 and 1018-1023, in to the file system
    # from itself and from the clients, and in to the clients from the file system.
    assert ingress == {
        (FS_GROUP, FS_GROUP, 988, 988),
        (FS_GROUP, FS_GROUP, 1018, 1023),
        (FS_GROUP, NODES, 988, 988),
        (FS_GROUP, NODES, 1018, 1023),
        (NODES, FS_GROUP, 988, 988),
        (NODES, FS_GROUP, 1018, 1023),
    }
    assert all(
        r.args["ipProtocol"] == "tcp"
        for r in res.values()
        if r.type == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
    )
    assert res["fsx-security-group"].args["vpcId"] == "vpc-0a1b2c3d"
    assert res["fsx-egress"].args == {
        "securityGroupId": FS_GROUP,
        "cidrIpv4": "0.0.0.0/0",
        "ipProtocol": "-1",
        "description": "All traffic out (AWS's default for a new security group)",
        "tags": res["fsx-egress"].args["tags"],
    }
    # FSx refuses a file system whose group does not let Lustre in from itself: the rules come first.
    assert set(res["fsx-lustre"].depends_on) == {"fsx-ingress-988-self", "fsx-ingress-1018-1023-self", "fsx-egress"}


def test_file_system_in_the_training_groups_subnet() -> None:
    fs = by_id(storage(lustre("storageCapacityGiB: 4800\nperUnitStorageThroughput: 500")))["fsx-lustre"]
    assert fs.type == "aws:fsx/lustreFileSystem:LustreFileSystem"
    assert fs.args == {
        "deploymentType": "PERSISTENT_2",
        "storageCapacity": 4800,
        "storageType": "SSD",
        "fileSystemTypeVersion": "2.15",
        "subnetIds": "subnet-0aa",  # the EFA group's one subnet, in its zone
        "securityGroupIds": [FS_GROUP],
        "perUnitStorageThroughput": 500,
        "tags": fs.args["tags"],
    }
    assert fs.protect  # persistent: destroy stops at it


def test_scratch_file_system_has_no_throughput_tier_and_is_not_protected() -> None:
    fs = by_id(storage(lustre("deploymentType: SCRATCH_2")))["fsx-lustre"]
    assert fs.args["deploymentType"] == "SCRATCH_2"
    assert "perUnitStorageThroughput" not in fs.args
    assert not fs.protect


def test_subnet_id_and_node_group_choose_where_it_goes() -> None:
    f = fleet(
        [group("g", "p5.48xlarge", "EFA"), group("big", "p4d.24xlarge", max_size=8)],
        extra=TEAMS + "fsxLustre: {perUnitStorageThroughput: 125, nodeGroup: big, subnetId: subnet-0bb}\n",
    )
    assert by_id(storage(f))["fsx-lustre"].args["subnetIds"] == "subnet-0bb"


def test_data_repository_associations_link_buckets_with_their_events() -> None:
    spec = (
        "perUnitStorageThroughput: 250\n"
        "dataRepositories:\n"
        "  - {fileSystemPath: /checkpoints}\n"
        "  - {bucket: my-datasets, prefix: tokenized/, fileSystemPath: /datasets, autoExport: []}\n"
    )
    res = by_id(storage(lustre(spec)))
    first, second = res["fsx-data-repository-0"], res["fsx-data-repository-1"]
    assert first.type == "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    assert first.args == {
        "fileSystemId": Ref("fsx-lustre", "id"),
        "fileSystemPath": "/checkpoints",
        "dataRepositoryPath": "s3://team-checkpoints/",
        "batchImportMetaDataOnCreate": True,
        "tags": first.args["tags"],
        "s3": {
            "autoImportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]},
            "autoExportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]},
        },
    }
    assert first.depends_on == ("checkpoint-bucket",)  # the checkpoint bucket is made in this stage
    assert second.args["dataRepositoryPath"] == "s3://my-datasets/tokenized/"
    assert second.args["s3"] == {"autoImportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]}}
    assert second.depends_on == ()


def test_csi_driver_values_are_keys_of_the_pinned_chart() -> None:
    require_shared()
    release = by_id(storage(lustre()))["helm-aws-fsx-csi-driver"]
    assert (release.args["chart"], release.args["version"], release.args["namespace"]) == (
        "aws-fsx-csi-driver",
        "1.17.0",
        "kube-system",
    )
    assert release.args["repositoryOpts"] == {"repo": "https://kubernetes-sigs.github.io/aws-fsx-csi-driver"}
    defaults = chart_values("aws-fsx-csi-driver", "1.17.0")
    values = release.args["values"]
    assert list(unknown_value_keys(values, defaults)) == []
    # The service account the association names is the chart's, and the node plugin tolerates every taint.
    assert values["controller"]["serviceAccount"]["name"] == defaults["controller"]["serviceAccount"]["name"]
    assert defaults["node"]["tolerateAllTaints"] is True and values["node"]["tolerateAllTaints"] is True
    assert values["controller"]["region"] == "us-east-1"


def test_controller_credentials_through_pod_identity() -> None:
    res = by_id(storage(lustre()))
    association = res["fsx-csi-controller-pod-identity"]
    assert association.args["namespace"] == "kube-system"
    assert association.args["serviceAccount"] == "fsx-csi-controller-sa"
    assert association.args["roleArn"] == Ref("fsx-csi-controller-role", "arn")
    assert set(association.depends_on) == {"fsx-csi-controller-policy", POD_IDENTITY_ADDON}
    trust = json.loads(res["fsx-csi-controller-role"].args["assumeRolePolicy"])
    assert trust["Statement"][0]["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "t",
        "aws:RequestTag/kubernetes-namespace": "kube-system",
        "aws:RequestTag/kubernetes-service-account": "fsx-csi-controller-sa",
    }
    policy = res["fsx-csi-controller-policy"].args["policy"]
    assert isinstance(policy, Concat)
    doc = json.loads(str(policy))
    assert [(s["Action"], s["Resource"]) for s in doc["Statement"]] == [
        (["fsx:DescribeFileSystems"], "*"),
        (["fsx:UpdateFileSystem"], "<ref:fsx-lustre.arn>"),
    ]
    assert "fsx-csi-controller-pod-identity" in res["helm-aws-fsx-csi-driver"].depends_on


def test_a_static_volume_and_claim_per_team_namespace() -> None:
    res = by_id(storage(lustre("storageCapacityGiB: 2400\nperUnitStorageThroughput: 250")))
    for team, ns in (("llm", "llm"), ("eval", "evaluation")):
        pv = res[f"persistentvolume-cluster-fsx-lustre-{team}"].args["object"]
        pvc = res[f"persistentvolumeclaim-{ns}-fsx-lustre"].args["object"]
        assert pv["spec"]["csi"] == {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": Ref("fsx-lustre", "id"),
            "volumeAttributes": {"dnsname": Ref("fsx-lustre", "dnsName"), "mountname": Ref("fsx-lustre", "mountName")},
        }
        assert pv["spec"]["accessModes"] == pvc["spec"]["accessModes"] == ["ReadWriteMany"]
        assert pv["spec"]["capacity"] == pvc["spec"]["resources"]["requests"] == {"storage": "2400Gi"}
        assert pv["spec"]["claimRef"] == {"namespace": ns, "name": "fsx-lustre"}
        assert pvc["spec"]["volumeName"] == f"fsx-lustre-{team}"
        assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""
        assert pv["spec"]["mountOptions"] == ["flock"]


def test_volume_and_claim_validate_against_kubernetes() -> None:
    require_shared()
    res = by_id(storage(lustre()))
    for rid in ("persistentvolume-cluster-fsx-lustre-llm", "persistentvolumeclaim-llm-fsx-lustre"):
        obj = json.loads(json.dumps(res[rid].args["object"], default=str))
        assert validate_object(obj) == []


@pytest.mark.parametrize(
    ("spec", "throughput", "cost"),
    [
        # 250 MB/s/TiB x 4800/1024 TiB = 1171.875 MB/s; 4800 GB-month x USD 0.210 = USD 1,008.
        (
            "storageCapacityGiB: 4800\nperUnitStorageThroughput: 250",
            "250 MB/s/TiB x 4.69 TiB = **1,172 MB/s**",
            "1,008",
        ),
        # 1000 x 1.171875 = 1171.875 MB/s; 1200 x 0.600 = 720.
        ("perUnitStorageThroughput: 1000", "1000 MB/s/TiB x 1.17 TiB = **1,172 MB/s**", "720"),
        # SCRATCH_2: 200 read, 100 write per TiB (ssd-storage.html); 2400 x 0.140 = 336.
        (
            "deploymentType: SCRATCH_2\nstorageCapacityGiB: 2400",
            "read 200 MB/s/TiB x 2.34 TiB = **469 MB/s**, write 100 MB/s/TiB x 2.34 TiB = **234 MB/s**",
            "336",
        ),
    ],
)
def test_plan_states_throughput_and_monthly_cost(spec: str, throughput: str, cost: str) -> None:
    notes = "\n".join(storage(lustre(spec)).notes)
    assert f"| baseline disk throughput | {throughput} |" in notes
    assert f"= **USD {cost}** | Amazon FSx for Lustre pricing, US East (N. Virginia), as of 2025-08-01 |" in notes


def test_plan_states_one_checkpoint_at_the_file_systems_write_rate() -> None:
    # 70e9 x 16 = 1.12e12 bytes at 1171.875e6 B/s = 955.7 s.
    notes = "\n".join(storage(lustre("storageCapacityGiB: 4800\nperUnitStorageThroughput: 250")).notes)
    assert "| one checkpoint written to it | 1.12 TB / 1,172 MB/s = 15.9 min |" in notes


def test_every_tier_and_scratch_type_has_a_price() -> None:
    keys = {(t, None) for t in facts.DEPLOYMENT_TYPES if t not in facts.PERSISTENT}
    keys |= {(t, tier) for t, tiers in facts.THROUGHPUT_TIERS.items() for tier in tiers}
    assert set(pricing.FSX_LUSTRE_USD_PER_GB_MONTH) == keys


@pytest.mark.parametrize(
    ("kind", "gib", "valid"),
    [
        ("PERSISTENT_2", 1200, True),
        ("PERSISTENT_2", 2400, True),
        ("PERSISTENT_2", 3600, False),
        ("PERSISTENT_2", 4800, True),
        ("SCRATCH_2", 7200, True),
        ("SCRATCH_1", 3600, True),
        ("SCRATCH_1", 4800, False),
        ("SCRATCH_1", 7200, True),
        ("PERSISTENT_1", 1800, False),
    ],
)
def test_storage_capacities_as_the_fsx_api_allows(kind: str, gib: int, valid: bool) -> None:
    # API_CreateFileSystem StorageCapacity: 1200, 2400, then increments of 2400 (SCRATCH_1: of 3600).
    assert facts.valid_capacity(kind, gib) is valid


def test_existing_cluster_warns_the_controller_has_no_credentials_without_the_agent() -> None:
    head = (
        "apiVersion: gpufleet/v1alpha1\nkind: Fleet\nmetadata: {name: t}\ncluster:\n  mode: Existing\n  name: t\n"
        '  region: us-east-1\n  kubernetesVersion: "1.33"\n'
        "  network: {vpcId: vpc-0a1b2c3d, subnetIds: [subnet-0aa, subnet-0bb]}\n"
    )
    c = storage(lustre(head=head))
    assert any("the FSx CSI driver's controller gets no AWS credentials" in w for w in c.warnings)


def test_mock_runtime_registers_the_file_system_and_claims_with_deploy_time_values() -> None:
    """Under Pulumi's mock runtime (no CLI, no cloud) the plan's Refs become the file system's outputs."""
    f = load_fleet(str(CASE)).environments["prod"]
    registered = {r.name: r for r in record(plan(f))}
    fs = registered["fsx-lustre"]
    assert fs.type == "aws:fsx/lustreFileSystem:LustreFileSystem"
    assert fs.protect and fs.inputs["securityGroupIds"] == ["<ref:fsx-security-group.id>"]
    assert set(fs.depends_on) >= {"fsx-ingress-988-self", "fsx-ingress-1018-1023-self", "fsx-egress"}
    pv = registered["persistentvolume-cluster-fsx-lustre-llm"]
    assert pv.inputs["spec"]["csi"]["volumeHandle"] == "<ref:fsx-lustre.id>"
    assert pv.inputs["spec"]["csi"]["volumeAttributes"] == {
        "dnsname": "<ref:fsx-lustre.dnsName>",
        "mountname": "<ref:fsx-lustre.mountName>",
    }
    assert "helm-aws-fsx-csi-driver" in pv.depends_on
    dra = registered["fsx-data-repository-0"]
    assert dra.inputs["fileSystemId"] == "<ref:fsx-lustre.id>"
    assert "checkpoint-bucket" in dra.depends_on
    policy = json.loads(registered["fsx-csi-controller-policy"].inputs["policy"])
    assert policy["Statement"][1]["Resource"] == "<ref:fsx-lustre.arn>"
    assert registered["helm-aws-fsx-csi-driver"].parent == "06-storage"
    assert fm.DRIVER == "fsx.csi.aws.com"


def test_the_fleet_cost_estimate_counts_the_file_system_at_every_size() -> None:
    """The cost stage's monthly estimate adds the file system's capacity price at minSize and at maxSize alike."""
    without = fleet([group("g", "p5.48xlarge", "EFA")], extra=TEAMS + CHECKPOINTS)
    lines0, min0, max0 = cost.around_the_gpu_nodes(without)
    lines, at_min, at_max = cost.around_the_gpu_nodes(
        lustre("storageCapacityGiB: 19200\nperUnitStorageThroughput: 500")
    )
    # 19200 GB-month x USD 0.340 = USD 6,528.
    assert (round(at_min - min0, 6), round(at_max - max0, 6)) == (6528.0, 6528.0)
    assert lines[len(lines0) :] == [
        "- FSx for Lustre (PERSISTENT_2): 19,200 GB-month x $0.340 = $6,528, at every size."
    ]
    notes, _ = cost.estimate_notes(lustre("perUnitStorageThroughput: 500"))
    total = "With the control plane, system nodes and root volumes and the FSx for Lustre file system: "
    assert any(n.startswith(total) for n in notes)
