"""Computed defaults: what a fleet took is listed (plan.md "Defaulted values"), what it set is not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpufleet.facts import ami_releases
from gpufleet.facts.versions import default_release
from gpufleet.plan.report import plan_markdown
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Topology
from gpufleet.spec.schema import with_defaults

EXAMPLE = Path(__file__).resolve().parents[2] / "fleet.yaml"


def test_a_defaulted_field_is_listed_with_its_value_and_reason() -> None:
    plan = build_plan(load_fleet(str(EXAMPLE), "prod").environments["prod"], "prod")
    page = plan_markdown(plan)
    assert "| `nodeGroups[l40s].topology.policy` | `restricted` |" in page
    assert (
        f"- `{defaults.TOPOLOGY_POLICY.path}`: {defaults.TOPOLOGY_POLICY.rule}. Why: {defaults.TOPOLOGY_POLICY.reason}."
        in page
    )


def test_a_field_the_spec_sets_is_not_listed() -> None:
    fleet = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    groups = tuple(
        (
            dataclasses.replace(
                g, topology=Topology(policy="best-effort", scope="container", placement="None", pod_shape=None)
            )
            if g.name == "l40s"
            else g
        )
        for g in fleet.node_groups
    )
    taken = [
        field
        for field, _, _ in defaults.applied(
            dataclasses.replace(fleet, node_groups=groups), ("foundation", "admission"), {}
        )
    ]
    assert not [f for f in taken if f.startswith("nodeGroups[l40s].topology")]
    assert "nodeGroups[notebooks].topology.policy" in taken


def test_gdrcopy_is_listed_until_the_spec_sets_it() -> None:
    # fleet.yaml: Preinstalled driver, so GDRCopy stays off although h100 is an EFA Training group.
    fleet = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    assert ("versions.driver.gdrCopy", "Disabled", defaults.GDRCOPY) in defaults.applied(fleet, ("foundation",), {})
    operator = dataclasses.replace(
        fleet, versions=dataclasses.replace(fleet.versions, driver_source="Operator", driver_version="595.91.07")
    )
    assert ("versions.driver.gdrCopy", "Enabled", defaults.GDRCOPY) in defaults.applied(operator, ("foundation",), {})
    pinned = dataclasses.replace(fleet, versions=dataclasses.replace(fleet.versions, gdrcopy="Disabled"))
    assert not [f for f, _, _ in defaults.applied(pinned, ("foundation",), {}) if f.startswith("versions.")]


SPEC = """\
apiVersion: gpufleet/v1alpha1
kind: Fleet
metadata: {name: mini}
cluster:
  name: mini
  region: us-east-1
  kubernetesVersion: "1.33"
  admins: [{principalArn: "arn:aws:iam::111122223333:role/platform-admin"}]
  network: {vpcId: vpc-0a1b2c3d, subnetIds: [subnet-0aa, subnet-0bb]}
versions:
  kueue: {chart: 0.18.1}
nodeGroups:
  - {name: l4, instanceType: g6.xlarge, workloadClass: Inference, ami: {type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}, scaling: {minSize: 0, maxSize: 2}}
teams:
  - {name: vision, quotas: [{nodeGroup: l4, gpus: 1}]}
  - {name: speech, namespace: asr, quotas: [{nodeGroup: l4, gpus: 1}]}
environments:
  prod: {rollout: {through: admission}}
"""


def test_the_pins_the_system_nodes_and_the_team_namespace_are_listed_when_defaulted(tmp_path: Path) -> None:
    spec = tmp_path / "fleet.yaml"
    spec.write_text(SPEC)
    plan = build_plan(load_fleet(str(spec), "prod").environments["prod"], "prod")
    release = ami_releases.newest(ami_releases.SYSTEM_NODES_AMI_TYPE, "1.33")
    page = plan_markdown(plan)
    assert f"| `cluster.systemNodes` | `m7i.xlarge, 2 to 6 nodes, AMI release {release}` |" in page
    assert f"| `versions.gpuOperator` | `{default_release('gpuOperator')}` |" in page
    assert "| `teams[vision].namespace` | `vision` |" in page
    for default in (defaults.SYSTEM_NODES, defaults.PINS, defaults.TEAM_NAMESPACE):
        assert f"- `{default.path}`: {default.rule}. Why: {default.reason}." in page
    # set in the spec, or not deployed in this environment (the health stage's Node Problem Detector): not listed
    assert (
        "`versions.kueue`" not in page
        and "teams[speech].namespace" not in page
        and "`versions.nodeProblemDetector`" not in page
    )
    # a team with Inference quota may use the non-preemptible class too
    assert "| `teams[speech].priorities` | `serving, training, batch` |" in page
    assert f"- `{defaults.TEAM_PRIORITIES.path}`: {defaults.TEAM_PRIORITIES.rule}." in page


def test_the_default_system_nodes_are_the_schema_defaults_of_their_fields() -> None:
    nodes = with_defaults({"cluster": {"systemNodes": {"releaseVersion": "x"}}})["cluster"]["systemNodes"]
    assert (nodes["instanceType"], nodes["minSize"], nodes["maxSize"]) == (
        defaults.SYSTEM_NODES_INSTANCE_TYPE,
        defaults.SYSTEM_NODES_MIN,
        defaults.SYSTEM_NODES_MAX,
    )
