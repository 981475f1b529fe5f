"""Stage 1 node groups: the inputs EKS gets, asserted on the plan and on what the Pulumi program registers."""

from __future__ import annotations

import base64
import email
import tomllib
from dataclasses import replace

import pytest
import yaml

from gpufleet.plan.builders.common import AWS_PROVIDER, K8S_PROVIDER
from gpufleet.plan.builders.node_groups import launch_template, managed_node_group
from gpufleet.plan.manifests.node_bootstrap import user_data
from gpufleet.plan.parts import BuildContext, Concat, Ref, RolloutPlan
from gpufleet.plan.stages.cost import usd
from gpufleet.spec import warm_pool
from gpufleet.spec.fleet import Reservation
from gpufleet.tree.write import decode_user_data
from tests.upstream import require_shared, validate_object


def resource(plan: RolloutPlan, rid: str):  # type: ignore[no-untyped-def]
    return next(r for s in plan.stages for r in s.content.resources if r.id == rid)


def test_every_gpu_group_has_the_gpu_taint_in_eks_spelling_plus_its_own(prod: RolloutPlan) -> None:
    taints = {g.name: resource(prod, f"{g.name}-node-group").args["taints"] for g in prod.fleet.node_groups}
    assert taints["h100"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"},
        {"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NO_SCHEDULE"},
    ]
    assert taints["l40s"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"},
        {"key": "gpufleet.io/serving", "value": "true", "effect": "NO_SCHEDULE"},
    ]
    assert taints["notebooks"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_labels_name_group_class_fabric_and_gpu_model(prod: RolloutPlan) -> None:
    labels = resource(prod, "h100-node-group").args["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("gpufleet.io/")} == {
        "gpufleet.io/device-manager": "DevicePlugin",
        "gpufleet.io/fabric": "EFA",
        "gpufleet.io/gpu-model": "H100",
        "gpufleet.io/node-group": "h100",
        "gpufleet.io/sharing": "Exclusive",
        "gpufleet.io/workload-class": "Training",
    }


def test_pinned_ami_numeric_launch_template_version_and_name_prefix(prod: RolloutPlan) -> None:
    args = resource(prod, "h100-node-group").args
    assert args["amiType"] == "AL2023_x86_64_NVIDIA"
    assert args["releaseVersion"] == "1.35.6-20260714"
    assert args["launchTemplate"]["version"] == Concat(Ref("h100-launch-template", "latestVersion"))
    assert "nodeGroupName" not in args and args["nodeGroupNamePrefix"] == "research-h100-"


def test_desired_size_is_ignored_and_update_is_minimal(prod: RolloutPlan) -> None:
    for group in prod.fleet.node_groups:
        res = resource(prod, f"{group.name}-node-group")
        assert res.ignore_changes == ("scalingConfig.desiredSize",)
        assert res.args["updateConfig"] == {"updateStrategy": "MINIMAL", "maxUnavailable": 1}
        assert res.provider == AWS_PROVIDER


def test_warm_pool_and_capacity_type(prod: RolloutPlan, existing: RolloutPlan) -> None:
    h100 = resource(prod, "h100-node-group").args
    # maxGroupPreparedCapacity = minSize: the pool holds 2, not maxSize - desired = 16 p5.48xlarge (PutWarmPool
    # sizing); reuseOnScaleIn takes the API's default (false).
    assert h100["warmPoolConfig"] == {
        "minSize": 2,
        "maxGroupPreparedCapacity": 2,
        "poolState": "STOPPED",
        "reuseOnScaleIn": False,
    }
    assert resource(prod, "a100-mig-node-group").args["capacityType"] == "SPOT"
    assert "warmPoolConfig" not in resource(prod, "l40s-node-group").args
    block = resource(existing, "h200-block-node-group").args
    assert block["capacityType"] == "CAPACITY_BLOCK"
    assert "instanceTypes" not in block  # the launch template carries the type for a Capacity Block


def test_dev_warm_pool_of_zero_holds_none(dev: RolloutPlan) -> None:
    assert resource(dev, "h100-node-group").args["warmPoolConfig"]["maxGroupPreparedCapacity"] == 0


def test_warm_pool_sizing_follows_put_warm_pool(prod: RolloutPlan) -> None:
    h100 = next(g for g in prod.fleet.node_groups if g.name == "h100")
    assert [warm_pool.held(h100, desired) for desired in (0, 2, 16)] == [2, 2, 2]
    # "max minus desired", asked for explicitly, never below minSize.
    explicit = replace(h100, warm_pool=replace(h100.warm_pool, max_prepared_capacity=16))
    assert [warm_pool.held(explicit, desired) for desired in (0, 10, 15, 16)] == [16, 6, 2, 2]
    ctx = BuildContext(fleet=prod.fleet, environment="prod", through="cost")
    assert managed_node_group(ctx, explicit, {}, None).args["warmPoolConfig"]["maxGroupPreparedCapacity"] == 16


def test_plan_md_shows_what_each_warm_pool_holds_and_costs(prod: RolloutPlan) -> None:
    text = "\n".join(prod.stages[0].content.notes)
    # 2 stopped p5.48xlarge: two gp3 root volumes of diskSizeGiB each at $0.08/GB-month.
    disk = next(g for g in prod.fleet.node_groups if g.name == "h100").disk_size_gib
    assert f"| h100 | Stopped | 2 | 2 | 2 (minSize 0) | {usd(2 * disk * 0.08)} |" in text
    assert "| notebooks | Stopped | 2 | 2 | 2 (minSize 1) |" in text


def test_capacity_block_reservation_is_in_the_launch_template(existing: RolloutPlan) -> None:
    lt = resource(existing, "h200-block-launch-template").args
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f67890"}
    }
    assert lt["instanceType"] == "p5en.48xlarge"
    assert "placement" not in lt  # Capacity Blocks are co-located already


def test_efa_interfaces_one_per_card_and_placement_group(prod: RolloutPlan) -> None:
    lt = resource(prod, "h100-launch-template").args
    nics = lt["networkInterfaces"]
    assert len(nics) == 32
    assert nics[0]["interfaceType"] == "efa" and nics[0]["networkCardIndex"] == 0 and nics[0]["deviceIndex"] == 0
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    assert [n["networkCardIndex"] for n in nics] == list(range(32))
    assert {n["deviceIndex"] for n in nics[1:]} == {1}
    assert lt["placement"] == {"groupName": Ref("h100-placement-group", "name")}
    assert resource(prod, "h100-placement-group").args["strategy"] == "cluster"
    assert "networkInterfaces" not in resource(prod, "l40s-launch-template").args


def _node_config(plan: RolloutPlan, group: str) -> dict:  # type: ignore[type-arg]
    text = base64.b64decode(resource(plan, f"{group}-launch-template").args["userData"]).decode()
    message = email.message_from_string(text)
    parts = [p for p in message.walk() if p.get_content_type() == "application/node.eks.aws"]
    assert len(parts) == 1
    return yaml.safe_load(parts[0].get_payload())


def test_user_data_nodeconfig_topology_cpu_manager_and_raid0(prod: RolloutPlan) -> None:
    config = _node_config(prod, "h100")
    assert config["spec"]["featureGates"] == {"FastImagePull": True}  # parallel pull by default
    assert config["spec"]["kubelet"]["config"] == {
        "topologyManagerPolicy": "restricted",
        "topologyManagerScope": "pod",
        "cpuManagerPolicy": "static",
        "systemReserved": {"cpu": "1", "memory": "2Gi"},
    }
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    # Interactive: no Topology Manager by default; imagePull.mode Default: no FastImagePull gate.
    assert _node_config(prod, "notebooks")["spec"] == {}


def test_every_nodeconfig_validates_against_the_nodeadm_crd(prod: RolloutPlan, existing: RolloutPlan) -> None:
    require_shared()
    for plan, groups in ((prod, ("h100", "l40s", "a100-mig", "notebooks")), (existing, ("h200-block",))):
        for group in groups:
            assert validate_object(_node_config(plan, group)) == []


def _scripts(plan: RolloutPlan, group: str) -> list[str]:
    text = base64.b64decode(resource(plan, f"{group}-launch-template").args["userData"]).decode()
    return [
        str(p.get_payload())
        for p in email.message_from_string(text).walk()
        if p.get_content_type() == "text/x-shellscript"
    ]


def test_user_data_prepulls_images_and_closes_the_envvar_escape(prod_sequential: RolloutPlan) -> None:
    prod = prod_sequential
    text = decode_user_data(resource(prod, "h100-launch-template").args["userData"])
    # The images are read at boot from the group's SSM parameter, never written into the launch template.
    assert "aws ssm get-parameter --region us-east-1 --name /gpufleet/research/h100/images" in text
    assert "nvcr.io" not in text
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in text
    listed = resource(prod, "h100-image-list")
    assert listed.type == "aws:ssm/parameter:Parameter"
    assert {k: listed.args[k] for k in ("name", "type", "insecureValue")} == {
        "name": "/gpufleet/research/h100/images",
        "type": "StringList",
        "insecureValue": "nvcr.io/nvidia/pytorch:25.08-py3",
    }
    # A booting node reads it: the node group waits for it.
    assert "h100-image-list" in resource(prod, "h100-node-group").depends_on


def test_prepuller_daemonsets_do_not_gate_the_stage(prod: RolloutPlan) -> None:
    # pulumi-kubernetes awaits a DaemonSet until every updated pod is Ready (10 minutes by default,
    # provider/pkg/await/daemonset.go); `pulumi.com/skipAwait: "true"` skips it.
    prepullers = [
        r
        for r in prod.stages[0].content.resources
        if r.type == "kubernetes:apps/v1:DaemonSet" and r.args["object"]["metadata"]["name"].startswith("prepull-")
    ]
    assert {r.args["object"]["metadata"]["name"] for r in prepullers} == {
        f"prepull-{g.name}" for g in prod.fleet.node_groups
    }
    for r in prepullers:
        assert r.args["object"]["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true", r.id


def test_parallel_pull_leaves_the_pull_to_the_cri(prod: RolloutPlan) -> None:
    # With FastImagePull the images come through the CRI (the prepuller DaemonSet), not from a boot-time `ctr` pull
    # into a store the CRI no longer uses: no pre-pull script, no SSM image list; the notebooks (mode Default) keep both.
    for parallel in ("h100", "l40s", "a100-mig"):
        assert not [s for s in _scripts(prod, parallel) if "ssm get-parameter" in s], parallel
        assert f"{parallel}-image-list" not in {r.id for s in prod.stages for r in s.content.resources}
        assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in "".join(_scripts(prod, parallel))
    assert [s for s in _scripts(prod, "notebooks") if "ssm get-parameter" in s]
    assert resource(prod, "notebooks-image-list").type == "aws:ssm/parameter:Parameter"


def test_parallel_pull_volumes(prod: RolloutPlan) -> None:
    # a100-mig pulls in parallel onto its root volume: 600 MiB/s at the included 3,000 IOPS. h100 and l40s keep the
    # SOCI store on the RAID0 array (nodeadm v20251217 on), notebooks pull with containerd: the volume at baseline.
    def ebs(group: str) -> dict:  # type: ignore[type-arg]
        (mapping,) = resource(prod, f"{group}-launch-template").args["blockDeviceMappings"]
        return mapping["ebs"]  # type: ignore[no-any-return]

    assert ebs("a100-mig")["throughput"] == 600 and "iops" not in ebs("a100-mig")
    for baseline in ("h100", "l40s", "notebooks"):
        assert "throughput" not in ebs(baseline) and "iops" not in ebs(baseline), baseline


def test_raid0_groups_pull_onto_the_array_after_nodeadm_builds_it(prod_sequential: RolloutPlan) -> None:
    prod = prod_sequential
    # h100 and l40s have instance-store RAID0: nodeadm-run (After=cloud-final) builds the array and copies
    # /var/lib/containerd into it, so a pull from cloud-init would land on the root volume and be copied again.
    for raid0 in ("h100", "l40s"):
        (prepull,) = [s for s in _scripts(prod, raid0) if "ssm get-parameter" in s]
        assert "After=nodeadm-run.service containerd.service" in prepull, raid0
        assert "systemctl start --no-block gpufleet-prepull.service" in prepull, raid0
        assert "systemctl start containerd" not in prepull, raid0
    # Without local storage containerd's disk is the root volume: pull from cloud-init, before the node joins
    # (a100-mig's p4d.24xlarge has instance store, but localStorage None leaves it unused).
    (plain,) = [s for s in _scripts(prod, "a100-mig") if "ssm get-parameter" in s]
    assert "systemctl start containerd" in plain and "nodeadm-run" not in plain


def _unit_section(script: str) -> dict[str, list[str]]:
    """The [Unit] section of the unit file the RAID0 pre-pull script writes (directive -> values, space-split)."""
    body = script.split("<<'UNIT'\n", 1)[1].split("\nUNIT\n", 1)[0]
    section = body.split("[Unit]\n", 1)[1].split("\n[", 1)[0]
    out: dict[str, list[str]] = {}
    for line in section.splitlines():
        key, _, value = line.partition("=")
        out.setdefault(key, []).extend(value.split())
    return out


# systemd.unit(5): a unit listed in Requires= (and BindsTo=, PartOf=) takes the listing unit down with it when it
# is explicitly stopped, queued start jobs included; Wants= and After= do not.
_STOP_PROPAGATES = ("Requires", "BindsTo", "PartOf", "Requisite")


def _survives_stop(unit: dict[str, list[str]], stopped: str) -> bool:
    return not any(stopped in unit.get(kind, []) for kind in _STOP_PROPAGATES)


def test_raid0_prepull_survives_setup_local_disks_stopping_containerd(prod_sequential: RolloutPlan) -> None:
    prod = prod_sequential
    # nodeadm's setup-local-disks runs `systemctl stop containerd` before bind-mounting /var/lib/containerd onto the
    # array (awslabs/amazon-eks-ami templates/shared/runtime/bin/setup-local-disks, maybe_raid0); with
    # Requires=containerd.service the queued pre-pull start was dropped with it (reproduced on systemd 252, AL2023's).
    (prepull,) = [s for s in _scripts(prod, "h100") if "ssm get-parameter" in s]
    unit = _unit_section(prepull)
    assert _survives_stop(unit, "containerd.service"), unit
    assert _survives_stop(unit, "nodeadm-run.service"), unit
    # It still pulls into a started containerd on the array: started with it, ordered after both.
    assert unit["Wants"] == ["containerd.service"]
    assert unit["After"] == ["nodeadm-run.service", "containerd.service"]


def test_user_data_never_starts_stops_or_masks_kubelet(prod: RolloutPlan, existing: RolloutPlan) -> None:
    # EKS launch template guidance: no user data command that starts or modifies kubelet; warm pools follow EKS.
    for plan in (prod, existing):
        for group in plan.fleet.node_groups:
            if not group.ami_type.startswith("BOTTLEROCKET"):
                assert all("kubelet" not in script for script in _scripts(plan, group.name)), group.name


def test_bottlerocket_gets_toml_and_keeps_its_own_device_plugin(existing: RolloutPlan) -> None:
    text = decode_user_data(resource(existing, "l4-serving-launch-template").args["userData"])
    assert text.startswith(
        '[settings.kubernetes]\ncpu-manager-policy = "static"\ntopology-manager-policy = "best-effort"'
    )
    labels = resource(existing, "l4-serving-node-group").args["labels"]
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    lt = resource(existing, "l4-serving-launch-template").args
    assert lt["blockDeviceMappings"][0]["deviceName"] == "/dev/xvdb"


def test_existing_mode_looks_up_the_cluster_and_creates_none(existing: RolloutPlan) -> None:
    foundation = existing.stages[0].content.resources
    types = {r.type for r in foundation}
    assert "aws:eks/cluster:Cluster" not in types and "aws:eks/addon:Addon" not in types
    lookup = resource(existing, "cluster")
    assert lookup.lookup and lookup.type == "aws:eks/getCluster:getCluster" and lookup.args == {"name": "labs-prod"}


def test_every_kubernetes_resource_uses_the_one_provider(prod: RolloutPlan) -> None:
    k8s = [r for s in prod.stages for r in s.content.resources if r.type.startswith("kubernetes:")]
    assert k8s and {r.provider for r in k8s} == {K8S_PROVIDER}


def test_recorded_options_reach_the_engine(prod_registrations) -> None:  # type: ignore[no-untyped-def]
    node_group = prod_registrations["h100-node-group"]
    assert node_group.type == "aws:eks/nodeGroup:NodeGroup"
    assert node_group.ignore_changes == ("scalingConfig.desiredSize",)
    assert node_group.parent == "01-foundation"
    assert "node-role-amazoneksworkernodepolicy" in node_group.depends_on
    assert prod_registrations["cluster"].protect is True
    assert node_group.inputs["launchTemplate"]["version"] == "<ref:h100-launch-template.latestVersion>"


@pytest.mark.parametrize(
    ("release", "bind"),
    [
        # 1.46.0 and later: a bare `bind` binds every directory the variant allows, the soci snapshotter's store
        # /var/lib/soci-snapshotter included (bottlerocket-core-kit#630; Karpenter's SupportsDefaultBind)
        ("1.54.0-5043decc", []),
        # before: the three directories by name, as Karpenter renders them there
        ("1.45.0-8d8d9bd3", ["--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]),
    ],
)
def test_bottlerocket_raid0_is_its_own_ephemeral_storage_bootstrap_command(
    existing: RolloutPlan, release: str, bind: list[str]
) -> None:
    # bottlerocket.dev 1.54.x concepts/bootstrap-commands "Configure ephemeral disks"; Karpenter renders the same
    # two commands for instanceStorePolicy RAID0 (pkg/providers/amifamily/bootstrap/bottlerocket.go).
    group = replace(existing.fleet.node_group("l4-serving"), local_storage="RAID0", ami_release_version=release)
    settings = tomllib.loads(user_data(group, image_list=None))["settings"]
    assert settings["bootstrap-commands"] == {
        "k8s-ephemeral-storage": {
            "commands": [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind", *bind]],
            "essential": True,
            "mode": "always",
        }
    }
    assert settings["kubernetes"]["topology-manager-policy"] == "best-effort"  # the rest of the settings stay
    without = tomllib.loads(user_data(existing.fleet.node_group("l4-serving"), image_list=None))["settings"]
    assert "bootstrap-commands" not in without


@pytest.mark.parametrize(
    ("reservation", "specification"),
    [
        (
            Reservation(id="cr-0a1b2c3d4e5f60718", resource_group_arn=None, open=False, instance_count=2),
            {"capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}},
        ),
        (
            Reservation(
                id=None,
                resource_group_arn="arn:aws:resource-groups:us-east-1:111122223333:group/odcrs",
                open=False,
                instance_count=2,
            ),
            {
                "capacityReservationTarget": {
                    "capacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:111122223333:group/odcrs"
                }
            },
        ),
        (
            Reservation(id=None, resource_group_arn=None, open=True, instance_count=2),
            {"capacityReservationPreference": "open"},
        ),
    ],
    ids=["id", "resource-group", "open"],
)
def test_an_odcr_is_the_launch_templates_capacity_reservation_specification(
    prod: RolloutPlan, reservation: Reservation, specification: dict[str, object]
) -> None:
    """EC2's LaunchTemplateCapacityReservationSpecificationRequest: a target without a preference, or the
    preference open; the group stays ON_DEMAND with its instance type and (EFA) its cluster placement group."""
    h100 = replace(next(g for g in prod.fleet.node_groups if g.name == "h100"), reservation=reservation)
    ctx = BuildContext(fleet=prod.fleet, environment="prod", through="cost")
    template, group = (
        [r for r in launch_template(ctx, h100, None) if r.id == "h100-launch-template"][0],
        managed_node_group(ctx, h100, {}, None),
    )
    assert template.args["capacityReservationSpecification"] == specification
    assert "instanceMarketOptions" not in template.args and "instanceType" not in template.args
    assert template.args["placement"] == {"groupName": Ref("h100-placement-group", "name")}
    assert (group.args["capacityType"], group.args["instanceTypes"]) == ("ON_DEMAND", ["p5.48xlarge"])
    assert group.args["tags"]["gpufleet.io/reserved-instances"] == "2"


def test_the_boot_script_pulls_the_list_the_parameter_holds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The pre-pull script run with stand-ins for aws, ctr and systemctl: it pulls each image of the StringList, and
    a list it cannot read ends the script without failing the boot."""
    import os
    import subprocess

    from gpufleet.plan.manifests.node_bootstrap import prepull_script

    calls = tmp_path / "calls"
    stubs = {
        "aws": f'echo "aws $*" >> {calls}; [ -z "${{FAIL:-}}" ] && echo "r/a:1,r/b@sha256:00"',
        "ctr": f'echo "ctr $*" >> {calls}',
        "systemctl": "true",
    }
    for name, body in stubs.items():
        (tmp_path / name).write_text(f"#!/bin/bash\n{body}\n")
        (tmp_path / name).chmod(0o755)
    script = tmp_path / "prepull.sh"
    script.write_text(prepull_script("/gpufleet/f/g/images", "eu-west-1", raid0=False))
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(script)], check=True, env=env, timeout=20)
    assert calls.read_text().splitlines() == [
        "aws ssm get-parameter --region eu-west-1 --name /gpufleet/f/g/images --query Parameter.Value --output text",
        "ctr --namespace k8s.io images pull r/a:1",
        "ctr --namespace k8s.io images pull r/b@sha256:00",
    ]
    calls.unlink()
    done = subprocess.run(["bash", str(script)], env={**env, "FAIL": "1"}, timeout=20, capture_output=True, text=True)
    assert done.returncode == 0 and "could not read the image list /gpufleet/f/g/images" in done.stderr
    assert [line.split()[0] for line in calls.read_text().splitlines()] == ["aws"]
