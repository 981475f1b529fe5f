"""The rules of gpufleet/rules/ami.py (AMIs) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.base.errors import format_path
from gpufleet.rules import cross_field
from gpufleet.spec.schema_errors import schema_issues
from tests.rules.fleets import BOTTLEROCKET, MINIMAL, OPERATOR, OPERATOR_GDRCOPY, Patch, at, build, found, group

SNAPSHOT = "snap-0123456789abcdef0"


def restored(init: dict[str, Any]) -> Patch:
    """A Bottlerocket group whose data volume is restored from a snapshot, initialized as `init` says."""
    return group(ami=BOTTLEROCKET, dataVolumeSnapshotId=SNAPSHOT, snapshotInitialization=init)


# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # dataVolumeSnapshotId: Bottlerocket's boot-time image cache
    pytest.param(
        "data-volume-snapshot",
        [group(ami=BOTTLEROCKET, dataVolumeSnapshotId="snap-0123456789abcdef0")],
        [],
        id="snapshot/bottlerocket",
    ),
    pytest.param(
        "data-volume-snapshot",
        [group(dataVolumeSnapshotId="snap-0123456789abcdef0")],
        [
            (
                "nodeGroups[0].dataVolumeSnapshotId",
                "dataVolumeSnapshotId is a Bottlerocket data volume's; AL2023_x86_64_NVIDIA keeps its images on the"
                " root volume and pulls the group's images at boot from its user data",
            )
        ],
        id="snapshot/al2023",
    ),
    pytest.param(
        "data-volume-snapshot",
        [
            group(
                ami=BOTTLEROCKET,
                instanceType="g6.2xlarge",
                localStorage="RAID0",
                dataVolumeSnapshotId="snap-0123456789abcdef0",
            )
        ],
        [
            (
                "nodeGroups[0].dataVolumeSnapshotId",
                "with localStorage RAID0 Bottlerocket bind-mounts the instance-store array over /var/lib/containerd"
                " (apiclient ephemeral-storage bind), hiding the images the snapshot put on the data volume",
            )
        ],
        id="snapshot/raid0",
    ),
    # snapshotInitialization: how the restored data volume gets the snapshot's blocks
    pytest.param(
        "snapshot-initialization",
        [restored({"mode": "ProvisionedRate", "volumeInitializationRate": 300})],
        [],
        id="init/provisioned-rate",
    ),
    pytest.param(
        "snapshot-initialization",
        [restored({"mode": "FastSnapshotRestore", "availabilityZones": ["us-east-1a"]})],
        [],
        id="init/fast-snapshot-restore",
    ),
    pytest.param(
        "snapshot-initialization",
        [group(snapshotInitialization={"mode": "Default"})],
        [
            (
                "nodeGroups[0].snapshotInitialization",
                "snapshotInitialization initializes a Bottlerocket data volume restored from dataVolumeSnapshotId;"
                " AL2023_x86_64_NVIDIA creates its volumes empty, which need no initialization",
            )
        ],
        id="init/al2023",
    ),
    pytest.param(
        "snapshot-initialization",
        [group(ami=BOTTLEROCKET, snapshotInitialization={"mode": "ProvisionedRate", "volumeInitializationRate": 200})],
        [
            (
                "nodeGroups[0].snapshotInitialization",
                "snapshotInitialization says how a volume restored from a snapshot is initialized, but this group"
                " restores none: without dataVolumeSnapshotId its data volume is created empty",
            )
        ],
        id="init/without-snapshot",
    ),
    pytest.param(
        "snapshot-initialization",
        [restored({"mode": "ProvisionedRate"})],
        [
            (
                "nodeGroups[0].snapshotInitialization.mode",
                "mode ProvisionedRate needs volumeInitializationRate: the rate, 100 to 300 MiB/s, at which EBS"
                " downloads the snapshot's blocks to the new volume",
            )
        ],
        id="init/provisioned-rate-without-rate",
    ),
    pytest.param(
        "snapshot-initialization",
        [
            restored(
                {
                    "mode": "FastSnapshotRestore",
                    "availabilityZones": ["us-east-1a"],
                    "volumeInitializationRate": 300,
                }
            )
        ],
        [
            (
                "nodeGroups[0].snapshotInitialization.volumeInitializationRate",
                "volumeInitializationRate is mode ProvisionedRate's; a rate on a volume whose snapshot has fast"
                " snapshot restore overrides it: EBS initializes the volume at that rate instead",
            )
        ],
        id="init/rate-with-fsr",
    ),
    pytest.param(
        "snapshot-initialization",
        [restored({"mode": "Default", "volumeInitializationRate": 300})],
        [
            (
                "nodeGroups[0].snapshotInitialization.volumeInitializationRate",
                "volumeInitializationRate is mode ProvisionedRate's; mode Default loads the blocks lazily from S3 on"
                " first read",
            )
        ],
        id="init/rate-with-default",
    ),
    pytest.param(
        "snapshot-initialization",
        [restored({"mode": "FastSnapshotRestore"})],
        [
            (
                "nodeGroups[0].snapshotInitialization.mode",
                "mode FastSnapshotRestore needs availabilityZones: fast snapshot restore is enabled per Availability"
                " Zone, in the zones of the group's subnets, which gpufleet cannot read offline",
            )
        ],
        id="init/fsr-without-zones",
    ),
    pytest.param(
        "snapshot-initialization",
        [
            restored(
                {
                    "mode": "ProvisionedRate",
                    "volumeInitializationRate": 300,
                    "availabilityZones": ["us-east-1a"],
                }
            )
        ],
        [
            (
                "nodeGroups[0].snapshotInitialization.availabilityZones",
                "availabilityZones is mode FastSnapshotRestore's; mode ProvisionedRate enables nothing per zone",
            )
        ],
        id="init/zones-with-provisioned-rate",
    ),
    pytest.param(
        "snapshot-initialization",
        [restored({"mode": "FastSnapshotRestore", "availabilityZones": ["us-west-2a"]})],
        [
            (
                "nodeGroups[0].snapshotInitialization.availabilityZones[0]",
                "us-west-2a is not a zone of the cluster's region us-east-1",
            )
        ],
        id="init/zone-of-another-region",
    ),
    # ami
    pytest.param(
        "ami",
        [group(instanceType="g5g.xlarge", ami={"type": "AL2023_ARM_64_NVIDIA", "releaseVersion": "1.33.13-20260714"})],
        [],
        id="ami/arm",
    ),
    pytest.param(
        "ami",
        [group(instanceType="g5g.xlarge")],
        [("nodeGroups[0].ami.type", "AL2023_x86_64_NVIDIA is an x86_64 AMI, but g5g.xlarge is arm64")],
        id="ami/x86-on-arm",
    ),
    pytest.param(
        "ami",
        [group(ami={"type": "AL2023_ARM_64_NVIDIA", "releaseVersion": "1.33.13-20260714"})],
        [("nodeGroups[0].ami.type", "AL2023_ARM_64_NVIDIA is an arm64 AMI, but g6.xlarge is x86_64")],
        id="ami/arm-on-x86",
    ),
    pytest.param(
        "ami",
        [group(ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.32.13-20260714"})],
        [
            (
                "nodeGroups[0].ami.releaseVersion",
                "AMI release 1.32.13-20260714 is for Kubernetes 1.32, but the cluster runs 1.33",
            )
        ],
        id="ami/release-other-kubernetes",
    ),
    pytest.param(
        "ami",
        [group(ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.3.4-20260724"})],
        [
            (
                "nodeGroups[0].ami.releaseVersion",
                "AMI release 1.3.4-20260724 is for Kubernetes 1.3, but the cluster runs 1.33",
            )
        ],
        id="ami/release-prefix-is-not-enough",
    ),
    # 1.33.4-20260724 is the kind of release that was never published (v20260724 is not in the CHANGELOG).
    pytest.param(
        "ami",
        [group(ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.4-20260724"})],
        [
            (
                "nodeGroups[0].ami.releaseVersion",
                (
                    "AMI release 1.33.4-20260724 is not among the published AL2023_x86_64_NVIDIA releases for"
                    " Kubernetes 1.33 known to gpufleet (awslabs/amazon-eks-ami CHANGELOG as of 2026-07-23); the newest"
                    " known is 1.33.13-20260714"
                ),
            )
        ],
        id="ami/release-unknown",
    ),
    pytest.param(
        "ami",
        [group(ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"})],
        [("nodeGroups[0].ami.releaseVersion", "1.33.13-20260714 is not a Bottlerocket release")],
        id="ami/bottlerocket-form",
    ),
    pytest.param(
        "ami",
        [group(ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"})],
        [],
        id="ami/bottlerocket-release",
    ),
    # driver-source-matches-ami
    pytest.param("driver-source-matches-ami", [], [], id="driver/preinstalled-nvidia-ami"),
    pytest.param(
        "driver-source-matches-ami",
        [OPERATOR, group(ami={"type": "AL2023_x86_64_STANDARD", "releaseVersion": "1.33.13-20260714"})],
        [],
        id="driver/operator-standard-ami",
    ),
    pytest.param(
        "driver-source-matches-ami",
        [OPERATOR],
        [
            (
                "nodeGroups[0].ami.type",
                "AL2023_x86_64_NVIDIA ships its own NVIDIA driver, but versions.driver.source is Operator",
            )
        ],
        id="driver/operator-nvidia-ami",
    ),
    pytest.param(
        "driver-source-matches-ami",
        [OPERATOR_GDRCOPY, group(ami={"type": "AL2023_x86_64_STANDARD", "releaseVersion": "1.33.13-20260714"})],
        [],
        id="driver/gdrcopy-with-the-operators-driver",
    ),
    pytest.param(
        "driver-source-matches-ami",
        [at("versions", "driver", value={"source": "Preinstalled", "gdrCopy": "Disabled"})],
        [],
        id="driver/gdrcopy-disabled-with-preinstalled",
    ),
    pytest.param(
        "driver-source-matches-ami",
        [at("versions", "driver", value={"source": "Preinstalled", "gdrCopy": "Enabled"})],
        [
            (
                "versions.driver.gdrCopy",
                (
                    "GPU Operator v26.7.0 loads gdrdrv only beside the driver it installs, and with source Preinstalled"
                    " it installs none (the EKS NVIDIA AMI ships no gdrdrv)"
                ),
            )
        ],
        id="driver/gdrcopy-with-preinstalled",
    ),
    pytest.param(
        "driver-source-matches-ami",
        [group(ami={"type": "AL2023_x86_64_STANDARD", "releaseVersion": "1.33.13-20260714"})],
        [
            (
                "nodeGroups[0].ami.type",
                "AL2023_x86_64_STANDARD has no NVIDIA driver, but versions.driver.source is Preinstalled",
            )
        ],
        id="driver/preinstalled-standard-ami",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected


def test_an_unknown_release_is_a_warning_and_a_wrong_minor_an_error() -> None:
    unknown = cross_field.check(build(group(ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.4-20260724"})))
    assert [(i.severity, i.hint) for i in unknown] == [
        (
            "warning",
            "EKS rejects a release it does not know: check it with `gpufleet preflight`, or pin a published one",
        )
    ]
    other = cross_field.check(build(group(ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.32.13-20260714"})))
    assert [(i.severity, i.hint) for i in other] == [
        ("error", "use a 1.33 release of AL2023_x86_64_NVIDIA; the newest known is 1.33.13-20260714")
    ]


@pytest.mark.parametrize(("rate", "message"), [(50, "50 must be at least 100"), (400, "400 must be at most 300")])
def test_a_volume_initialization_rate_outside_ec2s_range_is_refused(rate: int, message: str) -> None:
    """EC2's Provisioned Rate for Volume Initialization is 100 to 300 MiB/s (EC2 API reference,
    LaunchTemplateEbsBlockDeviceRequest VolumeInitializationRate; the pinned EC2NodeClass CRD has the same bounds):
    the schema holds the range."""
    data = copy.deepcopy(MINIMAL)
    restored({"mode": "ProvisionedRate", "volumeInitializationRate": rate})(data)
    assert [(format_path(i.path), i.message) for i in schema_issues(data, {})] == [
        ("nodeGroups[0].snapshotInitialization.volumeInitializationRate", message)
    ]
