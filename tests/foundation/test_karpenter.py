"""Karpenter groups (`provisioner: Karpenter`, issue 32): a fleet mixing the example's managed training group with
Karpenter groups gets, per Karpenter group, an EC2NodeClass and a NodePool instead of a launch template and a managed
node group, with the same labels, taints, kubelet settings, EFA interfaces, instance store and capacity; every one
validates against the pinned Karpenter 1.14.1 CRDs."""

from __future__ import annotations

import dataclasses
import email
import importlib
import inspect
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.builders.node_groups import managed_node_group
from gpufleet.plan.parts import BuildContext, Ref, Resource, RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from tests.upstream import chart_values, require_shared, unknown_value_keys, validate_object

ROOT = Path(__file__).resolve().parents[2]
CB = "cr-0123456789abcdef0"
ODCR = "cr-0a1b2c3d4e5f60718"


def mixed_spec() -> dict[str, Any]:
    """The example fleet: h100 stays a managed node group (Training, warm pool); l40s, a100-mig and notebooks move
    to Karpenter (without their managed-only settings); two more Karpenter groups cover Bottlerocket with RAID0 on an
    ODCR and an EFA Capacity Block."""
    data = yaml.safe_load((ROOT / "fleet.yaml").read_text())
    groups = {g["name"]: g for g in data["nodeGroups"]}
    for name in ("l40s", "a100-mig", "notebooks"):
        g = groups[name]
        g["provisioner"] = "Karpenter"
        g["scaling"] = {"maxSize": g["scaling"]["maxSize"]}
        g.pop("warmPool", None)
    data["nodeGroups"] += [
        {
            "name": "br",
            "instanceType": "g6e.12xlarge",
            "workloadClass": "Inference",
            "provisioner": "Karpenter",
            "ami": {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"},
            "capacity": {"reservation": {"id": ODCR, "instanceCount": 2}},
            "scaling": {"maxSize": 2},
            "localStorage": "RAID0",
        },
        {
            "name": "h200",
            "instanceType": "p5e.48xlarge",
            "workloadClass": "Training",
            "provisioner": "Karpenter",
            "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.35.6-20260714"},
            "capacity": {"type": "CapacityBlock", "reservationId": CB},
            "scaling": {"maxSize": 2},
            "fabric": "EFA",
            "zone": "use1-az4",
            "subnetIds": ["subnet-0a1b2c3d4e5f60001"],
            "localStorage": "RAID0",
        },
    ]
    del data["environments"]["dev"]
    return data


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> RolloutPlan:
    path = tmp_path_factory.mktemp("karpenter") / "fleet.yaml"
    path.write_text(yaml.safe_dump(mixed_spec(), sort_keys=False))
    return build_plan(load_fleet(str(path), "prod").environments["prod"], "prod")


def _resources(plan: RolloutPlan) -> dict[str, Resource]:
    return {r.id: r for s in plan.stages for r in s.content.resources}


def _object(plan: RolloutPlan, kind: str, name: str) -> dict[str, Any]:
    found = [
        r.args["object"]
        for r in _resources(plan).values()
        if "object" in r.args and r.args["object"]["kind"] == kind and r.args["object"]["metadata"]["name"] == name
    ]
    assert len(found) == 1, (kind, name)
    return found[0]


KARPENTER = ("l40s", "a100-mig", "notebooks", "br", "h200")


def test_karpenter_groups_have_a_node_pool_and_node_class_and_no_managed_node_group(mixed: RolloutPlan) -> None:
    ids = set(_resources(mixed))
    assert "h100-node-group" in ids and "h100-launch-template" in ids
    for name in KARPENTER:
        assert f"{name}-node-group" not in ids and f"{name}-launch-template" not in ids
        pool = _object(mixed, "NodePool", name)
        assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": name,
        }
        assert _object(mixed, "EC2NodeClass", name)["spec"]["role"] == Ref("karpenter-node-role", "name")


DEPLOYED = {
    Ref("karpenter-node-role", "name"): "research-karpenter-node-role-0123456",
    Ref("cluster", "vpcConfig.clusterSecurityGroupId"): "sg-0123456789abcdef0",
    Ref("efa-security-group", "id"): "sg-0fedcba9876543210",
}


def _deployed(value: Any) -> Any:
    if isinstance(value, Ref):
        return DEPLOYED.get(value, f"research-{value.resource}")
    if isinstance(value, dict):
        return {k: _deployed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deployed(v) for v in value]
    return value


@pytest.mark.parametrize("kind", ["NodePool", "EC2NodeClass"])
@pytest.mark.parametrize("name", KARPENTER)
def test_every_node_pool_and_node_class_validates_against_the_pinned_crds(
    mixed: RolloutPlan, kind: str, name: str
) -> None:
    require_shared()
    # Deploy-time values (gpufleet.plan.parts.Ref) as AWS spells them, so the CRD's patterns check their shape.
    obj = _deployed(_object(mixed, kind, name))
    assert validate_object(obj) == []


def test_labels_and_taints_are_the_managed_node_groups(mixed: RolloutPlan) -> None:
    """The NodePool carries exactly what the managed node group would: Kueue's flavors and every toleration
    gpufleet writes derive from the same group_taints and node labels."""
    fleet = mixed.fleet
    group = next(g for g in fleet.node_groups if g.name == "l40s")
    ctx = BuildContext(fleet=fleet, environment="prod", through="cost")
    managed = managed_node_group(ctx, group, {}, None).args
    template = _object(mixed, "NodePool", "l40s")["spec"]["template"]
    assert template["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "gpufleet.io/serving", "value": "true", "effect": "NoSchedule"},
    ]
    assert {k: v for k, v in template["metadata"]["labels"].items() if k.startswith("gpufleet.io/")} == {
        k: v for k, v in managed["labels"].items() if k.startswith("gpufleet.io/")
    }
    # The sharing stage's labels reach the pool through its at_foundation hook, as they reach the managed group.
    mig = _object(mixed, "NodePool", "a100-mig")["spec"]["template"]["metadata"]["labels"]
    assert mig["nvidia.com/mig.config"] == "a100-mig"


def test_one_instance_type_its_capacity_type_and_a_gpu_limit_of_max_size(mixed: RolloutPlan) -> None:
    def requirements(name: str) -> dict[str, list[str]]:
        spec = _object(mixed, "NodePool", name)["spec"]["template"]["spec"]
        return {r["key"]: r["values"] for r in spec["requirements"]}

    assert requirements("l40s") == {
        "node.kubernetes.io/instance-type": ["g6e.12xlarge"],
        "karpenter.sh/capacity-type": ["on-demand"],
        "kubernetes.io/arch": ["amd64"],
    }
    assert requirements("a100-mig")["karpenter.sh/capacity-type"] == ["spot"]
    assert requirements("br")["karpenter.sh/capacity-type"] == ["reserved"]
    assert requirements("h200")["karpenter.sh/capacity-type"] == ["reserved"]
    assert _object(mixed, "NodePool", "l40s")["spec"]["limits"] == {"nvidia.com/gpu": "48"}  # 12 nodes x 4 GPUs
    assert _object(mixed, "EC2NodeClass", "br")["spec"]["capacityReservationSelectorTerms"] == [{"id": ODCR}]
    assert _object(mixed, "EC2NodeClass", "h200")["spec"]["capacityReservationSelectorTerms"] == [{"id": CB}]
    assert "capacityReservationSelectorTerms" not in _object(mixed, "EC2NodeClass", "l40s")["spec"]


def test_pinned_ami_release_by_its_ssm_parameter(mixed: RolloutPlan) -> None:
    l40s = _object(mixed, "EC2NodeClass", "l40s")["spec"]
    assert l40s["amiFamily"] == "AL2023"
    assert l40s["amiSelectorTerms"] == [
        {
            "ssmParameter": "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/"
            "amazon-eks-node-al2023-x86_64-nvidia-1.35-v20260714/image_id"
        }
    ]
    br = _object(mixed, "EC2NodeClass", "br")["spec"]
    assert br["amiFamily"] == "Bottlerocket"
    assert br["amiSelectorTerms"] == [
        {"ssmParameter": "/aws/service/bottlerocket/aws-k8s-1.35-nvidia/x86_64/1.54.0/image_id"}
    ]
    assert [d["deviceName"] for d in br["blockDeviceMappings"]] == ["/dev/xvda", "/dev/xvdb"]


def _node_configs(text: str) -> list[dict[str, Any]]:
    message = email.message_from_string(text)
    return [
        yaml.safe_load(part.get_payload())
        for part in message.walk()
        if part.get_content_type() == "application/node.eks.aws"
    ]


def test_topology_manager_in_user_data_system_reserved_and_raid0_in_the_node_class(mixed: RolloutPlan) -> None:
    """Karpenter merges our NodeConfig with its own: the Topology Manager (which spec.kubelet has no field for)
    stays in user data; systemReserved and the RAID0 array are the EC2NodeClass's own fields, so they are not
    also in user data where the two NodeConfigs could disagree."""
    h200 = _object(mixed, "EC2NodeClass", "h200")["spec"]
    assert _node_configs(h200["userData"]) == [
        {
            "apiVersion": "node.eks.aws/v1alpha1",
            "kind": "NodeConfig",
            "spec": {
                "featureGates": {"FastImagePull": True},  # parallel pull, in the same NodeConfig
                "kubelet": {
                    "config": {
                        "cpuManagerPolicy": "static",
                        "topologyManagerPolicy": "restricted",
                        "topologyManagerScope": "pod",
                    }
                },
            },
        }
    ]
    assert h200["kubelet"] == {"systemReserved": {"cpu": "1", "memory": "2Gi"}}
    assert h200["instanceStorePolicy"] == "RAID0"
    br = _object(mixed, "EC2NodeClass", "br")["spec"]
    settings = tomllib.loads(br["userData"])["settings"]
    assert "bootstrap-commands" not in settings and "system-reserved" not in settings["kubernetes"]
    assert br["instanceStorePolicy"] == "RAID0"


def test_efa_interfaces_security_groups_and_no_placement_group_for_a_capacity_block(mixed: RolloutPlan) -> None:
    h200 = _object(mixed, "EC2NodeClass", "h200")["spec"]
    assert h200["networkInterfaces"] == [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        # One efa-only on every card, card 0 (device 1) included: Karpenter counts the efa-only entries as the
        # instance type's vpc.amazonaws.com/efa (types.go efas()), 32 as p5e.48xlarge has cards (issue 41 item 1).
        *({"networkCardIndex": c, "deviceIndex": 1, "interfaceType": "efa-only"} for c in range(32)),
    ]
    assert h200["securityGroupSelectorTerms"] == [
        {"id": Ref("cluster", "vpcConfig.clusterSecurityGroupId")},
        {"id": Ref("efa-security-group", "id")},
    ]
    assert "placementGroupSelector" not in h200
    assert h200["subnetSelectorTerms"] == [{"id": "subnet-0a1b2c3d4e5f60001"}]
    spec = _object(mixed, "NodePool", "h200")["spec"]["template"]["spec"]
    assert {"key": "topology.k8s.aws/zone-id", "operator": "In", "values": ["use1-az4"]} in spec["requirements"]
    assert "networkInterfaces" not in _object(mixed, "EC2NodeClass", "l40s")["spec"]


def test_the_controller_release_uses_only_keys_of_the_pinned_chart(mixed: RolloutPlan) -> None:
    require_shared()
    release = _resources(mixed)["helm-karpenter"].args
    assert (release["chart"].rsplit("/", 1)[-1], release["version"]) == ("karpenter", "1.14.1")
    assert release["values"] == {
        "settings": {
            "clusterName": "research",
            "interruptionQueue": "research-karpenter",
            # health.autoRepair Enabled (the default) through the health stage's node_repair hook; the pools'
            # NodeOverlays (hugepages on h200, slices on a100-mig and notebooks) take effect with nodeOverlay.
            "featureGates": {"nodeRepair": True, "nodeOverlay": True},
        },
        "serviceAccount": {"name": "karpenter"},
        "nodeSelector": {"kubernetes.io/os": "linux", "gpufleet.io/node-group": "system"},
    }
    defaults = chart_values("karpenter", "1.14.1")
    # nodeSelector is a label map (the chart renders it whole: charts/karpenter/templates/deployment.yaml).
    assert list(unknown_value_keys(release["values"], defaults, free_form=("nodeSelector",))) == []


def test_the_crds_come_from_the_karpenter_crd_chart_of_the_controllers_version(mixed: RolloutPlan) -> None:
    """Issue 41 item 6: Helm installs a chart's crds/ at the first install only, so with the controller chart's a
    version bump would run the new controller on the old CRDs. The karpenter-crd chart of the same version installs
    them as templates, which every upgrade applies (Karpenter's upgrade guide, "CRD Upgrades"), before the controller,
    whose release skips its own crds/."""
    res = _resources(mixed)
    crds, controller = res["helm-karpenter-crd"].args, res["helm-karpenter"].args
    assert crds["chart"] == "oci://public.ecr.aws/karpenter/karpenter-crd"
    assert (crds["name"], crds["namespace"], crds["version"]) == ("karpenter-crd", "kube-system", "1.14.1")
    assert crds["version"] == controller["version"] and crds["values"] == {} and "skipCrds" not in crds
    assert controller["skipCrds"] is True
    assert "helm-karpenter-crd" in res["helm-karpenter"].depends_on
    # a bump of versions.karpenter moves both
    fleet = mixed.fleet
    bumped = build_plan(
        dataclasses.replace(fleet, versions=dataclasses.replace(fleet.versions, karpenter="1.15.0")), "prod"
    )
    assert {r: _resources(bumped)[r].args["version"] for r in ("helm-karpenter-crd", "helm-karpenter")} == {
        "helm-karpenter-crd": "1.15.0",
        "helm-karpenter": "1.15.0",
    }


def test_the_crd_release_uses_only_keys_of_the_pinned_chart(mixed: RolloutPlan) -> None:
    release = _resources(mixed)["helm-karpenter-crd"].args
    defaults = chart_values("karpenter-crd", "1.14.1")
    assert defaults == {"additionalAnnotations": {}}
    assert list(unknown_value_keys(release["values"], defaults)) == []


def test_controller_identity_queue_rules_and_node_access(mixed: RolloutPlan, prod: RolloutPlan) -> None:
    res = _resources(mixed)
    association = res["karpenter-pod-identity"].args
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "karpenter")
    assert res["karpenter-interruption-queue"].args["messageRetentionSeconds"] == 300
    patterns = sorted(
        json.loads(r.args["eventPattern"])["detail-type"][0]
        for r in res.values()
        if r.type == "aws:cloudwatch/eventRule:EventRule"
    )
    assert patterns == [
        "AWS Health Event",
        "EC2 Capacity Reservation Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
        "EC2 Spot Instance Interruption Warning",
    ]
    targets = [r for r in res.values() if r.type == "aws:cloudwatch/eventTarget:EventTarget"]
    assert len(targets) == 5 and all(t.args["arn"] == Ref("karpenter-interruption-queue", "arn") for t in targets)
    entry = res["karpenter-node-access-entry"].args
    assert (entry["principalArn"], entry["type"]) == (Ref("karpenter-node-role", "arn"), "EC2_LINUX")
    # The NodePools' CRDs come with the chart; nodes join through the access entry, with the role's policies.
    node_class = next(r for r in res.values() if r.type.endswith(":EC2NodeClass"))
    assert set(node_class.depends_on) == {
        "helm-karpenter",
        "karpenter-node-access-entry",
        "karpenter-node-role-amazoneksworkernodepolicy",
        "karpenter-node-role-amazonec2containerregistryreadonly",
        "karpenter-node-role-amazonssmmanagedinstancecore",
    }
    # A fleet without Karpenter groups gets none of it.
    assert not [r for r in _resources(prod) if r.startswith(("karpenter", "helm-karpenter"))]


def test_the_controller_policy_is_karpenters_own(mixed: RolloutPlan) -> None:
    policy = _resources(mixed)["karpenter-controller-policy"].args["policy"]
    doc = json.loads(
        str(policy)
        .replace("<ref:karpenter-node-role.arn>", "ROLE")
        .replace("<ref:karpenter-interruption-queue.arn>", "QUEUE")
    )
    sids = {s["Sid"]: s for s in doc["Statement"]}
    assert sids["AllowPassingInstanceRole"]["Resource"] == "ROLE"
    assert sids["AllowInterruptionQueueActions"]["Resource"] == "QUEUE"
    assert sids["AllowScopedDeletion"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/research": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }
    assert len(sids) == 17


@pytest.mark.parametrize(
    ("token", "cls"),
    [
        ("aws:sqs/queue:Queue", "sqs.Queue"),
        ("aws:sqs/queuePolicy:QueuePolicy", "sqs.QueuePolicy"),
        ("aws:cloudwatch/eventRule:EventRule", "cloudwatch.EventRule"),
        ("aws:cloudwatch/eventTarget:EventTarget", "cloudwatch.EventTarget"),
        ("aws:eks/accessEntry:AccessEntry", "eks.AccessEntry"),
    ],
)
def test_aws_inputs_are_pulumi_aws_names(mixed: RolloutPlan, token: str, cls: str) -> None:
    """Every input the controller's AWS resources set is an argument of the pinned pulumi-aws class."""
    module, name = cls.split(".")
    params = inspect.signature(getattr(importlib.import_module(f"pulumi_aws.{module}"), name)._internal_init).parameters

    def snake(key: str) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()

    used = {key for r in _resources(mixed).values() if r.type == token for key in r.args}
    assert used and {snake(k) for k in used} <= set(params)


@pytest.mark.parametrize(
    ("name", "budgets"),
    [
        ("h200", [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "1"}]),  # Training
        ("notebooks", [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "1"}]),  # Interactive
        ("l40s", [{"nodes": "1"}]),  # Inference
        ("a100-mig", [{"nodes": "1"}]),  # Batch
    ],
)
def test_disruption_never_evicts_gpu_work_for_karpenters_own_reasons(
    mixed: RolloutPlan, name: str, budgets: list[dict[str, Any]]
) -> None:
    spec = _object(mixed, "NodePool", name)["spec"]
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": budgets}
    assert spec["template"]["spec"]["expireAfter"] == "Never"


def test_node_repair_follows_the_health_hook(tmp_path: Path) -> None:
    """health.autoRepair Disabled: the node_repair hook gives nothing for any group, and Karpenter's NodeRepair
    stays off (the chart's default)."""
    data = mixed_spec()
    data["health"] = {**data.get("health", {}), "autoRepair": "Disabled"}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    plan = build_plan(load_fleet(str(path), "prod").environments["prod"], "prod")
    assert _resources(plan)["helm-karpenter"].args["values"]["settings"]["featureGates"] == {"nodeOverlay": True}


def test_node_overlays_tell_karpenter_what_the_nodes_advertise(mixed: RolloutPlan) -> None:
    """Issue 41 items 1 and 3: Karpenter's instance type has the physical GPUs and no hugepages; a NodeOverlay per
    pool names what the node advertises beyond it (the EFA driver's hugepages on h200; the 56 MIG slices of a100-mig
    and the 4 time-sliced replicas of notebooks), on that pool only, and the pool's GPU limit counts the same units.
    Exclusive pools without EFA get none."""
    overlays = {
        r.args["object"]["metadata"]["name"]: r
        for r in _resources(mixed).values()
        if "object" in r.args and r.args["object"]["kind"] == "NodeOverlay"
    }
    assert sorted(overlays) == ["a100-mig", "h200", "notebooks"]
    for name, res in overlays.items():
        obj = res.args["object"]
        assert obj["apiVersion"] == "karpenter.sh/v1alpha1"
        assert obj["spec"]["requirements"] == [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [name]}]
        assert res.depends_on == ("helm-karpenter",)
    assert overlays["h200"].args["object"]["spec"]["capacity"] == {"hugepages-2Mi": "10256Mi"}
    assert overlays["a100-mig"].args["object"]["spec"]["capacity"] == {"nvidia.com/gpu": "56"}
    assert overlays["notebooks"].args["object"]["spec"]["capacity"] == {"nvidia.com/gpu": "4"}
    limits = {n: _object(mixed, "NodePool", n)["spec"]["limits"] for n in ("a100-mig", "notebooks", "h200")}
    # maxSize x what Karpenter counts per node: 4 x 56 slices, 20 x 4 replicas, 2 x 8 GPUs.
    assert limits == {
        "a100-mig": {"nvidia.com/gpu": "224"},
        "notebooks": {"nvidia.com/gpu": "80"},
        "h200": {"nvidia.com/gpu": "16"},
    }


def test_node_overlays_validate_against_the_pinned_crd(mixed: RolloutPlan) -> None:
    require_shared()
    for name in ("a100-mig", "h200", "notebooks"):
        assert validate_object(_object(mixed, "NodeOverlay", name)) == []


def test_without_the_sharing_and_network_stages_no_overlay(tmp_path: Path) -> None:
    """An environment that rolls out through admission advertises whole GPUs, no hugepages: Karpenter's own view is
    right, so no overlay and no feature gate, and the limit counts physical GPUs."""
    data = mixed_spec()
    data["environments"]["prod"]["rollout"] = {"through": "admission"}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    plan = build_plan(load_fleet(str(path), "prod").environments["prod"], "prod")
    kinds = {r.args["object"]["kind"] for r in _resources(plan).values() if "object" in r.args}
    assert "NodeOverlay" not in kinds
    assert "nodeOverlay" not in _resources(plan)["helm-karpenter"].args["values"]["settings"].get("featureGates", {})
    assert _object(plan, "NodePool", "a100-mig")["spec"]["limits"] == {"nvidia.com/gpu": "32"}
