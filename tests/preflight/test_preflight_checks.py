"""Each preflight check against moto's EC2 (and Stubber where moto has no answer): one passing and at least
one failing case per check."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from gpufleet.commands.preflight import preflight
from gpufleet.facts import catalog
from gpufleet.preflight import addons, ami, instances, network, quotas, reservations
from gpufleet.preflight.clients import Clients
from gpufleet.preflight.context import Context
from gpufleet.preflight.findings import AccountFinding
from gpufleet.spec.fleet import CapacityType, Fabric, Fleet, Reservation, WarmPool
from tests.preflight.support import (
    AL2023_PARAM,
    AMI_ID,
    BOTTLEROCKET_PARAM,
    G_ON_DEMAND,
    NEEDED,
    P_ON_DEMAND,
    P_SPOT,
    RELEASE,
    SYSTEM_PARAM,
    World,
    all_clients,
    fleet_of,
    only,
    quota_response,
    quotas_client,
    reservation,
    reservations_client,
    session,
    ssm_client,
    stubbed,
    with_group,
)


def run(check: Callable[[Context], Iterable[AccountFinding]], fleet: Fleet, clients: Clients) -> list[AccountFinding]:
    return list(check(Context(fleet, clients)))


def ec2_only(world: World) -> Clients:
    """For checks that read only EC2: the other clients are stubs that fail if called."""
    return Clients(ec2=world.ec2, service_quotas=stubbed("service-quotas")[0], ssm=stubbed("ssm")[0])


def texts(findings: list[AccountFinding]) -> list[str]:
    return [f"{'error' if f.blocking else 'warning'} {f.where}: {f.message}" for f in findings]


# --- the whole run ----------------------------------------------------------------------------------------


def test_the_fixture_fleet_passes_every_check(world: World) -> None:
    clients, stubs = all_clients(world)
    assert preflight(fleet_of(world), clients) == []
    for stub in stubs:
        stub.assert_no_pending_responses()


# --- instance types and GPUs ------------------------------------------------------------------------------


def test_instance_types_exist_with_the_catalog_gpus(world: World) -> None:
    assert run(instances.check_instance_types, fleet_of(world), ec2_only(world)) == []


def test_unknown_instance_type_is_blocking(world: World) -> None:
    fleet = with_group(fleet_of(world), "l40s", instance_type="g9.12xlarge", instance_types=("g9.12xlarge",))
    (finding,) = run(instances.check_instance_types, fleet, ec2_only(world))
    assert finding.blocking and finding.node_group == "l40s"
    assert "g9.12xlarge does not exist in us-east-1" in finding.message


def test_gpu_info_that_disagrees_with_the_catalog_is_blocking(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    real = catalog.lookup

    def wrong(name: str) -> catalog.InstanceType | None:
        entry = real(name)
        return (
            dataclasses.replace(entry, gpu_memory_mib=40960) if entry is not None and name == "p5.48xlarge" else entry
        )

    monkeypatch.setattr(catalog, "lookup", wrong)
    found = run(instances.check_instance_types, fleet_of(world), ec2_only(world))
    assert [f.node_group for f in found] == ["h100", "cb"]
    assert (
        "EC2 reports 8 x H100 with 81920 MiB each for p5.48xlarge; gpufleet's catalog says 8 x H100 with 40960 MiB each"
        in found[0].message
    )
    assert "gpufleet/facts/catalog.py" in found[0].hint


# --- zones and offerings ------------------------------------------------------------------------------------


def test_pinned_zones_exist(world: World) -> None:
    assert run(instances.check_zones, fleet_of(world), ec2_only(world)) == []


def test_a_zone_of_another_region_is_blocking(world: World) -> None:
    fleet = with_group(fleet_of(world), "h100", zone="usw2-az1")
    (finding,) = run(instances.check_zones, fleet, ec2_only(world))
    assert finding.blocking and finding.node_group == "h100"
    assert "usw2-az1 is not an availability zone ID of us-east-1" in finding.message
    assert "use1-az4 (us-east-1d)" in finding.hint


def test_instance_types_are_offered_in_the_chosen_zones(world: World) -> None:
    assert run(instances.check_offerings, fleet_of(world), ec2_only(world)) == []


def test_pinned_zone_without_the_instance_type_is_blocking(world: World) -> None:
    # moto's offerings (real EC2 data): g6e.12xlarge is in use1-az1, az2, az4 and az6, not az3.
    fleet = with_group(fleet_of(world), "l40s", zone="use1-az3")
    (finding,) = run(instances.check_offerings, fleet, ec2_only(world))
    assert finding.blocking and finding.node_group == "l40s"
    assert "g6e.12xlarge is not offered in zone use1-az3 (us-east-1e)" in finding.message


def test_every_type_of_a_karpenter_pool_is_described_and_offered(world: World) -> None:
    """Each of a pool's instanceTypes exists in the region and is offered in its zone, not only instanceType."""
    fleet = with_group(
        fleet_of(world), "l40s", provisioner="Karpenter", instance_types=("g6e.12xlarge", "g9.24xlarge"), zone=None
    )
    (unknown,) = run(instances.check_instance_types, fleet, ec2_only(world))
    assert unknown.blocking and "instance type g9.24xlarge does not exist in us-east-1" in unknown.message
    pinned = with_group(fleet_of(world), "l40s", instance_types=("g6e.12xlarge", "g6e.24xlarge"), zone="use1-az3")
    found = run(instances.check_offerings, pinned, ec2_only(world))
    assert [f.message.split(";")[0] for f in found] == [
        "g6e.12xlarge is not offered in zone use1-az3 (us-east-1e)",
        "g6e.24xlarge is not offered in zone use1-az3 (us-east-1e)",
    ]


def test_subnet_zones_without_the_instance_type(world: World) -> None:
    fleet = fleet_of(world)
    nowhere = with_group(fleet, "l40s", subnet_ids=(world.subnet["use1-az3"],))
    (blocked,) = run(instances.check_offerings, nowhere, ec2_only(world))
    assert (
        blocked.blocking and "not offered in any zone of the group's subnets (use1-az3 (us-east-1e))" in blocked.message
    )
    partly = with_group(fleet, "l40s", subnet_ids=(world.subnet["use1-az3"], world.subnet["use1-az4"]))
    (warned,) = run(instances.check_offerings, partly, ec2_only(world))
    assert not warned.blocking and "not offered in use1-az3 (us-east-1e)" in warned.message


# --- EFA ------------------------------------------------------------------------------------------------------


def test_efa_groups_use_efa_instance_types(world: World) -> None:
    assert run(instances.check_efa, fleet_of(world), ec2_only(world)) == []


def test_efa_on_an_instance_type_without_efa_is_blocking(world: World) -> None:
    fleet = with_group(fleet_of(world), "notebooks", fabric=Fabric.EFA)
    (finding,) = run(instances.check_efa, fleet, ec2_only(world))
    assert finding.blocking and finding.node_group == "notebooks"
    assert "no EFA support for g5.xlarge" in finding.message


# --- subnets ----------------------------------------------------------------------------------------------------


def test_subnets_exist_in_the_vpc_and_zones(world: World) -> None:
    assert run(network.check_subnets, fleet_of(world), ec2_only(world)) == []


@pytest.mark.parametrize(
    ("change", "where", "expected"),
    [
        (
            lambda w: {"subnet_ids": ("subnet-0123456789abcdef0",)},
            "nodeGroups/h100",
            "subnet subnet-0123456789abcdef0 does not exist in us-east-1",
        ),
        (lambda w: {"subnet_ids": (w.foreign_subnet,)}, "nodeGroups/h100", "not in the cluster's VPC"),
        (
            lambda w: {"subnet_ids": (w.subnet["use1-az6"],)},
            "nodeGroups/h100",
            "is in use1-az6 (us-east-1a), not in the group's zone use1-az4 (us-east-1d)",
        ),
    ],
    ids=["missing", "other-vpc", "other-zone"],
)
def test_bad_group_subnets_are_blocking(
    world: World, change: Callable[[World], dict[str, Any]], where: str, expected: str
) -> None:
    fleet = with_group(fleet_of(world), "h100", **change(world))
    (finding,) = run(network.check_subnets, fleet, ec2_only(world))
    assert finding.blocking and finding.where == where
    assert expected in finding.message


def test_cluster_subnets_in_one_zone_are_blocking(world: World) -> None:
    fleet = fleet_of(world, cluster_subnets=("use1-az4", "use1-az4b"))
    (finding,) = run(network.check_subnets, only(fleet, "h100"), ec2_only(world))
    assert finding.blocking and finding.where == "cluster"
    assert "all in use1-az4 (us-east-1d); EKS needs subnets in at least two zones" in finding.message


def test_cluster_subnet_in_a_zone_eks_rejects_is_blocking(world: World) -> None:
    fleet = fleet_of(world, cluster_subnets=("use1-az4", "use1-az3"))
    (finding,) = run(network.check_subnets, only(fleet, "h100"), ec2_only(world))
    assert finding.blocking and "a zone EKS does not accept for cluster subnets" in finding.message


# --- Capacity Blocks (moto lacks DescribeCapacityReservations: Stubber) -------------------------------------


def with_reservations(world: World, client: Any) -> Clients:
    return dataclasses.replace(ec2_only(world), reservations=client)


def test_an_active_capacity_block_that_fits_passes(world: World) -> None:
    client, stub = reservations_client(reservation())
    assert run(reservations.check_reservations, fleet_of(world), with_reservations(world, client)) == []
    stub.assert_no_pending_responses()


def test_a_missing_reservation_is_blocking(world: World) -> None:
    client, _ = reservations_client(error="InvalidCapacityReservationId.NotFound")
    (finding,) = run(reservations.check_reservations, fleet_of(world), with_reservations(world, client))
    assert finding.blocking and finding.node_group == "cb"
    assert "capacity reservation cr-0123456789abcdef0 does not exist in us-east-1" in finding.message


def test_a_scheduled_capacity_block_is_a_warning(world: World) -> None:
    client, _ = reservations_client(reservation(State="scheduled"))
    (finding,) = run(reservations.check_reservations, fleet_of(world), with_reservations(world, client))
    assert (
        not finding.blocking
        and "scheduled, not active yet: nodes launch from 2026-08-01 11:30:00+00:00" in finding.message
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"State": "expired"}, "reservation cr-0123456789abcdef0 is expired, not active"),
        ({"ReservationType": "default"}, "is a default capacity reservation, not a Capacity Block"),
        ({"InstanceType": "p5en.48xlarge"}, "is for p5en.48xlarge, the group runs p5.48xlarge"),
        (
            {"AvailabilityZoneId": "use1-az6", "AvailabilityZone": "us-east-1a"},
            "is in use1-az6 (us-east-1a), the group is pinned to use1-az4 (us-east-1d)",
        ),
        ({"TotalInstanceCount": 1}, "holds 1 instance(s) but scaling.maxSize is 2"),
    ],
    ids=["expired", "not-a-block", "instance-type", "zone", "too-small"],
)
def test_a_capacity_block_that_does_not_fit_is_blocking(world: World, changes: dict[str, Any], expected: str) -> None:
    client, _ = reservations_client(reservation(**changes))
    (finding,) = run(reservations.check_reservations, fleet_of(world), with_reservations(world, client))
    assert finding.blocking and finding.node_group == "cb"
    assert expected in finding.message


def test_an_unpinned_capacity_block_group_must_use_the_blocks_zone(world: World) -> None:
    fleet = with_group(fleet_of(world), "cb", zone=None, subnet_ids=None)  # the cluster's subnets: az4 and az6
    client, _ = reservations_client(reservation())
    (finding,) = run(reservations.check_reservations, fleet, with_reservations(world, client))
    assert finding.blocking and "the group's subnets reach use1-az6 (us-east-1a)" in finding.message


# --- vCPU quotas (moto has no EC2 service quotas: Stubber) ------------------------------------------------


def test_vcpu_demand_counts_running_warm_pools_and_skips_capacity_blocks(world: World) -> None:
    fleet = fleet_of(world)
    needs = {key: sum(d.vcpus for d in ds) for key, ds in quotas.demand(fleet).items()}
    assert needs == {
        ("P", CapacityType.ON_DEMAND): 384,
        ("G", CapacityType.ON_DEMAND): 116,
        ("P", CapacityType.SPOT): 96,
    }
    running = with_group(
        fleet,
        "h100",
        warm_pool=WarmPool(min_size=1, max_prepared_capacity=None, state="Running", reuse_on_scale_in=True),
    )
    assert sum(d.vcpus for d in quotas.demand(running)[("P", CapacityType.ON_DEMAND)]) == 3 * 192
    prepared = with_group(
        fleet, "h100", warm_pool=WarmPool(min_size=0, max_prepared_capacity=5, state="Running", reuse_on_scale_in=True)
    )
    assert quotas.running_instances(prepared.node_group("h100")) == 5


def test_vcpu_demand_of_karpenter_pools_is_their_last_capacity_type_at_their_largest_type(world: World) -> None:
    """A Karpenter pool that falls back to On-Demand may end with every node on the On-Demand quota (Karpenter moves
    on after a Spot quota error); [Reserved, Spot] puts the reserved instances on the On-Demand quota and the rest on
    Spot; a pool of several instance types counts its largest (g5.xlarge 4 vCPUs -> g5.8xlarge 32)."""
    fleet = fleet_of(world)
    fleet = with_group(fleet, "spot", provisioner="Karpenter", capacity_fallback=("Spot", "OnDemand"))
    fleet = with_group(
        fleet,
        "notebooks",
        provisioner="Karpenter",
        instance_types=("g5.xlarge", "g5.2xlarge", "g5.8xlarge"),
        capacity_fallback=("Reserved", "Spot"),
        warm_pool=None,  # a Karpenter pool has none (the fixture's notebooks keeps one Running)
        reservation=Reservation(id=None, resource_group_arn=None, open=False, tags={"k": "v"}, instance_count=1),
    )
    needs = {key: sum(d.vcpus for d in ds) for key, ds in quotas.demand(fleet).items()}
    assert needs == {
        ("P", CapacityType.ON_DEMAND): 384 + 96,  # h100 2 x 192, spot 1 x p4d.24xlarge now On-Demand at worst
        ("G", CapacityType.ON_DEMAND): 96 + 32,  # l40s 2 x 48, notebooks' 1 reserved g5.8xlarge
        ("G", CapacityType.SPOT): 3 * 32,  # notebooks' other 3 at g5.8xlarge
    }


def test_quotas_that_cover_the_fleet_pass(world: World) -> None:
    client, stub = quotas_client(dict(NEEDED))
    assert run(quotas.check_quotas, fleet_of(world), dataclasses.replace(ec2_only(world), service_quotas=client)) == []
    stub.assert_no_pending_responses()


def test_a_quota_below_the_fleet_at_max_size_is_blocking(world: World) -> None:
    client, _ = quotas_client({**NEEDED, P_ON_DEMAND: 192})
    (finding,) = run(quotas.check_quotas, fleet_of(world), dataclasses.replace(ec2_only(world), service_quotas=client))
    assert finding.blocking and finding.node_group == "h100"
    assert (
        "needs 384 vCPUs of 'Running On-Demand P instances' (L-417A185B) at maxSize (h100: 2 x p5.48xlarge = 384), the"
        " quota in us-east-1 is 192" in finding.message
    )
    assert "--quota-code L-417A185B --desired-value 384" in finding.hint


def test_a_spot_quota_is_checked_separately(world: World) -> None:
    client, _ = quotas_client({**NEEDED, P_SPOT: 0})
    (finding,) = run(quotas.check_quotas, fleet_of(world), dataclasses.replace(ec2_only(world), service_quotas=client))
    assert finding.blocking and "'All P Spot Instance Requests' (L-7212CCBC)" in finding.message


def test_unapplied_quota_falls_back_to_the_aws_default(world: World) -> None:
    client, stub = stubbed("service-quotas")
    fleet = only(fleet_of(world), "l40s")
    stub.add_client_error(
        "get_service_quota",
        "NoSuchResourceException",
        http_status_code=400,
        expected_params={"ServiceCode": "ec2", "QuotaCode": G_ON_DEMAND},
    )
    stub.add_response(
        "get_aws_default_service_quota",
        quota_response(G_ON_DEMAND, 96),
        {"ServiceCode": "ec2", "QuotaCode": G_ON_DEMAND},
    )
    assert run(quotas.check_quotas, fleet, dataclasses.replace(ec2_only(world), service_quotas=client)) == []
    stub.assert_no_pending_responses()


def test_a_renamed_quota_is_a_warning(world: World) -> None:
    client, stub = stubbed("service-quotas")
    stub.add_response("get_service_quota", quota_response(G_ON_DEMAND, 96, name="Running On-Demand G instances"))
    (finding,) = run(
        quotas.check_quotas, only(fleet_of(world), "l40s"), dataclasses.replace(ec2_only(world), service_quotas=client)
    )
    assert not finding.blocking and "quota L-DB2E81BA is named 'Running On-Demand G instances'" in finding.message


# --- AMI releases (moto has no EKS AMI parameters: Stubber) ------------------------------------------------


def test_ami_parameter_names(world: World) -> None:
    assert ami.parameter_names("AL2023_x86_64_NVIDIA", RELEASE, "1.33") == (AL2023_PARAM,)
    assert ami.parameter_names("AL2023_x86_64_STANDARD", RELEASE, "1.33") == (SYSTEM_PARAM,)
    assert ami.parameter_names("BOTTLEROCKET_x86_64_NVIDIA", "1.54.0-5043decc", "1.33") == (
        BOTTLEROCKET_PARAM,
        "/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.54.0/image_id",
    )
    assert ami.parameter_names("AL2023_ARM_64_NVIDIA", RELEASE, "1.33") == (
        "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.33-v20260714/release_version",
    )


def test_published_ami_releases_pass(world: World) -> None:
    client, stub = ssm_client([(SYSTEM_PARAM, RELEASE), (AL2023_PARAM, RELEASE), (BOTTLEROCKET_PARAM, AMI_ID)])
    assert run(ami.check_ami, fleet_of(world), dataclasses.replace(ec2_only(world), ssm=client)) == []
    stub.assert_no_pending_responses()  # one lookup per distinct parameter, the system nodes' included


def test_an_unpublished_ami_release_is_blocking(world: World) -> None:
    client, _ = ssm_client([(SYSTEM_PARAM, RELEASE), (AL2023_PARAM, None)])
    found = run(ami.check_ami, only(fleet_of(world), "h100", "spot"), dataclasses.replace(ec2_only(world), ssm=client))
    assert [f.node_group for f in found] == ["h100", "spot"] and all(f.blocking for f in found)
    assert (
        "AMI release 1.33.13-20260714 (AL2023_x86_64_NVIDIA) does not exist for Kubernetes 1.33 in us-east-1: no SSM"
        f" parameter {AL2023_PARAM}" in found[0].message
    )
    assert (
        "get-parameters-by-path --path /aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia"
        in found[0].hint
    )


def test_a_wrong_patch_version_names_an_existing_ami_but_is_blocking(world: World) -> None:
    # The AMI name carries only minor and date: 1.33.4-20260714 finds the v20260714 AMI, whose release is 1.33.13.
    fleet = with_group(only(fleet_of(world), "h100"), "h100", ami_release_version="1.33.4-20260714")
    client, _ = ssm_client([(SYSTEM_PARAM, RELEASE), (AL2023_PARAM, RELEASE)])
    (finding,) = run(ami.check_ami, fleet, dataclasses.replace(ec2_only(world), ssm=client))
    assert finding.blocking and finding.node_group == "h100"
    assert (
        finding.message
        == f"AMI release 1.33.4-20260714 (AL2023_x86_64_NVIDIA) is not what EKS publishes: {AL2023_PARAM} is"
        " 1.33.13-20260714"
    )
    assert finding.hint == 'pin releaseVersion: "1.33.13-20260714"'


def test_the_system_nodes_release_is_checked(world: World) -> None:
    client, _ = ssm_client([(SYSTEM_PARAM, None)])
    (finding,) = run(ami.check_ami, only(fleet_of(world)), dataclasses.replace(ec2_only(world), ssm=client))
    assert finding.blocking and finding.where == "cluster"
    assert (
        finding.message
        == "AMI release 1.33.13-20260714 (AL2023_x86_64_STANDARD) does not exist for Kubernetes 1.33 in us-east-1: no"
        f" SSM parameter {SYSTEM_PARAM}"
    )


def test_a_bottlerocket_release_is_found_by_its_version(world: World) -> None:
    bare = "/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.54.0/image_id"
    client, stub = ssm_client([(SYSTEM_PARAM, RELEASE), (BOTTLEROCKET_PARAM, None), (bare, AMI_ID)])
    assert (
        run(ami.check_ami, only(fleet_of(world), "notebooks"), dataclasses.replace(ec2_only(world), ssm=client)) == []
    )
    stub.assert_no_pending_responses()


def test_a_release_in_the_wrong_form_is_blocking(world: World) -> None:
    fleet = with_group(only(fleet_of(world), "h100"), "h100", ami_release_version="1.54.0-5043decc")
    client, _ = ssm_client([(SYSTEM_PARAM, RELEASE)])
    (finding,) = run(ami.check_ami, fleet, dataclasses.replace(ec2_only(world), ssm=client))
    assert finding.blocking and "is not a AL2023_x86_64_NVIDIA release" in finding.message


# --- API failures inside a run -------------------------------------------------------------------------------


def test_access_denied_is_a_finding_and_the_run_goes_on(world: World) -> None:
    clients, _ = all_clients(world)
    denied, stub = stubbed("ssm")
    stub.add_client_error(
        "get_parameter",
        "AccessDeniedException",
        "User is not authorized to perform: ssm:GetParameter",
        http_status_code=400,
    )
    found = preflight(fleet_of(world), dataclasses.replace(clients, ssm=denied))
    assert texts(found) == [
        "error aws: ssm:GetParameter failed: AccessDeniedException: User is not authorized to perform: ssm:GetParameter"
    ]
    assert found[0].hint == "allow ssm:GetParameter for the caller's IAM identity (preflight only reads)"


def test_an_unreachable_endpoint_stops_the_run_with_one_finding(world: World) -> None:
    from botocore.exceptions import EndpointConnectionError  # type: ignore[import-untyped,unused-ignore]

    ec2 = session().client("ec2")

    def unreachable(**_: Any) -> None:  # fails every call before a request is built, as a dead endpoint would
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9/")

    ec2.meta.events.register_first("before-call.ec2", unreachable)
    (finding,) = preflight(fleet_of(world), dataclasses.replace(ec2_only(world), ec2=ec2))
    assert finding.blocking and finding.where == "aws"
    assert finding.message.startswith(
        "ec2:DescribeInstanceTypes failed: EndpointConnectionError: Could not connect to the endpoint URL"
    )
    assert "AWS_ENDPOINT_URL" in finding.hint


# --- an existing cluster's node monitoring agent ----------------------------------------------------------------


def _existing(world: World) -> Fleet:
    fleet = fleet_of(world)
    return dataclasses.replace(fleet, cluster=dataclasses.replace(fleet.cluster, mode="Existing"))


def _agent(values: str | None, *, missing: bool = False) -> Clients:
    eks, stub = stubbed("eks")
    params = {"clusterName": "probe", "addonName": "eks-node-monitoring-agent"}
    if missing:
        stub.add_client_error("describe_addon", "ResourceNotFoundException", "No addon", 404, expected_params=params)
    else:
        addon: dict[str, Any] = {"addonName": "eks-node-monitoring-agent", "addonVersion": "v1.7.0-eksbuild.1"}
        if values is not None:
            addon["configurationValues"] = values
        stub.add_response("describe_addon", {"addon": addon}, params)
    return Clients(ec2=stubbed("ec2")[0], service_quotas=stubbed("service-quotas")[0], ssm=stubbed("ssm")[0], eks=eks)


@pytest.mark.parametrize(
    ("values", "warned"),
    [
        (None, False),  # the chart's default: dcgmAgent.tolerations [] keeps dcgm-server off tainted GPU nodes
        ('{"dcgmAgent":{"tolerations":[]}}', False),
        ('{"dcgmAgent":{"tolerations":[{"operator":"Exists"}]}}', True),  # tolerates every taint
        ("dcgmAgent:\n  tolerations:\n    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n", True),
        ('{"dcgmAgent":{"tolerations":[{"key":"nvidia.com/gpu","value":"true"}]}}', True),
        ('{"dcgmAgent":{"tolerations":[{"key":"nvidia.com/gpu","value":"false"}]}}', False),
        ('{"dcgmAgent":{"tolerations":[{"operator":"Exists","effect":"NoExecute"}]}}', False),
        ('{"dcgmAgent":{"tolerations":[{"key":"vpc.amazonaws.com/efa","operator":"Exists"}]}}', False),
    ],
)
def test_an_existing_agent_dcgm_server_on_gpu_nodes_collides_on_port_5555(
    world: World, values: str | None, warned: bool
) -> None:
    found = run(addons.check_node_monitoring_agent, _existing(world), _agent(values))
    assert [f.blocking for f in found] == ([False] if warned else [])
    if warned:
        assert found[0].where == "cluster"
        assert "runs its dcgm-server on GPU nodes" in found[0].message and "host port 5555" in found[0].message
        assert '--configuration-values \'{"dcgmAgent":{"tolerations":[]}}\'' in found[0].hint


def test_the_agent_check_reads_nothing_for_a_new_cluster_or_a_missing_add_on(world: World) -> None:
    # Mode Create: gpufleet writes dcgmAgent.tolerations [] itself; a stub with nothing queued fails if called.
    eks, _ = stubbed("eks")
    clients = Clients(ec2=world.ec2, service_quotas=stubbed("service-quotas")[0], ssm=stubbed("ssm")[0], eks=eks)
    assert run(addons.check_node_monitoring_agent, fleet_of(world), clients) == []
    assert run(addons.check_node_monitoring_agent, _existing(world), _agent(None, missing=True)) == []


# --- the EFA security group (issue 29 item 10) -------------------------------------------------------------------


def test_no_efa_security_group_yet_is_fine(world: World) -> None:
    assert run(network.check_efa_security_group, fleet_of(world), ec2_only(world)) == []


@pytest.mark.parametrize(
    ("ingress", "egress", "missing"),
    [(True, True, None), (False, True, "from"), (True, False, "to"), (False, False, "from or to")],
)
def test_an_efa_security_group_without_its_self_rules_is_blocking(
    world: World, ingress: bool, egress: bool, missing: str | None
) -> None:
    fleet = fleet_of(world)
    ec2 = world.ec2
    sg = ec2.create_security_group(GroupName="probe-efa-1", Description="EFA", VpcId=world.vpc)["GroupId"]
    try:
        ec2.create_tags(Resources=[sg], Tags=[{"Key": "Name", "Value": f"{fleet.name}-efa"}])
        everything = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": sg}]}]
        if ingress:
            ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=everything)
        # A new group allows all egress to 0.0.0.0/0, which does not cover SRD: it is revoked to test the self rule.
        ec2.revoke_security_group_egress(
            GroupId=sg, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
        )
        if egress:
            ec2.authorize_security_group_egress(GroupId=sg, IpPermissions=everything)
        found = run(network.check_efa_security_group, fleet, ec2_only(world))
        if missing is None:
            assert found == []
        else:
            (finding,) = found
            assert finding.blocking
            assert finding.message == (
                f"EFA security group {sg} (probe-efa) does not allow all traffic {missing} itself: EFA's SRD traffic"
                " between the nodes is dropped"
            )
    finally:
        ec2.delete_security_group(GroupId=sg)
