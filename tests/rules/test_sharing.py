"""The rules of gpufleet/rules/sharing.py (GPU sharing) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import Patch, add_group, build, found, group, quota, through

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # sharing
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MIG", "profile": "1g.10gb"}, instanceType="p5.48xlarge")],
        [],
        id="sharing/mig",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MIG", "profile": "1g.10gb"})],
        [("nodeGroups[0].sharing.strategy", "L4 GPUs in g6.xlarge cannot do MIG")],
        id="sharing/mig-not-capable",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MIG"}, instanceType="p5.48xlarge")],
        [("nodeGroups[0].sharing.profile", "strategy MIG needs a profile")],
        id="sharing/mig-without-profile",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MIG", "profile": "1g.5gb"}, instanceType="p5.48xlarge")],
        [
            (
                "nodeGroups[0].sharing.profile",
                (
                    '"1g.5gb" is not a MIG profile of the H100 in p5.48xlarge (profiles: 1g.10gb, 1g.20gb, 2g.20gb,'
                    " 3g.40gb, 4g.40gb, 7g.80gb)"
                ),
            )
        ],
        id="sharing/mig-profile-of-another-gpu",
    ),
    pytest.param("sharing", [group(sharing={"strategy": "MPS", "replicas": 4})], [], id="sharing/mps"),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MPS", "replicas": 4, "profile": "1g.10gb"}, instanceType="p5.48xlarge")],
        [
            (
                "nodeGroups[0].sharing.profile",
                "MPS cannot be combined with MIG: the device plugin does not support MPS on MIG-enabled devices",
            )
        ],
        id="sharing/mps-with-mig",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MPS"})],
        [("nodeGroups[0].sharing.replicas", "strategy MPS needs replicas (pods per GPU)")],
        id="sharing/mps-without-replicas",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "Exclusive", "replicas": 2})],
        [("nodeGroups[0].sharing.replicas", "replicas is only used with TimeSlicing or MPS, not Exclusive")],
        id="sharing/replicas-unused",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "Exclusive", "profile": "1g.10gb"})],
        [("nodeGroups[0].sharing.profile", "profile is only used with MIG, not Exclusive")],
        id="sharing/profile-unused",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.40gb"}],
                },
                instanceType="p5.48xlarge",
            )
        ],
        [],
        id="sharing/mig-mixed",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 2, "profile": "3g.40gb"}],
                },
                instanceType="p5.48xlarge",
            )
        ],
        [("nodeGroups[0].sharing.layout", "layout covers 6 GPUs, but p5.48xlarge has 8")],
        id="sharing/mig-mixed-short-layout",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.20gb"}],
                },
                instanceType="p5.48xlarge",
            )
        ],
        [
            (
                "nodeGroups[0].sharing.layout[1].profile",
                (
                    '"3g.20gb" is not a MIG profile of the H100 in p5.48xlarge (profiles: 1g.10gb, 1g.20gb, 2g.20gb,'
                    " 3g.40gb, 4g.40gb, 7g.80gb)"
                ),
            )
        ],
        id="sharing/mig-mixed-profile-of-another-gpu",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MIG", "migStrategy": "Mixed"}, instanceType="p5.48xlarge")],
        [
            (
                "nodeGroups[0].sharing.migStrategy",
                "migStrategy Mixed needs a layout: the profile of each of the node's GPUs",
            )
        ],
        id="sharing/mig-mixed-without-layout",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "profile": "1g.10gb",
                    "layout": [{"gpus": 8, "profile": "1g.10gb"}],
                },
                instanceType="p5.48xlarge",
            )
        ],
        [
            (
                "nodeGroups[0].sharing.profile",
                "with migStrategy Mixed the profiles are given per GPU in layout, not in profile",
            )
        ],
        id="sharing/mig-mixed-with-profile",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={"strategy": "MIG", "profile": "1g.10gb", "layout": [{"gpus": 8, "profile": "1g.10gb"}]},
                instanceType="p5.48xlarge",
            )
        ],
        [
            (
                "nodeGroups[0].sharing.layout",
                (
                    "layout needs migStrategy Mixed: under Single every slice is nvidia.com/gpu, so a node holds one"
                    " profile"
                ),
            )
        ],
        id="sharing/layout-without-mixed",
    ),
    pytest.param(
        "sharing",
        [group(sharing={"strategy": "MPS", "replicas": 4, "migStrategy": "Mixed"})],
        [("nodeGroups[0].sharing.migStrategy", "migStrategy is only used with MIG, not MPS")],
        id="sharing/mig-strategy-unused",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.40gb"}],
                },
                instanceType="p5.48xlarge",
                ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"},
            )
        ],
        [
            (
                "nodeGroups[0].sharing.migStrategy",
                (
                    "Bottlerocket partitions MIG from its own settings, one profile per board"
                    " (BOTTLEROCKET_x86_64_NVIDIA); migStrategy Mixed needs the GPU Operator's MIG manager"
                ),
            )
        ],
        id="sharing/mig-mixed-bottlerocket",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.40gb"}],
                },
                instanceType="p5.48xlarge",
            ),
            add_group(name="h100", instanceType="p5.48xlarge", sharing={"strategy": "MIG", "profile": "1g.10gb"}),
        ],
        [
            (
                "nodeGroups[1].sharing.strategy",
                (
                    "the GPU Operator applies one MIG strategy to the whole cluster (ClusterPolicy mig.strategy), and"
                    ' node group "l4" uses Mixed: this group\'s slices would be advertised as nvidia.com/mig-1g.10gb,'
                    " not nvidia.com/gpu"
                ),
            )
        ],
        id="sharing/mig-strategies-disagree",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.40gb"}],
                },
                instanceType="p5.48xlarge",
            ),
            add_group(name="mps", instanceType="g6.xlarge", sharing={"strategy": "MPS", "replicas": 4}),
        ],
        [
            (
                "nodeGroups[1].sharing.strategy",
                (
                    'the device plugin refuses MPS under MIG strategy mixed ("using --mig-strategy=mixed is not'
                    " supported with MPS\"), and the GPU Operator sets the cluster's one strategy on every device"
                    ' plugin: node group "l4" uses migStrategy Mixed'
                ),
            )
        ],
        id="sharing/mps-beside-mig-mixed",
    ),
    pytest.param(
        "sharing",
        [
            group(
                sharing={
                    "strategy": "MIG",
                    "migStrategy": "Mixed",
                    "layout": [{"gpus": 4, "profile": "1g.10gb"}, {"gpus": 4, "profile": "3g.40gb"}],
                },
                instanceType="p5.48xlarge",
            ),
            add_group(name="ts", instanceType="g6.xlarge", sharing={"strategy": "TimeSlicing", "replicas": 4}),
        ],
        [],
        id="sharing/time-slicing-beside-mig-mixed",
    ),
    pytest.param(
        "sharing",
        [group(workloadClass="Interactive", sharing={"strategy": "TimeSlicing", "replicas": 4})],
        [],
        id="sharing/time-slicing-interactive",
    ),
    pytest.param(
        "sharing",
        [
            group(
                workloadClass="Inference",
                sharing={"strategy": "TimeSlicing", "replicas": 4, "acknowledgeNoIsolation": True},
            )
        ],
        [],
        id="sharing/time-slicing-acknowledged",
    ),
    pytest.param(
        "sharing",
        [group(workloadClass="Training", sharing={"strategy": "TimeSlicing", "replicas": 4})],
        [
            (
                "nodeGroups[0].sharing.strategy",
                (
                    "time-slicing on a workloadClass Training group: pods share a GPU with no memory bound and no fault"
                    " isolation"
                ),
            )
        ],
        id="sharing/time-slicing-training",
    ),
    pytest.param(
        "sharing",
        [group(workloadClass="Inference", sharing={"strategy": "TimeSlicing", "replicas": 4})],
        [
            (
                "nodeGroups[0].sharing.strategy",
                (
                    "time-slicing on a workloadClass Inference group: pods share a GPU with no memory bound and no"
                    " fault isolation"
                ),
            )
        ],
        id="sharing/time-slicing-inference",
    ),
    # sharing-names
    pytest.param(
        "sharing-names",
        [through("sharing"), group(sharing={"strategy": "MPS", "replicas": 2})],
        [],
        id="sharing-names/own-name",
    ),
    pytest.param(
        "sharing-names",
        [
            through("sharing"),
            group(name="default", sharing={"strategy": "MPS", "replicas": 2}),
            quota(nodeGroup="default"),
        ],
        [
            (
                "nodeGroups[0].name",
                'an MPS group cannot be named "default": that config entry is the one for groups without sharing',
            )
        ],
        id="sharing-names/default",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
