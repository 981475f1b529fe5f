"""Stage 1 Cluster Autoscaler: the pinned chart and its values, the Pod Identity role and association, the tags and
labels that let it scale a group from zero, its placement, and cluster.autoscaler None rendering nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpufleet.facts import ami_releases, catalog
from gpufleet.facts.versions import CLUSTER_AUTOSCALER_IMAGES, COMPONENTS, KUBERNETES_VERSIONS
from gpufleet.plan.builders.common import K8S_PROVIDER
from gpufleet.plan.manifests import autoscaler
from gpufleet.plan.parts import Ref, Resource, RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.fleet import Fleet
from tests.upstream import chart_values

# Flags read at kubernetes/autoscaler cluster-autoscaler/config/flags/flags.go @ cluster-autoscaler-1.35.2
# (cluster-autoscaler/main.go @ cluster-autoscaler-1.32.7).
UPSTREAM_FLAGS = {
    "expander",
    "scale-down-gpu-utilization-threshold",
    "scale-down-unneeded-time",
    "max-node-provision-time",
}


def resource(plan: RolloutPlan, rid: str) -> Resource:
    return next(r for s in plan.stages for r in s.content.resources if r.id == rid)


def ids(plan: RolloutPlan) -> set[str]:
    return {r.id for s in plan.stages for r in s.content.resources}


def spec(
    *,
    mode: str = "Create",
    kubernetes: str = "1.33",
    autoscaler_line: str = "",
    addons: str = "{podIdentityAgent: v1.3.8-eksbuild.2}",
    pin: bool = True,
) -> str:
    release = ami_releases.catalog().releases["AL2023_x86_64_NVIDIA"][kubernetes][-1]
    system = f'  systemNodes: {{releaseVersion: "{release}"}}\n' if mode == "Create" else ""
    return f"""
apiVersion: gpufleet/v1alpha1
kind: Fleet
metadata: {{name: ca}}
cluster:
  mode: {mode}
  name: ca-cluster
  region: eu-west-1
  kubernetesVersion: "{kubernetes}"
  admins:
    - principalArn: arn:aws:iam::111122223333:role/platform-admin
  network: {{vpcId: vpc-0abc, subnetIds: [subnet-0aa, subnet-0bb]}}
{system}{autoscaler_line}versions:
  gpuOperator: {{chart: v26.7.0}}
{"  clusterAutoscaler: {chart: 9.58.0}" if pin else ""}
  addons: {addons}
nodeGroups:
  - {{name: l4, instanceType: g6.12xlarge, workloadClass: Batch, ami: {{type: AL2023_x86_64_NVIDIA, releaseVersion: "{release}"}}, scaling: {{maxSize: 2}}}}
environments: {{prod: {{rollout: {{through: foundation}}}}}}
"""


def plan_of(text: str) -> RolloutPlan:
    return build_plan(load_fleet_text(text).environments["prod"], "prod")


def fleet_of(text: str) -> Fleet:
    return load_fleet_text(text).environments["prod"]


def key_paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    """Dotted paths of the values, stopping at the maps the chart passes to its templates whole."""
    out: set[str] = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path not in autoscaler.OPAQUE_VALUES:
            out |= key_paths(value, path + ".")
        else:
            out.add(path)
    return out


# --- chart, versions, values ---------------------------------------------------------------------------------


def test_component_is_the_upstream_chart_at_two_exact_versions() -> None:
    c = COMPONENTS["clusterAutoscaler"]
    assert (c.chart, c.repository, c.supported) == (
        "cluster-autoscaler",
        "https://kubernetes.github.io/autoscaler",
        ("9.58.0", "9.59.0"),
    )


def test_an_image_per_supported_kubernetes_minor_and_of_that_minor() -> None:
    assert tuple(CLUSTER_AUTOSCALER_IMAGES) == KUBERNETES_VERSIONS
    for minor, tag in CLUSTER_AUTOSCALER_IMAGES.items():
        assert tag.startswith(f"v{minor}.") and tag.count(".") == 2, tag


@pytest.mark.parametrize("kubernetes", KUBERNETES_VERSIONS)
def test_image_tag_follows_the_cluster_kubernetes_version(kubernetes: str) -> None:
    values = resource(plan_of(spec(kubernetes=kubernetes)), "helm-cluster-autoscaler").args["values"]
    assert values["image"] == {"tag": CLUSTER_AUTOSCALER_IMAGES[kubernetes]}


def test_release_in_kube_system_after_its_identity_and_the_system_nodes(prod: RolloutPlan) -> None:
    release = resource(prod, "helm-cluster-autoscaler")
    assert release.type == "kubernetes:helm.sh/v3:Release" and release.provider == K8S_PROVIDER
    args = release.args
    assert (args["name"], args["chart"], args["version"], args["namespace"]) == (
        "cluster-autoscaler",
        "cluster-autoscaler",
        "9.59.0",
        "kube-system",
    )
    assert args["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert release.depends_on == ("cluster-autoscaler-pod-identity", "system-node-group")
    assert prod.stages[0].name == "foundation"
    assert release in prod.stages[0].content.resources


def test_values_of_the_example(prod: RolloutPlan) -> None:
    assert resource(prod, "helm-cluster-autoscaler").args["values"] == {
        "cloudProvider": "aws",
        "awsRegion": "us-east-1",
        "autoDiscovery": {"clusterName": "research"},
        "image": {"tag": "v1.35.2"},
        "fullnameOverride": "cluster-autoscaler",
        "rbac": {"serviceAccount": {"name": "cluster-autoscaler"}},
        "extraArgs": {
            "expander": "least-waste",
            "scale-down-gpu-utilization-threshold": "0.001",
            "scale-down-unneeded-time": "15m",
            "max-node-provision-time": "30m",
        },
        "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "nodeSelector": {"gpufleet.io/node-group": "system"},
    }


@pytest.mark.parametrize("version", sorted(COMPONENTS["clusterAutoscaler"].releases))
def test_every_value_key_exists_in_the_pinned_chart(version: str) -> None:
    defaults = chart_values("cluster-autoscaler", version)
    for path in autoscaler.VALUE_KEYS:
        node = defaults
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, (
                f"{path} is not a key of cluster-autoscaler {version} values.yaml"
            )
            node = node[part]


def test_rendered_values_use_exactly_the_listed_keys(prod: RolloutPlan, existing: RolloutPlan) -> None:
    assert key_paths(resource(prod, "helm-cluster-autoscaler").args["values"]) == autoscaler.VALUE_KEYS
    # Mode Existing leaves placement to the chart: the same keys but nodeSelector.
    assert key_paths(resource(existing, "helm-cluster-autoscaler").args["values"]) == autoscaler.VALUE_KEYS - {
        "nodeSelector"
    }


def test_extra_args_are_upstream_flags_as_strings() -> None:
    assert set(autoscaler.EXTRA_ARGS) == UPSTREAM_FLAGS
    assert all(isinstance(v, str) for v in autoscaler.EXTRA_ARGS.values())


def test_gpu_scale_down_threshold_is_below_one_device_of_the_fullest_node() -> None:
    # A node is unneeded below the threshold: it must be below 1 of the most nvidia.com/gpu any node advertises
    # (the largest GPU count times the most replicas a sharing strategy allows), so a node with any GPU pod stays.
    most = max(catalog.lookup(n).gpu_count for n in catalog.gpu_instance_names()) * 48  # type: ignore[union-attr]
    assert float(autoscaler.EXTRA_ARGS["scale-down-gpu-utilization-threshold"]) < 1 / most


def test_system_nodes_in_create_chart_placement_in_existing(prod: RolloutPlan, existing: RolloutPlan) -> None:
    assert resource(prod, "helm-cluster-autoscaler").args["values"]["nodeSelector"] == {
        "gpufleet.io/node-group": "system"
    }
    assert "nodeSelector" not in resource(existing, "helm-cluster-autoscaler").args["values"]
    assert resource(existing, "helm-cluster-autoscaler").depends_on == ("cluster-autoscaler-pod-identity",)


# --- IAM and Pod Identity ---------------------------------------------------------------------------------------


def test_policy_reads_what_the_readme_lists_and_writes_only_this_clusters_groups(prod: RolloutPlan) -> None:
    policy = json.loads(resource(prod, "cluster-autoscaler-policy").args["policy"])
    discover, templates, scale = policy["Statement"]
    assert discover == {
        "Sid": "Discover",
        "Effect": "Allow",
        "Action": [
            "autoscaling:DescribeAutoScalingGroups",
            "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations",
            "autoscaling:DescribeScalingActivities",
            "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions",
            "ec2:GetInstanceTypesFromInstanceRequirements",
        ],
        "Resource": "*",
    }
    assert templates == {
        "Sid": "NodeGroupTemplates",
        "Effect": "Allow",
        "Action": ["eks:DescribeNodegroup"],
        "Resource": "arn:aws:eks:us-east-1:*:nodegroup/research/*",
    }
    assert scale == {
        "Sid": "ScaleOwnNodeGroups",
        "Effect": "Allow",
        "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/research": "owned"}},
    }
    # The condition names the very tag EKS puts on the groups' ASGs (and gpufleet on the node groups).
    assert resource(prod, "h100-node-group").args["tags"]["k8s.io/cluster-autoscaler/research"] == "owned"
    assert resource(prod, "cluster-autoscaler-policy").args["role"] == Ref("cluster-autoscaler-role", "name")


def test_policy_arn_uses_the_regions_partition() -> None:
    fleet = fleet_of(spec().replace("region: eu-west-1", "region: cn-north-1").replace("arn:aws:iam", "arn:aws-cn:iam"))
    templates = json.loads(autoscaler.iam_policy(fleet))["Statement"][1]
    assert templates["Resource"] == "arn:aws-cn:eks:cn-north-1:*:nodegroup/ca-cluster/*"


def test_role_trusts_pod_identity_for_the_autoscaler_service_account_only(prod: RolloutPlan) -> None:
    role = resource(prod, "cluster-autoscaler-role")
    assert role.type == "aws:iam/role:Role"
    assert role.args["namePrefix"] == "research-cluster-autoscaler-"
    (statement,) = json.loads(role.args["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-name": "research",
            "aws:RequestTag/kubernetes-namespace": "kube-system",
            "aws:RequestTag/kubernetes-service-account": "cluster-autoscaler",
        }
    }


def test_association_binds_the_charts_service_account_after_the_agent(prod: RolloutPlan, existing: RolloutPlan) -> None:
    association = resource(prod, "cluster-autoscaler-pod-identity")
    assert association.type == "aws:eks/podIdentityAssociation:PodIdentityAssociation"
    assert association.args == {
        "clusterName": Ref("cluster", "name"),
        "namespace": "kube-system",
        "serviceAccount": "cluster-autoscaler",
        "roleArn": Ref("cluster-autoscaler-role", "arn"),
        "tags": {"gpufleet.io/fleet": "research", "app.kubernetes.io/managed-by": "gpufleet"},
    }
    # The service account the association names is the one the chart creates.
    assert (
        resource(prod, "helm-cluster-autoscaler").args["values"]["rbac"]["serviceAccount"]["name"]
        == association.args["serviceAccount"]
    )
    assert association.depends_on == ("cluster-autoscaler-policy", "addon-eks-pod-identity-agent")
    assert resource(existing, "cluster-autoscaler-pod-identity").depends_on == ("cluster-autoscaler-policy",)


def test_registered_release_waits_for_the_association(prod_registrations) -> None:  # type: ignore[no-untyped-def]
    release = prod_registrations["helm-cluster-autoscaler"]
    assert release.parent == "01-foundation"
    assert "cluster-autoscaler-pod-identity" in release.depends_on


EXISTING_WARNING = (
    "gpufleet manages no EKS add-ons on an existing cluster: the eks-pod-identity-agent add-on must be installed"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(spec(), None, id="create-pinned"),
        pytest.param(spec(mode="Existing", addons="{}"), EXISTING_WARNING, id="existing"),
        pytest.param(spec(addons="{}", autoscaler_line="  autoscaler: None\n", pin=False), None, id="none"),
    ],
)
def test_warns_when_the_pod_identity_agent_may_be_missing(text: str, expected: str | None) -> None:
    warnings = [
        w
        for w in plan_of(text).stages[0].content.warnings
        if "get no AWS credentials" in w or "gets no AWS credentials" in w
    ]
    if expected is None:
        assert warnings == []
    else:
        (warning,) = warnings
        assert warning.startswith(expected) and "Cluster Autoscaler gets no AWS credentials" in warning


def test_mode_create_always_installs_the_pod_identity_agent() -> None:
    """Unpinned, the add-on still comes (at EKS's default version, with the generic unpinned warning), so the
    autoscaler's association always has an agent to wait for."""
    foundation = plan_of(spec(addons="{}")).stages[0].content
    agent = next(r for r in foundation.resources if r.id == "addon-eks-pod-identity-agent")
    assert "addonVersion" not in agent.args
    association = next(r for r in foundation.resources if r.id == "cluster-autoscaler-pod-identity")
    assert "addon-eks-pod-identity-agent" in association.depends_on
    [unpinned] = [w for w in foundation.warnings if w.startswith("EKS add-ons not pinned:")]
    assert "eks-pod-identity-agent (versions.addons.podIdentityAgent)" in unpinned.split(". ")[0]


# --- node groups ------------------------------------------------------------------------------------------------

DISCOVERY = {"k8s.io/cluster-autoscaler/enabled": "true", "k8s.io/cluster-autoscaler/research": "owned"}
TEMPLATE = "k8s.io/cluster-autoscaler/node-template/resources/"


def autoscaler_tags(res: Resource) -> dict[str, str]:
    return {k: v for k, v in res.args["tags"].items() if k.startswith("k8s.io/cluster-autoscaler/")}


def test_every_group_and_the_system_group_carry_the_discovery_tags(prod: RolloutPlan) -> None:
    for rid in [f"{g.name}-node-group" for g in prod.fleet.node_groups] + ["system-node-group"]:
        tags = resource(prod, rid).args["tags"]
        assert {k: tags[k] for k in DISCOVERY} == DISCOVERY, rid
        assert tags["gpufleet.io/fleet"] == "research"  # the fleet's own tags stay
    assert autoscaler_tags(resource(prod, "system-node-group")) == DISCOVERY


# kubelet's ephemeral-storage allocatable: the nodefs less nodeadm's kubeReserved 1Gi and evictionHard
# nodefs.available 10% (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go). h100 (p5.48xlarge, RAID0): the
# 30400 GB instance-store array, 28991699 MiB; a100-mig and l40s: the 300 GiB root volume (diskSizeGiB).
H100_EPHEMERAL = TEMPLATE + "ephemeral-storage", f"{28991699 - 1024 - 2899170}Mi"
ROOT_EPHEMERAL = TEMPLATE + "ephemeral-storage", f"{300 * 1024 - 1024 - 30720}Mi"
# g6e.12xlarge's RAID0 array: 3800 GB of instance store (EC2 GB) = 3623962 MiB, less 1Gi and 10% (362397)
L40S_EPHEMERAL = TEMPLATE + "ephemeral-storage", f"{3623962 - 1024 - 362397}Mi"


def test_template_resources_match_what_the_device_plugins_advertise_in_prod(prod: RolloutPlan) -> None:
    assert autoscaler_tags(resource(prod, "h100-node-group")) == {
        **DISCOVERY,
        TEMPLATE + "nvidia.com/gpu": "8",
        TEMPLATE + "vpc.amazonaws.com/efa": "32",
        TEMPLATE + "hugepages-2Mi": "10256Mi",
        **dict([H100_EPHEMERAL]),
    }
    # A100 MIG 1g.5gb: 8 GPUs x 7 slices, each advertised as nvidia.com/gpu (strategy single).
    assert autoscaler_tags(resource(prod, "a100-mig-node-group")) == {
        **DISCOVERY,
        TEMPLATE + "nvidia.com/gpu": "56",
        **dict([ROOT_EPHEMERAL]),
    }
    assert autoscaler_tags(resource(prod, "l40s-node-group")) == {
        **DISCOVERY,
        TEMPLATE + "nvidia.com/gpu": "4",
        **dict([L40S_EPHEMERAL]),
    }


def test_template_resources_only_from_stages_the_environment_runs(dev: RolloutPlan) -> None:
    # dev stops at admission: no sharing (physical GPUs only) and no EFA device plugin; the disk is there anyway.
    assert autoscaler_tags(resource(dev, "a100-mig-node-group")) == {
        **DISCOVERY,
        TEMPLATE + "nvidia.com/gpu": "8",
        **dict([ROOT_EPHEMERAL]),
    }
    assert autoscaler_tags(resource(dev, "h100-node-group")) == {
        **DISCOVERY,
        TEMPLATE + "nvidia.com/gpu": "8",
        **dict([H100_EPHEMERAL]),
    }


def test_the_bandwidth_gate_fits_an_empty_efa_groups_template(prod: RolloutPlan) -> None:
    # The gate asks for every GPU and EFA device of a node plus huge pages: the template must offer them all,
    # or the autoscaler never scales an empty EFA group up for it.
    from gpufleet.plan.manifests.network import gate_objects

    h100 = prod.fleet.node_group("h100")
    _, job = gate_objects(prod.fleet, h100)
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    offered = autoscaler.template_resources(prod.fleet, h100, with_sharing=True, with_network=True)
    for name in ("nvidia.com/gpu", "vpc.amazonaws.com/efa"):
        assert int(limits[name]) <= int(offered[name]), name
    assert int(limits["hugepages-2Mi"].removesuffix("Mi")) <= int(offered["hugepages-2Mi"].removesuffix("Mi"))


def test_rdma_groups_offer_the_shared_rdma_resource() -> None:
    from tests.network.fleets import RDMA
    from tests.network.fleets import fleet as network_fleet
    from tests.network.fleets import group as network_group

    fleet = network_fleet([network_group("ib", "p5en.48xlarge", "RDMA")], RDMA.format(link="InfiniBand"))
    (group,) = fleet.node_groups
    assert fleet.network.rdma is not None
    offered = autoscaler.template_resources(fleet, group, with_sharing=False, with_network=True)
    assert offered[f"rdma/{fleet.network.rdma.resource_name}"] == str(fleet.network.rdma.hca_max)


def test_gpu_groups_carry_the_aws_accelerator_label(prod: RolloutPlan) -> None:
    expected = {
        "h100": "nvidia-h100",
        "l40s": "nvidia-l40s",
        "a100-mig": "nvidia-tesla-a100",
        "notebooks": "nvidia-a10g",
    }
    for name, value in expected.items():
        assert resource(prod, f"{name}-node-group").args["labels"]["k8s.amazonaws.com/accelerator"] == value
    assert "k8s.amazonaws.com/accelerator" not in resource(prod, "system-node-group").args["labels"]


# --- cluster.autoscaler None ------------------------------------------------------------------------------------


def test_none_renders_nothing_and_needs_no_pin() -> None:
    plan = plan_of(spec(autoscaler_line="  autoscaler: None\n", pin=False))
    assert plan.fleet.cluster.autoscaler == "None" and "clusterAutoscaler" in plan.fleet.versions.defaulted
    assert not {i for i in ids(plan) if "autoscaler" in i}
    for rid in ("l4-node-group", "system-node-group"):
        res = resource(plan, rid)
        assert autoscaler_tags(res) == {}
        assert "k8s.amazonaws.com/accelerator" not in res.args["labels"]
    assert plan.stages[0].content.notes[-1].startswith("Node autoscaling: none (cluster.autoscaler None)")


def test_install_is_the_default() -> None:
    plan = plan_of(spec())
    assert plan.fleet.cluster.autoscaler == "Install"
    assert {
        "cluster-autoscaler-role",
        "cluster-autoscaler-policy",
        "cluster-autoscaler-pod-identity",
        "helm-cluster-autoscaler",
    } <= ids(plan)
