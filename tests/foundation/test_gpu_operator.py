"""GPU Operator values: pinned chart, driver source, the container escape, tolerations, chart keys."""

from __future__ import annotations

import json

import pytest

from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.manifests import gpu_operator, node_monitoring
from gpufleet.plan.parts import RolloutPlan
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.fleet import Fleet
from tests.foundation.test_node_groups import resource
from tests.upstream import chart_values, require_shared, unknown_value_keys


def test_preinstalled_driver_and_toolkit_are_not_installed(prod: RolloutPlan) -> None:
    release = resource(prod, "helm-gpu-operator").args
    assert release["chart"] == "gpu-operator" and release["version"] == "v26.7.0"
    assert release["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    values = release["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}


def test_the_escape_is_closed_on_the_device_plugin(prod: RolloutPlan) -> None:
    values = resource(prod, "helm-gpu-operator").args["values"]
    # the sharing stage's config hash joins the escape setting (env lists merge by name, they do not replace)
    assert [e["name"] for e in values["devicePlugin"]["env"]] == ["DEVICE_LIST_STRATEGY", "GPUFLEET_CONFIG_SHA256"]
    assert values["devicePlugin"]["env"][0] == {"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}
    assert values["cdi"] == {"enabled": False}
    assert values["validator"]["plugin"]["env"] == [{"name": "WITH_WORKLOAD", "value": "true"}]
    assert values["dcgmExporter"]["serviceMonitor"] == {"enabled": False}


def test_one_dcgm_host_engine_serves_the_node_monitoring_agent(dev: RolloutPlan) -> None:
    # dev stops at admission: the host engine the agent dials must not depend on the telemetry stage.
    values = resource(dev, "helm-gpu-operator").args["values"]
    assert values["dcgm"] == {"enabled": True, "hostNetwork": True}
    addon = resource(dev, "addon-eks-node-monitoring-agent").args
    assert addon["addonVersion"] == "v1.7.0-eksbuild.1"
    # Its dcgm-server stays off the (always tainted) GPU nodes: no second host engine there.
    assert json.loads(addon["configurationValues"]) == {"dcgmAgent": {"tolerations": []}}
    assert all(
        any(t["key"] == "nvidia.com/gpu" for t in resource(dev, f"{g.name}-node-group").args["taints"])
        for g in dev.fleet.node_groups
    )


def test_node_monitoring_agent_configuration_uses_keys_of_its_schema() -> None:
    # aws/eks-node-monitoring-agent charts/configuration.schema.json, v1.6.4 and v1.7.0: DCGMAgent has tolerations.
    assert set(node_monitoring.ADDON_CONFIGURATION) == {"dcgmAgent"}
    assert set(node_monitoring.ADDON_CONFIGURATION["dcgmAgent"]) <= {
        "affinity",
        "podAnnotations",
        "podLabels",
        "resources",
        "resizePolicy",
        "tolerations",
    }


def test_operands_tolerate_every_gpu_node_taint(prod: RolloutPlan) -> None:
    values = resource(prod, "helm-gpu-operator").args["values"]
    tolerated = {(t["key"], t["effect"]) for t in values["daemonsets"]["tolerations"]}
    nfd = {(t["key"], t["effect"]) for t in values["node-feature-discovery"]["worker"]["tolerations"]}
    for stage in prod.stages:
        for res in stage.content.resources:
            if res.type == "aws:eks/nodeGroup:NodeGroup" and "taints" in res.args:
                for taint in res.args["taints"]:
                    effect = {
                        "NO_SCHEDULE": "NoSchedule",
                        "NO_EXECUTE": "NoExecute",
                        "PREFER_NO_SCHEDULE": "PreferNoSchedule",
                    }[taint["effect"]]
                    assert (taint["key"], effect) in tolerated, taint
                    assert (taint["key"], effect) in nfd, taint


OPERATOR_SPEC = """
apiVersion: gpufleet/v1alpha1
kind: Fleet
metadata: {name: ops}
cluster: {mode: Existing, name: ops, region: us-east-1, kubernetesVersion: "1.33", network: {vpcId: vpc-0abc, subnetIds: [subnet-0aa, subnet-0bb]}}
versions:
  gpuOperator: {chart: v26.3.3}
  clusterAutoscaler: {chart: 9.59.0}
  driver: {source: Operator, version: "580.105.08", toolkitVersion: v1.18.1}
nodeGroups:
  - {name: a10, instanceType: g5.2xlarge, workloadClass: Batch, ami: {type: AL2023_x86_64_STANDARD, releaseVersion: "1.33.13-20260714"}, scaling: {maxSize: 2}}
environments: {prod: {rollout: {through: foundation}}}
"""


def test_operator_installs_pinned_driver_and_toolkit_with_the_escape_closed() -> None:
    fleet = load_fleet_text(OPERATOR_SPEC).environments["prod"]
    values = gpu_operator.values(fleet)
    assert values["driver"] == {"enabled": True, "version": "580.105.08"}
    assert values["toolkit"] == {
        "enabled": True,
        "version": "v1.18.1",
        "env": [
            {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
            {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"},
        ],
    }


@pytest.mark.parametrize("version", COMPONENTS["gpuOperator"].supported)
def test_every_value_key_exists_in_the_pinned_chart(version: str) -> None:
    require_shared()
    fleet = load_fleet_text(
        OPERATOR_SPEC.replace("v26.3.3", version).replace(
            "toolkitVersion: v1.18.1", "toolkitVersion: v1.18.1, gdrCopy: Enabled"
        )
    ).environments["prod"]
    assert gpu_operator.values(fleet)["gdrcopy"] == {"enabled": True}
    assert list(unknown_value_keys(gpu_operator.values(fleet), chart_values("gpu-operator", version))) == []


def test_a_made_up_key_is_caught() -> None:
    require_shared()
    assert list(unknown_value_keys({"devicePlugin": {"envs": []}}, chart_values("gpu-operator", "v26.7.0"))) == [
        "devicePlugin.envs"
    ]


def _operator_fleet(driver: str, group: str) -> Fleet:
    spec = OPERATOR_SPEC.replace('driver: {source: Operator, version: "580.105.08", toolkitVersion: v1.18.1}', driver)
    spec = spec.replace("  - {name: a10, instanceType: g5.2xlarge, workloadClass: Batch,", group)
    if "Preinstalled" in driver:
        spec = spec.replace("AL2023_x86_64_STANDARD", "AL2023_x86_64_NVIDIA")
    return load_fleet_text(spec).environments["prod"]


EFA_TRAINING = (
    "  - {name: h100, instanceType: p5.48xlarge, workloadClass: Training, fabric: EFA, zone: use1-az4, subnetIds:"
    " [subnet-0aa],"
)
OPERATOR_DRIVER = 'driver: {source: Operator, version: "580.105.08"}'


@pytest.mark.parametrize(
    ("driver", "group", "gdrcopy"),
    [
        (OPERATOR_DRIVER, EFA_TRAINING, {"enabled": True}),  # default on: the operator's driver DaemonSet loads gdrdrv
        (
            OPERATOR_DRIVER,
            "  - {name: a10, instanceType: g5.2xlarge, workloadClass: Batch,",
            None,
        ),  # no EFA training group
        ('driver: {source: Operator, version: "580.105.08", gdrCopy: Disabled}', EFA_TRAINING, None),
        (
            'driver: {source: Operator, version: "580.105.08", gdrCopy: Enabled}',
            "  - {name: a10, instanceType: g5.2xlarge, workloadClass: Batch,",
            {"enabled": True},
        ),
        ("driver: {source: Preinstalled}", EFA_TRAINING, None),  # no gdrdrv without the operator's driver
    ],
)
def test_gdrcopy_follows_the_driver_source_and_efa_training(
    driver: str, group: str, gdrcopy: dict[str, bool] | None
) -> None:
    assert gpu_operator.values(_operator_fleet(driver, group)).get("gdrcopy") == gdrcopy
