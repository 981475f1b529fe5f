"""Headroom (`nodeGroups[].headroom`, issue 34 item 2; issue 32's warm-capacity replacement for warm pools): the
placeholder PriorityClass and Deployments stage 1 renders, and how they meet the Cluster Autoscaler, Kueue and the
fleet's priorities, read from the rendered objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.report import node_group_rows
from gpufleet.plan.rollout import build_plan
from gpufleet.plan.stages.cost import estimate_notes
from gpufleet.rules.pipeline import load_fleet_text

ROOT = Path(__file__).resolve().parents[2]


def example(**groups: dict[str, Any]) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "fleet.yaml").read_text())
    for g in data["nodeGroups"]:
        g.pop("headroom", None)  # the example's own (l40s) is given back by the test that wants it
        g.update(groups.get(g["name"], {}))
    return data


def plan_of(data: dict[str, Any], env: str = "prod") -> RolloutPlan:
    return build_plan(load_fleet_text(yaml.safe_dump(data, sort_keys=False), env=env).environments[env], env)


def objects(plan: RolloutPlan, kind: str) -> dict[str, dict[str, Any]]:
    return {
        r.args["object"]["metadata"]["name"]: r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if "object" in r.args and r.args["object"]["kind"] == kind
    }


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    # l40s: 1 warm node (Exclusive, 4 x L40S); notebooks: time-sliced x4 on one A10G; a100-mig: MIG 1g.5gb.
    return plan_of(
        example(
            l40s={"headroom": {"nodes": 1}},
            notebooks={"headroom": {"nodes": 2}},
            **{"a100-mig": {"headroom": {"nodes": 1}}},
        )
    )


def test_no_headroom_renders_nothing() -> None:
    plain = plan_of(example())
    assert "gpufleet-headroom" not in objects(plain, "PriorityClass")
    assert not [n for n in objects(plain, "Deployment") if n.startswith("headroom-")]


def test_the_placeholder_class_ranks_below_every_fleet_priority_and_never_preempts(plan: RolloutPlan) -> None:
    classes = objects(plan, "PriorityClass")
    placeholder = classes.pop("gpufleet-headroom")
    assert placeholder["value"] == -10
    assert placeholder["preemptionPolicy"] == "Never"
    assert placeholder["globalDefault"] is False
    # Every pod of the fleet's classes outranks it; the serving class may preempt it.
    assert all(c["value"] > placeholder["value"] for c in classes.values())
    assert classes["serving"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_the_autoscaler_keeps_its_default_expendable_cutoff(plan: RolloutPlan) -> None:
    """Pods below --expendable-pods-priority-cutoff (default -10, kubernetes/autoscaler cluster-autoscaler
    config/flags/flags.go) neither trigger a scale-up nor keep a node: -10 is the lowest value that still does
    (FAQ.md "How can I configure overprovisioning"), so the rendered autoscaler must not raise the cutoff."""
    (release,) = [r for s in plan.included() for r in s.content.resources if r.id == "helm-cluster-autoscaler"]
    extra = release.args["values"]["extraArgs"]
    assert extra and "expendable-pods-priority-cutoff" not in extra


def test_one_placeholder_per_warm_node_holding_all_its_gpus(plan: RolloutPlan) -> None:
    dep = objects(plan, "Deployment")["headroom-l40s"]
    assert dep["metadata"]["namespace"] == "gpufleet-system"
    assert dep["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    spec = dep["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["priorityClassName"] == "gpufleet-headroom"
    assert pod["terminationGracePeriodSeconds"] == 0
    assert pod["nodeSelector"] == {"gpufleet.io/node-group": "l40s"}
    assert {(t["key"], t["value"], t["effect"]) for t in pod["tolerations"]} == {
        ("nvidia.com/gpu", "true", "NoSchedule"),
        ("gpufleet.io/serving", "true", "NoSchedule"),
    }
    (pause,) = pod["containers"]
    assert pause["resources"]["limits"]["nvidia.com/gpu"] == 4  # g6e.12xlarge: 4 x L40S
    assert pause["resources"]["requests"]["nvidia.com/gpu"] == 4


def test_shared_gpus_are_held_one_device_per_container(plan: RolloutPlan) -> None:
    """Time-slicing with failRequestsGreaterThanOne (and MPS) refuses more than one shared device per container
    (NVIDIA/k8s-device-plugin internal/plugin/server.go), so a placeholder holds a node's 4 replicas in 4 containers."""
    pod = objects(plan, "Deployment")["headroom-notebooks"]["spec"]["template"]["spec"]
    assert [c["resources"]["limits"]["nvidia.com/gpu"] for c in pod["containers"]] == [1, 1, 1, 1]
    assert len({c["name"] for c in pod["containers"]}) == 4
    mig = objects(plan, "Deployment")["headroom-a100-mig"]["spec"]["template"]["spec"]["containers"]
    assert [c["resources"]["limits"]["nvidia.com/gpu"] for c in mig] == [56]  # 8 A100 x 7 slices, strategy single


def test_before_the_sharing_stage_whole_gpus_are_held() -> None:
    dev = plan_of(example(notebooks={"headroom": {"nodes": 1}}), env="dev")
    pod = objects(dev, "Deployment")["headroom-notebooks"]["spec"]["template"]["spec"]
    assert [c["resources"]["limits"]["nvidia.com/gpu"] for c in pod["containers"]] == [1]


def test_kueue_leaves_the_placeholders_alone(plan: RolloutPlan) -> None:
    """Kueue manages pods only in the namespaces of managedJobsNamespaceSelector and, with manageJobsWithoutQueueName
    false, only those naming a queue: the placeholders are in neither, so they are not gated and hold no quota."""
    (release,) = [r for s in plan.included() for r in s.content.resources if r.id == "helm-kueue"]
    config = yaml.safe_load(release.args["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["manageJobsWithoutQueueName"] is False
    (expr,) = config["managedJobsNamespaceSelector"]["matchExpressions"]
    assert expr["operator"] == "In" and "gpufleet-system" not in expr["values"]
    dep = objects(plan, "Deployment")["headroom-l40s"]
    assert "kueue.x-k8s.io/queue-name" not in dep["spec"]["template"]["metadata"]["labels"]


def test_plan_md_states_the_headroom_and_its_cost(plan: RolloutPlan) -> None:
    (foundation,) = [s for s in plan.stages if s.name == "foundation"]
    text = "\n".join(foundation.content.notes)
    # g6e.12xlarge: 4 GPUs x $2.35 (cost.gpuHourUsd.l40s) x 730 h = $6,862 for one warm node
    assert (
        "| l40s | ManagedNodeGroup | 1 | `nvidia.com/gpu: 4` | 2 (minSize 2) | $6,862 (1 x g6e.12xlarge around the"
        " clock) |" in text
    )
    # g5.xlarge: 1 GPU x $1.01 x 730 h x 2 nodes = $1,475
    assert "| notebooks | ManagedNodeGroup | 2 | `nvidia.com/gpu: 4` | 2 (minSize 1) | $1,475" in text


def test_the_cost_estimate_counts_the_warm_nodes_of_an_idle_group() -> None:
    """A Karpenter pool keeps no minimum, but its 3 placeholders keep 3 nodes running: the idle figure (minSize
    column) is 3 x 4 GPUs x $2.35 x 730 h = $20,586, and their root volumes 3 x 300 GiB x $0.08 = $72."""
    karpenter = {"headroom": {"nodes": 3}, "provisioner": "Karpenter", "scaling": {"maxSize": 12}}
    fleet = plan_of(example(l40s=karpenter)).fleet
    lines, _ = estimate_notes(fleet)
    assert "| l40s | g6e.12xlarge | 4 | 2.35 (spec) | 9.40 | $20,586 | $82,344 | - |" in lines
    assert "l40s 300 GiB: $72.00..$288" in next(line for line in lines if "gp3 volumes" in line)
    assert any("count max(minSize, headroom.nodes) nodes" in line for line in lines)
    without = estimate_notes(plan_of(example(l40s={**karpenter, "headroom": {"nodes": 0}})).fleet)[0]
    assert "| l40s | g6e.12xlarge | 4 | 2.35 (spec) | 9.40 | $0 | $82,344 | - |" in without
    assert not any("headroom" in line for line in without)


def test_plan_md_says_what_keeps_each_group_warm() -> None:
    plan = plan_of(
        example(
            l40s={"headroom": {"nodes": 3}, "provisioner": "Karpenter", "scaling": {"maxSize": 12}},
            notebooks={"headroom": {"nodes": 2}},
        )
    )
    warm = {row[0]: row[5] for row in node_group_rows(plan)}
    assert warm["l40s"] == (
        "headroom of 3 running node(s) (gpufleet-headroom placeholders); beyond them, launched per pending pod; an"
        " emptied node stays 5m"
    )
    assert (
        warm["notebooks"] == "headroom of 2 running node(s) (gpufleet-headroom placeholders); warm pool of 2 (Stopped)"
    )
    assert warm["a100-mig"] == "-"
