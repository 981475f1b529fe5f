"""Shared helpers for the preflight tests: a fake AWS environment, a moto world, the fleet spec, and
botocore Stubber clients for what moto does not implement (EC2 service quotas, EKS AMI SSM parameters,
DescribeCapacityReservations).

No test needs credentials or the network: moto answers EC2 in-process, Stubber answers the rest before any
request is sent, and the environment is scrubbed of profiles, config files, endpoints and instance metadata.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
moto = pytest.importorskip("moto")
Stubber = pytest.importorskip("botocore.stub").Stubber

from gpufleet.preflight.clients import Clients  # noqa: E402
from gpufleet.preflight.quotas import QUOTAS  # noqa: E402
from gpufleet.rules.pipeline import load_fleet_text  # noqa: E402
from gpufleet.spec.fleet import CapacityType, Fleet, NodeGroup  # noqa: E402

REGION = "us-east-1"
RESERVATION = "cr-0123456789abcdef0"
RELEASE = "1.33.13-20260714"
AMI_ID = "ami-0123456789abcdef0"
AL2023_PARAM = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260714/release_version"
SYSTEM_PARAM = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20260714/release_version"
BOTTLEROCKET_PARAM = "/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.54.0-5043decc/image_id"
QUOTA_CODE = {key: quota.code for key, quota in QUOTAS.items()}
P_ON_DEMAND = QUOTA_CODE[("P", CapacityType.ON_DEMAND)]
G_ON_DEMAND = QUOTA_CODE[("G", CapacityType.ON_DEMAND)]
P_SPOT = QUOTA_CODE[("P", CapacityType.SPOT)]
# What the fixture fleet needs at maxSize (see SPEC): h100 2 x 192 (its warm pool is Stopped); l40s 2 x 48
# plus notebooks (4 + 1 Running warm) x 4; spot 1 x 96; the Capacity Block group draws on no quota.
NEEDED = {P_ON_DEMAND: 384, G_ON_DEMAND: 116, P_SPOT: 96}

_SCRUBBED = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_EC2",
    "AWS_ENDPOINT_URL_SSM",
    "AWS_ENDPOINT_URL_SERVICE_QUOTAS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


def scrub_aws_env(mp: pytest.MonkeyPatch, tmp: str, *, credentials: bool) -> None:
    """No profile, config file, endpoint override or instance metadata; fake keys when `credentials`."""
    for name in _SCRUBBED:
        mp.delenv(name, raising=False)
    mp.setenv("AWS_CONFIG_FILE", f"{tmp}/no-config")
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp}/no-credentials")
    mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
    mp.setenv("AWS_DEFAULT_REGION", REGION)
    if credentials:
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    else:
        mp.delenv("AWS_ACCESS_KEY_ID", raising=False)
        mp.delenv("AWS_SECRET_ACCESS_KEY", raising=False)


@dataclasses.dataclass(frozen=True, eq=False)
class World:
    """The VPCs and subnets moto holds for the fixture fleet."""

    ec2: Any  # a moto-backed EC2 client
    vpc: str
    subnet: dict[str, str]  # zone ID -> a subnet of `vpc` in it ("use1-az4b": a second one in use1-az4)
    foreign_subnet: str  # a subnet of another VPC, in use1-az4


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with pytest.MonkeyPatch.context() as mp:
        scrub_aws_env(mp, str(tmp_path_factory.mktemp("aws")), credentials=True)
        # Preflight never reads AMIs from EC2 (release versions come from SSM): skip moto's default AMI
        # catalogue, which each new EC2 backend (one per module) otherwise builds at a cost of about a second.
        mp.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
        with moto.mock_aws():
            ec2 = session().client("ec2")
            vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
            other = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
            subnet = {}
            for i, zone in enumerate(("use1-az4", "use1-az6", "use1-az3", "use1-az4b")):
                made = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZoneId=zone[:8])
                subnet[zone] = made["Subnet"]["SubnetId"]
            foreign = ec2.create_subnet(VpcId=other, CidrBlock="10.1.0.0/24", AvailabilityZoneId="use1-az4")["Subnet"][
                "SubnetId"
            ]
            yield World(ec2=ec2, vpc=vpc, subnet=subnet, foreign_subnet=foreign)


SPEC = """\
apiVersion: gpufleet/v1alpha1
kind: Fleet
metadata: {{name: probe}}
cluster:
  mode: Create
  name: probe
  region: us-east-1
  kubernetesVersion: "1.33"
  admins:
    - principalArn: arn:aws:iam::111122223333:role/platform-admin
  network: {{vpcId: {vpc}, subnetIds: [{cluster_subnets}]}}
  systemNodes: {{releaseVersion: "1.33.13-20260714"}}
versions:
  gpuOperator: {{chart: v26.7.0}}
  clusterAutoscaler: {{chart: 9.59.0}}
  kueue: {{chart: 0.19.2}}
  efaDevicePlugin: {{chart: v0.5.30}}
nodeGroups:
  - name: h100
    instanceType: p5.48xlarge
    workloadClass: Training
    ami: {{type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}}
    scaling: {{minSize: 0, maxSize: 2}}
    warmPool: {{minSize: 1, state: Stopped}}
    zone: use1-az4
    subnetIds: [{az4}]
    fabric: EFA
  - name: cb
    instanceType: p5.48xlarge
    workloadClass: Training
    ami: {{type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}}
    capacity: {{type: CapacityBlock, reservationId: {reservation}}}
    scaling: {{minSize: 0, maxSize: 2}}
    zone: use1-az4
    subnetIds: [{az4}]
  - name: l40s
    instanceType: g6e.12xlarge
    workloadClass: Inference
    ami: {{type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}}
    scaling: {{minSize: 0, maxSize: 2}}
  - name: notebooks
    instanceType: g5.xlarge
    workloadClass: Interactive
    ami: {{type: BOTTLEROCKET_x86_64_NVIDIA, releaseVersion: "1.54.0-5043decc"}}
    scaling: {{minSize: 0, maxSize: 4}}
    warmPool: {{minSize: 1, state: Running}}
    sharing: {{strategy: TimeSlicing, replicas: 4, acknowledgeNoIsolation: true}}
  - name: spot
    instanceType: p4d.24xlarge
    workloadClass: Batch
    ami: {{type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}}
    capacity: {{type: Spot}}
    scaling: {{minSize: 0, maxSize: 1}}
cost:
  gpuHourUsd: {{h100: 6.88}}
environments:
  dev: {{rollout: {{through: foundation}}}}
"""


def spec_text(world: World, cluster_subnets: tuple[str, ...] = ("use1-az4", "use1-az6")) -> str:
    return SPEC.format(
        vpc=world.vpc,
        cluster_subnets=", ".join(world.subnet[z] for z in cluster_subnets),
        az4=world.subnet["use1-az4"],
        reservation=RESERVATION,
    )


@functools.cache
def fleet_of(world: World, cluster_subnets: tuple[str, ...] = ("use1-az4", "use1-az6")) -> Fleet:
    return load_fleet_text(spec_text(world, cluster_subnets), "fleet.yaml", "dev").environments["dev"]


def with_group(fleet: Fleet, name: str, **changes: Any) -> Fleet:
    """The fleet with one node group changed, bypassing the spec rules (preflight must not rely on them)."""
    groups = tuple(dataclasses.replace(g, **changes) if g.name == name else g for g in fleet.node_groups)
    return dataclasses.replace(fleet, node_groups=groups)


def only(fleet: Fleet, *names: str) -> Fleet:
    return dataclasses.replace(fleet, node_groups=tuple(g for g in fleet.node_groups if g.name in names))


def group(fleet: Fleet, name: str) -> NodeGroup:
    return fleet.node_group(name)


# --- Stubber-backed clients -------------------------------------------------------------------------------


@functools.cache
def session() -> Any:
    """One boto3 session for every test client: service models load once (the EC2 one takes a while)."""
    return boto3.session.Session(region_name=REGION)


# Building a client builds its class, one method per operation (EC2 has hundreds): a quarter of this directory's
# CPU when every test built its own. So a test borrows idle clients, each with a new Stubber of its own, and
# `return_stubbed_clients` (run after every test by conftest) deactivates those Stubbers and puts the clients
# back. A Stubber is the only state a borrowed client carries; two borrowed in one test are never the same.
_IDLE: dict[str, list[Any]] = {}  # service -> clients no test holds
_LENT: list[tuple[str, Any, Any]] = []  # (service, client, its Stubber) borrowed by the running test


def stubbed(service: str) -> tuple[Any, Any]:
    """A client of `service` answered only by a new active Stubber: a call nothing was queued for fails."""
    idle = _IDLE.setdefault(service, [])
    client = idle.pop() if idle else session().client(service)
    stub = Stubber(client)
    stub.activate()
    _LENT.append((service, client, stub))
    return client, stub


def return_stubbed_clients() -> None:
    while _LENT:
        service, client, stub = _LENT.pop()
        stub.deactivate()
        _IDLE[service].append(client)


def quota_response(code: str, value: float, name: str | None = None) -> dict[str, Any]:
    default = next(q.name for q in QUOTAS.values() if q.code == code)
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": name or default, "Value": value}}


def quotas_client(values: dict[str, float]) -> tuple[Any, Any]:
    """Service Quotas answering GetServiceQuota for `values`, in the order the check asks (sorted keys)."""
    client, stub = stubbed("service-quotas")
    for code in sorted(values, key=lambda c: next(k for k, v in QUOTA_CODE.items() if v == c)):
        stub.add_response(
            "get_service_quota", quota_response(code, values[code]), {"ServiceCode": "ec2", "QuotaCode": code}
        )
    return client, stub


def ssm_client(answers: list[tuple[str, str | None]]) -> tuple[Any, Any]:
    """SSM answering GetParameter for each (name, value) in order; a value of None is ParameterNotFound."""
    client, stub = stubbed("ssm")
    for name, value in answers:
        if value is not None:
            stub.add_response(
                "get_parameter",
                {"Parameter": {"Name": name, "Type": "String", "Value": value, "Version": 1}},
                {"Name": name},
            )
        else:
            stub.add_client_error(
                "get_parameter", "ParameterNotFound", http_status_code=400, expected_params={"Name": name}
            )
    return client, stub


def reservation(**changes: Any) -> dict[str, Any]:
    """A Capacity Block that fits the fixture's `cb` group, with `changes` applied."""
    start = dt.datetime(2026, 8, 1, 11, 30, tzinfo=dt.UTC)
    found = {
        "CapacityReservationId": RESERVATION,
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1d",
        "AvailabilityZoneId": "use1-az4",
        "Tenancy": "default",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "State": "active",
        "StartDate": start,
        "EndDate": start + dt.timedelta(days=7),
        "InstanceMatchCriteria": "targeted",
        "ReservationType": "capacity-block",
    }
    found.update(changes)
    return found


def reservations_client(*found: dict[str, Any], error: str | None = None) -> tuple[Any, Any]:
    client, stub = stubbed("ec2")
    params = {"CapacityReservationIds": [RESERVATION]}
    if error is not None:
        stub.add_client_error("describe_capacity_reservations", error, http_status_code=400, expected_params=params)
    else:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": list(found)}, params)
    return client, stub


# The fixture fleet's admin as sts:GetCallerIdentity names a session of that role.
ADMIN_SESSION = "arn:aws:sts::111122223333:assumed-role/platform-admin/preflight"


def sts_client(arn: str = ADMIN_SESSION) -> tuple[Any, Any]:
    client, stub = stubbed("sts")
    stub.add_response(
        "get_caller_identity", {"UserId": "AROAEXAMPLE:preflight", "Account": arn.split(":")[4], "Arn": arn}
    )
    return client, stub


def eks_client(answers: Sequence[tuple[str, str, list[str], str | None]] = ()) -> tuple[Any, Any]:
    """EKS answering DescribeAddonVersions for each (add-on, Kubernetes version, versions offered, default) in order."""
    client, stub = stubbed("eks")
    for name, k8s, versions, default in answers:
        offered = [
            {
                "addonVersion": v,
                "architecture": ["amd64", "arm64"],
                "compatibilities": [{"clusterVersion": k8s, "platformVersions": ["*"], "defaultVersion": v == default}],
            }
            for v in versions
        ]
        stub.add_response(
            "describe_addon_versions",
            {"addons": [{"addonName": name, "type": "networking", "addonVersions": offered}]},
            {"addonName": name, "kubernetesVersion": k8s},
        )
    return client, stub


def all_clients(
    world: World,
    quotas: dict[str, float] | None = None,
    ssm: list[tuple[str, str | None]] | None = None,
    reservations: tuple[dict[str, Any], ...] | None = None,
    caller: str = ADMIN_SESSION,
) -> tuple[Clients, list[Any]]:
    """Clients for a whole preflight run of the fixture fleet: moto EC2 plus stubs that pass by default."""
    sq, sq_stub = quotas_client(quotas if quotas is not None else dict(NEEDED))
    ssm_c, ssm_stub = ssm_client(
        ssm if ssm is not None else [(SYSTEM_PARAM, RELEASE), (AL2023_PARAM, RELEASE), (BOTTLEROCKET_PARAM, AMI_ID)]
    )
    res, res_stub = reservations_client(*(reservations if reservations is not None else (reservation(),)))
    eks, eks_stub = eks_client()
    sts, sts_stub = sts_client(caller)
    clients = Clients(ec2=world.ec2, service_quotas=sq, ssm=ssm_c, reservations=res, eks=eks, sts=sts)
    return clients, [sq_stub, ssm_stub, res_stub, eks_stub, sts_stub]
