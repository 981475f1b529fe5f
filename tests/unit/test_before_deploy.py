"""plan.md's "Before you deploy" (issue 35 item 5): what must exist or be done by hand, derived from the spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.before_deploy import before_you_deploy
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet, load_fleet_text

ROOT = Path(__file__).resolve().parents[2]
MINIMAL: dict[str, Any] = yaml.safe_load((ROOT / "tests" / "specs" / "valid" / "minimal.yaml").read_text())


def _items(change: dict[str, Any] | None = None, group: dict[str, Any] | None = None) -> list[str]:
    spec = yaml.safe_load(yaml.safe_dump(MINIMAL))
    spec["cluster"].update(change or {})
    spec["nodeGroups"][0].update(group or {})
    if spec["cluster"].get("mode") == "Existing":
        del spec["cluster"]["systemNodes"]
    fleet = load_fleet_text(yaml.safe_dump(spec)).environments["dev"]
    return before_you_deploy(build_plan(fleet, "dev"))


def test_the_example_lists_network_admins_addons_and_the_efa_subnet() -> None:
    plan = build_plan(load_fleet(str(ROOT / "fleet.yaml"), "prod").environments["prod"], "prod")
    items = before_you_deploy(plan)
    assert items[0].startswith("AWS credentials for us-east-1, the `aws` CLI on the PATH")
    assert "`gpufleet preflight --env prod` passing" in items[0]
    assert items[1].startswith("VPC `vpc-0a1b2c3d4e5f60789` with subnets `subnet-0a1b2c3d4e5f60001`")
    assert "`arn:aws:iam::111122223333:role/gpufleet-deploy`" in items[2]
    assert "podIdentityAgent `v1.3.8-eksbuild.2`" in items[3] and "Kubernetes 1.35" in items[3]
    assert items[4] == "Node group `h100`: subnet(s) `subnet-0a1b2c3d4e5f60001` in zone `use1-az4` exist in the VPC."
    # then the privileged images pinned by tag only (tests/unit/test_privileged_images.py), then the checkpoint
    # bucket the storage stage creates and Mountpoint mounts
    assert [i.split("`", 2)[1] for i in items[5:]] == [
        "python:3.13.5-slim-bookworm",
        "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
        "research-checkpoints-0a1b2c",
    ]
    assert items[-1] == (
        "S3 bucket `research-checkpoints-0a1b2c` (checkpoints.bucket) is created by the storage stage: the name must"
        " not be taken in any account (S3 bucket names are global); Mountpoint mounts each team's prefix of it."
    )
    page = plan_markdown(plan)
    assert "## Before you deploy\n\n- [ ] AWS credentials" in page and page.index("## Before") < page.index(
        "## Versions"
    )


def test_an_odcr_is_listed_with_its_count() -> None:
    items = _items(
        group={
            "capacity": {"type": "OnDemand", "reservation": {"id": "cr-0123456789abcdef0", "instanceCount": 4}},
            "scaling": {"minSize": 4, "maxSize": 4},
        }
    )
    assert (
        "Node group `l4`: On-Demand Capacity Reservation `cr-0123456789abcdef0` holds 4 x g6.xlarge in the group's"
        " zone; it is billed whether the instances run or not."
    ) in items


@pytest.mark.parametrize(
    ("change", "present", "absent"),
    [
        (
            {"mode": "Existing"},
            "The eks-pod-identity-agent add-on is installed",
            "The role that runs `pulumi up` is one",
        ),
        ({"mode": "Existing", "autoscaler": "None"}, "Something scales the node groups", "eks-pod-identity-agent"),
        ({}, "The role that runs `pulumi up` is one of `cluster.admins`", "Something scales"),
    ],
)
def test_what_applies_to_the_cluster_mode_and_autoscaler(change: dict[str, Any], present: str, absent: str) -> None:
    items = _items(change)
    assert any(present in item for item in items) and not any(absent in item for item in items)


def test_karpenter_groups_name_the_endpoints_the_controller_needs() -> None:
    karpenter = _items(group={"provisioner": "Karpenter", "scaling": {"maxSize": 4}})
    line = next(i for i in karpenter if i.startswith("The Karpenter controller"))
    assert "EC2, SSM (AMI parameters), SQS (the interruption queue), STS and EKS, and the IAM API" in line
    assert "its nodes' subnets need a NAT gateway" in line and line.startswith(
        "The Karpenter controller (on the system"
    )
    assert not any(i.startswith("The Karpenter controller") for i in _items())


def test_an_fsx_repository_on_its_own_bucket_needs_that_bucket_first() -> None:
    plan = build_plan(
        load_fleet(str(ROOT / "tests/golden/cases/fsx-lustre/fleet.yaml"), "prod").environments["prod"], "prod"
    )
    assert before_you_deploy(plan)[-2:] == [
        "S3 bucket `lustre-checkpoints-example` (checkpoints.bucket) is created by the storage stage: the name must not"
        " be taken in any account (S3 bucket names are global); FSx for Lustre links `/` at `/checkpoints`.",
        "S3 bucket `lustre-datasets-example` exists in the account: FSx for Lustre links"
        " `s3://lustre-datasets-example/tokenized/` at `/datasets`, and gpufleet does not create it.",
    ]
