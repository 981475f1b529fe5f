"""The GPU instance catalog against the EC2 data moto ships (DescribeInstanceTypes), and its own invariants.

No credentials or network: moto answers in-process and the AWS environment is faked per test module.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from gpufleet.facts.catalog import CATALOG, InstanceType, gpu_instance_names, local_nvme_devices, lookup

boto3 = pytest.importorskip("boto3")
moto = pytest.importorskip("moto")
ClientError = pytest.importorskip("botocore.exceptions").ClientError

NAMES = gpu_instance_names()

REQUIRED_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "g4dn", "g5", "g6", "g6e")

# NVIDIA Multi-Instance GPU support by GPU model (EC2 GpuInfo name). Every model in the catalog must be
# classified here, so a new GPU cannot slip in without someone deciding its MIG capability.
MIG_CAPABLE_BY_MODEL: Mapping[str, bool] = {
    "A100": True,
    "A30": True,
    "H100": True,
    "H200": True,
    "B200": True,
    "B300": True,
    "A10G": False,
    "T4": False,
    "T4g": False,
    "L4": False,
    "L40S": False,
    "V100": False,
}

_BATCH = 100  # DescribeInstanceTypes accepts at most 100 names per call
_PERFORMANCE = re.compile(r"(?:Up to )?(?:(?P<cards>\d+)x )?(?P<gbps>\d+) Gigabit")
_MIG_PROFILE = re.compile(r"(?P<slices>[1-7])g\.(?P<gb>\d+)gb")


def _parse_network_gbps(performance: str) -> int:
    """EC2 NetworkPerformance -> Gbps: "3200 Gigabit" 3200, "Up to 25 Gigabit" 25, "4x 100 Gigabit" 400."""
    match = _PERFORMANCE.fullmatch(performance)
    assert match, f"unexpected NetworkPerformance {performance!r}"
    return int(match["cards"] or 1) * int(match["gbps"])


def _describe(client: Any, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """DescribeInstanceTypes for names, in batches; a name moto does not know is left out."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(names), _BATCH):
        batch = list(names[start : start + _BATCH])
        try:
            answers = client.describe_instance_types(InstanceTypes=batch)["InstanceTypes"]
        except ClientError as error:
            if error.response["Error"]["Code"] != "InvalidInstanceType":
                raise
            answers = []
            for name in batch:  # find which ones moto lacks
                try:
                    answers += client.describe_instance_types(InstanceTypes=[name])["InstanceTypes"]
                except ClientError as one:
                    if one.response["Error"]["Code"] != "InvalidInstanceType":
                        raise
        found.update({answer["InstanceType"]: answer for answer in answers})
    return found


@pytest.fixture(scope="module")
def ec2_types() -> Iterator[dict[str, dict[str, Any]]]:
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SECURITY_TOKEN": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            patch.setenv(key, value)
        for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"):
            patch.delenv(key, raising=False)
        with moto.mock_aws():
            client = boto3.client("ec2", region_name="us-east-1")
            yield _describe(client, NAMES)


def _as_ec2_reports(ec2: Mapping[str, Any]) -> dict[str, object]:
    gpus = ec2["GpuInfo"]["Gpus"]
    assert len(gpus) == 1, f"{ec2['InstanceType']}: expected one GPU kind, EC2 reports {gpus}"
    gpu = gpus[0]
    network = ec2["NetworkInfo"]
    architectures = ec2["ProcessorInfo"]["SupportedArchitectures"]
    assert len(architectures) == 1, f"{ec2['InstanceType']}: several architectures {architectures}"
    storage = ec2.get("InstanceStorageInfo")
    return {
        "gpu_model": gpu["Name"],
        "gpu_manufacturer": gpu["Manufacturer"],
        "gpu_count": gpu["Count"],
        "gpu_memory_mib": gpu["MemoryInfo"]["SizeInMiB"],
        "vcpus": ec2["VCpuInfo"]["DefaultVCpus"],
        "memory_mib": ec2["MemoryInfo"]["SizeInMiB"],
        "architecture": architectures[0],
        "efa_supported": network["EfaSupported"],
        "max_efa_interfaces": network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0),
        "network_cards": network["MaximumNetworkCards"],
        "network_gbps": _parse_network_gbps(network["NetworkPerformance"]),
        "local_nvme_gib": storage["TotalSizeInGB"] if storage else 0,
    }


@pytest.mark.parametrize("name", NAMES)
def test_entry_matches_ec2(name: str, ec2_types: dict[str, dict[str, Any]]) -> None:
    if name not in ec2_types:
        pytest.skip(f"moto {moto.__version__} has no EC2 data for {name}: catalog entry kept, unverified")
    entry = CATALOG[name]
    reported = _as_ec2_reports(ec2_types[name])
    ours = {field: getattr(entry, field) for field in reported}
    assert ours == reported
    storage = ec2_types[name].get("InstanceStorageInfo")
    # RAID0's width, for the array's write bandwidth: one disk kind per type, its count.
    assert local_nvme_devices(name) == (storage["Disks"][0]["Count"] if storage else 0)
    if storage:
        assert len(storage["Disks"]) == 1
        assert storage["NvmeSupport"] in ("required", "supported"), f"{name}: instance store is not NVMe"


def test_required_families_present() -> None:
    families = {entry.family for entry in CATALOG.values()}
    assert set(REQUIRED_FAMILIES) <= families, sorted(set(REQUIRED_FAMILIES) - families)
    assert {"g5g", "p6-b300"} <= families


@pytest.mark.parametrize("name", NAMES)
def test_entry_invariants(name: str) -> None:
    entry = CATALOG[name]
    assert entry.name == name
    assert entry.family == name.split(".", 1)[0]
    assert entry.gpu_count >= 1 and entry.gpu_memory_mib > 0
    assert entry.efa_supported == (entry.max_efa_interfaces > 0)
    assert entry.network_cards >= 1 and entry.network_gbps > 0 and entry.local_nvme_gib >= 0
    assert entry.architecture in ("x86_64", "arm64")
    assert re.fullmatch(r"(NVIDIA|Tesla)-[A-Za-z0-9-]+", entry.gfd_product), entry.gfd_product


@pytest.mark.parametrize("name", NAMES)
def test_mig_capability_by_gpu_model(name: str) -> None:
    entry = CATALOG[name]
    assert entry.gpu_model in MIG_CAPABLE_BY_MODEL, f"classify {entry.gpu_model} in MIG_CAPABLE_BY_MODEL"
    assert entry.mig_capable is MIG_CAPABLE_BY_MODEL[entry.gpu_model]
    assert (entry.mig_profiles == ()) is (not entry.mig_capable)


@pytest.mark.parametrize("name", [n for n in NAMES if CATALOG[n].mig_capable])
def test_mig_profiles_fit_the_gpu(name: str) -> None:
    entry = CATALOG[name]
    profiles = [_MIG_PROFILE.fullmatch(profile) for profile in entry.mig_profiles]
    assert all(profiles), entry.mig_profiles
    assert len(set(entry.mig_profiles)) == len(entry.mig_profiles)
    whole = [match for match in profiles if match and match["slices"] == "7"]
    assert len(whole) == 1, f"{name}: exactly one whole-GPU (7g) profile expected"
    # The whole-GPU profile's size is the GPU's memory in GiB, rounded as NVIDIA names it.
    assert abs(int(whole[0]["gb"]) - entry.gpu_memory_mib / 1024) < 1.5
    assert all(match and int(match["gb"]) <= int(whole[0]["gb"]) for match in profiles)


def test_same_board_same_mig_profiles() -> None:
    boards: dict[tuple[str, int], InstanceType] = {}
    for entry in CATALOG.values():
        first = boards.setdefault((entry.gpu_model, entry.gpu_memory_mib), entry)
        assert (entry.mig_profiles, entry.gfd_product) == (first.mig_profiles, first.gfd_product)


def test_known_values() -> None:
    p4d, p4de, p5 = CATALOG["p4d.24xlarge"], CATALOG["p4de.24xlarge"], CATALOG["p5.48xlarge"]
    assert p4d.mig_profiles[0] == "1g.5gb" and p4de.mig_profiles[0] == "1g.10gb"
    assert p5.network_gbps == 3200 and p4d.network_gbps == 400
    assert p5.gfd_product == "NVIDIA-H100-80GB-HBM3"
    assert CATALOG["g5g.xlarge"].architecture == "arm64"


def test_lookup() -> None:
    assert lookup("p5.48xlarge") is CATALOG["p5.48xlarge"]
    assert lookup("m5.large") is None
    assert lookup("") is None
    assert lookup("P5.48XLARGE") is None


def test_names_sorted_and_catalog_read_only() -> None:
    assert tuple(sorted(CATALOG)) == NAMES and len(NAMES) == len(set(NAMES))
    assert isinstance(CATALOG, types.MappingProxyType)
    with pytest.raises(TypeError):
        CATALOG["x.large"] = CATALOG["p5.48xlarge"]  # type: ignore[index]
