"""Stage 4: device plugin and MIG manager configs per node group, the labels that select them, the GPU Operator
values that point at them, Bottlerocket's own settings, and the isolation contract in plan.md and the docs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.facts import catalog
from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.manifests import kueue, sharing
from gpufleet.plan.manifests.checksum import data_sha256
from gpufleet.plan.parts import BuildContext
from gpufleet.plan.stages import sharing as stage
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.fleet import Fleet, SharingStrategy
from tests.upstream import chart_values, require_shared, unknown_value_keys

ROOT = Path(__file__).resolve().parents[2]
SPEC: dict[str, Any] = yaml.safe_load(
    (ROOT / "tests" / "golden" / "cases" / "sharing-strategies" / "fleet.yaml").read_text()
)

Edit = Callable[[dict[str, Any]], None]


def make(*edits: Edit) -> Fleet:
    data = copy.deepcopy(SPEC)
    for edit in edits:
        edit(data)
    return load_fleet_text(yaml.safe_dump(data), env="prod").environments["prod"]


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return make()


def group_edit(name: str, **fields: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        next(g for g in d["nodeGroups"] if g["name"] == name).update(fields)

    return edit


# ---------------------------------------------------------------------------------------------------------------
# MIG arithmetic against the GPU Operator's own table

# Instances per GPU of every homogeneous profile, as in NVIDIA/gpu-operator
# assets/state-mig-manager/0400_configmap.yaml (default-mig-parted-config) @v26.7.0, "all-<profile>" entries.
MIG_PARTED = {
    ("A100", 40960): {"1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    ("A100", 81920): {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    ("H100", 81920): {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    ("H200", 144384): {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
    ("B200", 183359): {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
    ("B300", 275040): {"1g.34gb": 7, "1g.67gb": 4, "2g.67gb": 3, "3g.135gb": 2, "4g.135gb": 1, "7g.269gb": 1},
}


def test_mig_instances_match_the_operator_table_for_every_catalog_profile() -> None:
    seen = set()
    for info in catalog.CATALOG.values():
        if not info.mig_capable:
            continue
        table = MIG_PARTED[(info.gpu_model, info.gpu_memory_mib)]
        assert set(info.mig_profiles) == set(table)
        for profile in info.mig_profiles:
            assert sharing.mig_instances_per_gpu(profile, info.mig_profiles) == table[profile], (info.name, profile)
        seen.add((info.gpu_model, info.gpu_memory_mib))
    assert seen == set(MIG_PARTED)


@pytest.mark.parametrize(
    ("group", "units"),
    [
        ("h100", 1),
        ("notebooks", 4),
        ("l40s-mps", 3),
        ("ci", 2),
    ],  # a100-mig (mixed): test_resource_names_follow_the_mig_strategy
)
def test_devices_per_gpu(fleet: Fleet, group: str, units: int) -> None:
    assert sharing.devices_per_gpu(fleet.node_group(group)) == {"nvidia.com/gpu": units}


SINGLE_MIG = {"strategy": "MIG", "profile": "2g.10gb"}


@pytest.mark.parametrize(
    ("sharing_spec", "resources", "per_gpu"),
    [
        (
            None,
            {"nvidia.com/mig-1g.5gb": 28, "nvidia.com/mig-3g.20gb": 8},
            {"nvidia.com/mig-1g.5gb": 7, "nvidia.com/mig-3g.20gb": 2},
        ),
        (SINGLE_MIG, {"nvidia.com/gpu": 24}, {"nvidia.com/gpu": 3}),
        (
            {"strategy": "MIG", "migStrategy": "Mixed", "layout": [{"gpus": 8, "profile": "1g.5gb"}]},
            {"nvidia.com/mig-1g.5gb": 56},
            {"nvidia.com/mig-1g.5gb": 7},
        ),
    ],
)
def test_resource_names_follow_the_mig_strategy(
    sharing_spec: dict[str, Any] | None, resources: dict[str, int], per_gpu: dict[str, int]
) -> None:
    # NVIDIA/k8s-device-plugin internal/rm/rm.go: single -> nvidia.com/gpu; mixed -> "mig-" + profile
    group = make(*([group_edit("a100-mig", sharing=sharing_spec)] if sharing_spec else [])).node_group("a100-mig")
    assert sharing.advertised(group) == resources
    assert sharing.devices_per_gpu(group) == per_gpu


# ---------------------------------------------------------------------------------------------------------------
# Labels and operator values


# The golden case's l40s-mps group runs MPS under Bottlerocket's own plugin (the operator's refuses MPS beside MIG
# strategy mixed); these tests put it on the operator's plugin, beside a100-mig under strategy single.
OPERATOR_MPS = (
    group_edit("a100-mig", sharing=SINGLE_MIG),
    group_edit("l40s-mps", ami={"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.35.6-20260714"}),
)


def test_node_labels_select_each_group_config() -> None:
    fleet = make(*OPERATOR_MPS)
    assert {g.name: sharing.sharing_node_labels(g) for g in fleet.node_groups} == {
        "h100": {},  # Exclusive: neither label
        "notebooks": {"nvidia.com/device-plugin.config": "notebooks"},
        "l40s-mps": {"nvidia.com/device-plugin.config": "l40s-mps"},
        "a100-mig": {"nvidia.com/mig.config": "a100-mig"},
        "ci": {},  # Bottlerocket time-slices through its own settings
    }


def test_bottlerocket_mig_group_keeps_the_operator_mig_manager_away() -> None:
    fleet = make(
        group_edit(
            "a100-mig",
            sharing=SINGLE_MIG,
            ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"},
        )
    )
    assert sharing.sharing_node_labels(fleet.node_group("a100-mig")) == {"nvidia.com/gpu.deploy.mig-manager": "false"}


def test_operator_values_point_at_the_stage_configmaps(fleet: Fleet) -> None:
    plugin = data_sha256(sharing.device_plugin_configmap(fleet, "gpu-operator")["data"])
    mig = data_sha256(sharing.mig_configmap(fleet, "gpu-operator")["data"])
    assert sharing.operator_sharing_values(fleet) == {
        "devicePlugin": {
            "config": {"create": False, "name": "gpufleet-device-plugin-config", "default": "default"},
            "env": [{"name": "GPUFLEET_CONFIG_SHA256", "value": plugin}],
        },
        "migManager": {
            "config": {"create": False, "name": "gpufleet-mig-config", "default": "all-disabled"},
            "env": [{"name": "GPUFLEET_CONFIG_SHA256", "value": mig}],
        },
        "mig": {"strategy": "mixed"},  # a100-mig mixes profiles; one strategy for the whole cluster
    }
    assert sharing.operator_sharing_values(make(group_edit("a100-mig", sharing=SINGLE_MIG)))["mig"] == {
        "strategy": "single"
    }


@pytest.mark.parametrize("version", COMPONENTS["gpuOperator"].supported)
def test_operator_values_exist_in_the_pinned_chart(fleet: Fleet, version: str) -> None:
    require_shared()
    defaults = chart_values("gpu-operator", version)
    assert list(unknown_value_keys(sharing.operator_sharing_values(fleet), defaults)) == []
    # the leaves too: unknown_value_keys stops at empty-map or scalar defaults
    assert set(sharing.operator_sharing_values(fleet)["devicePlugin"]["config"]) <= set(
        defaults["devicePlugin"]["config"]
    )
    assert set(sharing.operator_sharing_values(fleet)["migManager"]["config"]) <= set(defaults["migManager"]["config"])


# ---------------------------------------------------------------------------------------------------------------
# The ConfigMaps


def _data(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: yaml.safe_load(v) for k, v in obj["data"].items()}


def test_device_plugin_configmap_has_default_and_one_entry_per_shared_group() -> None:
    cm = sharing.device_plugin_configmap(make(*OPERATOR_MPS), "gpu-operator")
    assert cm["metadata"]["name"] == "gpufleet-device-plugin-config"
    assert cm["metadata"]["namespace"] == "gpu-operator"
    assert _data(cm) == {
        "default": {"version": "v1"},
        "notebooks": {
            "version": "v1",
            "sharing": {
                "timeSlicing": {
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
                }
            },
        },
        "l40s-mps": {"version": "v1", "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}}},
    }


def test_mig_configmap_has_all_disabled_and_one_entry_per_mig_group(fleet: Fleet) -> None:
    cm = sharing.mig_configmap(fleet, "gpu-operator")
    assert list(cm["data"]) == ["config.yaml"]  # the MIG manager reads exactly this key
    assert _data(cm)["config.yaml"] == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            # mig-parted api/spec/v1 MigConfigSpec: `devices` is "all" or a list of GPU indices
            "a100-mig": [
                {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
                {"devices": [4, 5, 6, 7], "mig-enabled": True, "mig-devices": {"3g.20gb": 2}},
            ],
        },
    }
    single = _data(sharing.mig_configmap(make(group_edit("a100-mig", sharing=SINGLE_MIG)), "gpu-operator"))[
        "config.yaml"
    ]
    assert single["mig-configs"]["a100-mig"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"2g.10gb": 3}}]


def _everything(fleet: Fleet) -> dict[str, Any]:
    return {
        "labels": {g.name: sharing.sharing_node_labels(g) for g in fleet.node_groups},
        "device-plugin": _data(sharing.device_plugin_configmap(fleet, "gpu-operator")),
        "mig": _data(sharing.mig_configmap(fleet, "gpu-operator"))["config.yaml"]["mig-configs"],
        "values": sharing.operator_sharing_values(fleet),
    }


# A changed entry also changes the hash that rolls its ConfigMap's consumer (operator_sharing_values).
ROLLS = {"device-plugin": ("values", "devicePlugin"), "mig": ("values", "migManager")}


@pytest.mark.parametrize(
    ("group", "new", "changed"),
    [
        (
            "h100",
            {"strategy": "MIG", "migStrategy": "Mixed", "layout": [{"gpus": 8, "profile": "1g.20gb"}]},
            {("labels", "h100"), ("mig", "h100")},
        ),
        ("notebooks", {"strategy": "TimeSlicing", "replicas": 8}, {("device-plugin", "notebooks")}),
        ("notebooks", {"strategy": "Exclusive"}, {("labels", "notebooks"), ("device-plugin", "notebooks")}),
        (
            "a100-mig",
            {
                "strategy": "MIG",
                "migStrategy": "Mixed",
                "layout": [{"gpus": 2, "profile": "1g.5gb"}, {"gpus": 6, "profile": "3g.20gb"}],
            },
            {("mig", "a100-mig")},
        ),
    ],
)
def test_changing_one_group_changes_only_its_label_and_entry(
    fleet: Fleet, group: str, new: dict[str, Any], changed: set[tuple[str, str]]
) -> None:
    before = _everything(fleet)
    after = _everything(make(group_edit(group, sharing=new)))
    diff = {
        (part, key)
        for part in before
        for key in set(before[part]) | set(after[part])
        if before[part].get(key) != after[part].get(key)
    }
    assert diff == changed | {ROLLS[part] for part, _ in changed if part in ROLLS}


# ---------------------------------------------------------------------------------------------------------------
# Bottlerocket


@pytest.mark.parametrize(
    ("sharing_spec", "expected"),
    [
        ({"strategy": "Exclusive"}, {}),
        (
            {"strategy": "TimeSlicing", "replicas": 2},
            {
                "device-sharing-strategy": "time-slicing",
                "time-slicing.replicas": 2,
                "time-slicing.rename-by-default": False,
                "time-slicing.fail-requests-greater-than-one": True,
            },
        ),
        (
            {"strategy": "MPS", "replicas": 5},
            {"device-sharing-strategy": "mps", "mps.replicas": 5, "mps.rename-by-default": False},
        ),
    ],
)
def test_bottlerocket_settings(sharing_spec: dict[str, Any], expected: dict[str, Any]) -> None:
    assert (
        sharing.bottlerocket_sharing_settings(make(group_edit("ci", sharing=sharing_spec)).node_group("ci")) == expected
    )


def test_bottlerocket_mig_settings_use_its_board_key() -> None:
    bottlerocket = {"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"}
    fleet = make(group_edit("a100-mig", sharing=SINGLE_MIG, ami=bottlerocket))
    assert sharing.bottlerocket_sharing_settings(fleet.node_group("a100-mig")) == {
        "device-partitioning-strategy": "mig",
        'mig.profile."a100.40gb"': "2g.10gb",
    }
    assert sharing.bottlerocket_sharing_settings(fleet.node_group("notebooks")) == {}  # AL2023: the operator's plugin


def test_bottlerocket_mig_on_an_unsupported_board_warns() -> None:
    def b200(d: dict[str, Any]) -> None:
        g = next(g for g in d["nodeGroups"] if g["name"] == "a100-mig")
        g.update(
            instanceType="p6-b200.48xlarge",
            ami={"type": "BOTTLEROCKET_x86_64_NVIDIA", "releaseVersion": "1.54.0-5043decc"},
            sharing={"strategy": "MIG", "profile": "1g.23gb"},
        )

    content = stage.build(BuildContext(fleet=make(b200), environment="prod", through="cost"))
    assert content.warnings == (
        (
            "node group a100-mig: Bottlerocket partitions only A100, H100 and H200 with MIG; p6-b200.48xlarge will come"
            " up unpartitioned (use an AL2023 AMI, where the GPU Operator's MIG manager does it)"
        ),
    )


# ---------------------------------------------------------------------------------------------------------------
# The stage and the isolation contract


def test_both_configmaps_exist_with_the_operator_that_mounts_them(fleet: Fleet) -> None:
    # The operator mounts them as non-optional volumes: created in stage 1 before its release, none in stage 4.
    from gpufleet.plan.stages import foundation

    content = stage.build(BuildContext(fleet=fleet, environment="prod", through="cost"))
    assert content.resources == () and content.warnings == ()
    first = foundation.build(BuildContext(fleet=fleet, environment="prod", through="cost")).resources
    configs = [
        r
        for r in first
        if r.type == "kubernetes:core/v1:ConfigMap" and r.args["object"]["metadata"]["namespace"] == "gpu-operator"
    ]
    assert [r.args["object"]["metadata"]["name"] for r in configs] == [
        "gpufleet-dcgm-metrics",
        "gpufleet-device-plugin-config",
        "gpufleet-mig-config",
    ]
    release = next(r for r in first if r.id == "helm-gpu-operator")
    assert {c.id for c in configs} <= set(release.depends_on)


def test_plan_states_each_group_contract(fleet: Fleet) -> None:
    notes = stage.build(BuildContext(fleet=fleet, environment="prod", through="cost")).notes
    rows = {
        line.split(" | ")[0].strip("| "): line
        for line in notes
        if line.startswith("| ") and not line.startswith("| node group")
    }
    assert set(rows) == {g.name for g in fleet.node_groups}
    for group in fleet.node_groups:
        contract = sharing.CONTRACTS[group.sharing.strategy]
        for text in (contract.memory_bound, contract.fault_isolation, contract.reconfigure_cost):
            assert text in rows[group.name]
    assert "MPS: 3 pods per GPU (15258 MiB each)" in rows["l40s-mps"]  # 45776 MiB / 3
    assert (
        "| MIG mixed: 4 GPUs of 1g.5gb (7 each), 4 GPUs of 3g.20gb (2 each) | 28 `nvidia.com/mig-1g.5gb`, 8"
        " `nvidia.com/mig-3g.20gb` |" in rows["a100-mig"]
    )


def test_docs_isolation_table_is_the_contract() -> None:
    doc = (ROOT / "docs" / "admission-and-sharing.md").read_text()
    for strategy in SharingStrategy:
        contract = sharing.CONTRACTS[strategy]
        row = (
            f"| {strategy.value} | {contract.memory_bound} | {contract.fault_isolation} | {contract.reconfigure_cost} |"
        )
        assert row in doc, (
            f"docs/admission-and-sharing.md: isolation table row for {strategy.value} differs from"
            " gpufleet.plan.manifests.sharing.CONTRACTS"
        )


def test_kueue_quota_has_one_covered_resource_per_mig_name(fleet: Fleet) -> None:
    """The a100-mig layout (4 GPUs of 1g.5gb, 4 of 3g.20gb) becomes two covered resources; 8 GPUs of quota hold one
    node's slices of each, a lending limit of 4 GPUs half of them; other flavors list them at 0."""
    queue = kueue.cluster_queue(fleet, next(t for t in fleet.teams if t.name == "research"))
    (group,) = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == [
        "cpu",
        "memory",
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.5gb",
        "nvidia.com/mig-3g.20gb",
        "vpc.amazonaws.com/efa",
    ]
    flavors = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
    mig = flavors["a100-mig"]
    assert (
        mig["nvidia.com/gpu"]["nominalQuota"],
        mig["nvidia.com/mig-1g.5gb"]["nominalQuota"],
        mig["nvidia.com/mig-3g.20gb"]["nominalQuota"],
    ) == (0, 28, 8)
    assert (mig["nvidia.com/mig-1g.5gb"]["lendingLimit"], mig["nvidia.com/mig-3g.20gb"]["lendingLimit"]) == (14, 4)
    assert (
        flavors["h100"]["nvidia.com/mig-1g.5gb"]["nominalQuota"] == 0
        and flavors["h100"]["nvidia.com/gpu"]["nominalQuota"] == 16
    )
