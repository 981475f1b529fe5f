"""Kueue objects of the admission stage: what each ClusterQueue admits, which nodes each flavor selects, quotas
and limits against the spec, the controller Configuration, priorities, and the stage's wiring."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.builders.node_groups import node_labels
from gpufleet.plan.manifests import kueue
from gpufleet.plan.manifests.sharing import sharing_node_labels
from gpufleet.plan.parts import BuildContext, Resource
from gpufleet.plan.stages import admission as stage
from gpufleet.spec import defaults
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.names import LABEL_NODE_GROUP


def _build(fleet: Fleet, through: str = "cost") -> tuple[dict[str, Resource], Any]:
    content = stage.build(BuildContext(fleet=fleet, environment="prod", through=through))
    return {r.id: r for r in content.resources}, content


def _objects(fleet: Fleet, kind: str) -> dict[str, dict[str, Any]]:
    resources, _ = _build(fleet)
    return {
        r.args["object"]["metadata"]["name"]: r.args["object"]
        for r in resources.values()
        if "object" in r.args and r.args["object"]["kind"] == kind
    }


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics: null selects nothing, {} everything; matchLabels and matchExpressions ANDed."""
    if selector is None:
        return False
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions", []):
        present = expr["key"] in labels
        if expr["operator"] == "In" and not (present and labels[expr["key"]] in expr["values"]):
            return False
        if expr["operator"] == "NotIn" and present and labels[expr["key"]] in expr["values"]:
            return False
    return True


def _ns_labels(name: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name}  # set by the API server on every namespace


# ---------------------------------------------------------------------------------------------------------------
# ClusterQueue: who is admitted


def test_cluster_queue_admits_only_its_team_namespace(fleet: Fleet) -> None:
    queues = _objects(fleet, "ClusterQueue")
    namespaces = ["vision", "speech-ml", "ads", "kube-system", "default", "gpu-operator", "speech"]
    for team in fleet.teams:
        selector = queues[team.name]["spec"]["namespaceSelector"]
        assert selector not in (None, {}), "null admits nothing and {} admits every namespace"
        admitted = [ns for ns in namespaces if _selects(selector, _ns_labels(ns))]
        assert admitted == [team.namespace]


def test_local_queue_points_at_the_team_cluster_queue_in_the_team_namespace(fleet: Fleet) -> None:
    resources, _ = _build(fleet)
    local = [
        r.args["object"] for r in resources.values() if "object" in r.args and r.args["object"]["kind"] == "LocalQueue"
    ]
    # Each team namespace also holds a LocalQueue "default" to the team's queue: Kueue fills it in for any workload
    # that names no queue (kueue v0.19.2 pkg/controller/jobframework/defaults.go), so none escapes the quota.
    assert sorted((q["metadata"]["namespace"], q["metadata"]["name"], q["spec"]["clusterQueue"]) for q in local) == [
        ("ads", "ads", "ads"),
        ("ads", "default", "ads"),
        ("speech-ml", "default", "speech"),
        ("speech-ml", "speech", "speech"),
        ("vision", "default", "vision"),
        ("vision", "vision", "vision"),
    ]


def test_team_namespaces_enforce_pod_security_baseline(fleet: Fleet) -> None:
    namespaces = _objects(fleet, "Namespace")
    assert sorted(namespaces) == ["ads", "speech-ml", "vision"]
    for ns in namespaces.values():
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce-version"] == "v1.33"


# ---------------------------------------------------------------------------------------------------------------
# ResourceFlavor: which nodes


def test_each_flavor_selects_exactly_its_node_group(fleet: Fleet) -> None:
    flavors = _objects(fleet, "ResourceFlavor")
    assert sorted(flavors) == sorted(g.name for g in fleet.node_groups)
    for group in fleet.node_groups:
        # the labels the foundation stage really puts on the group's nodes
        labels = node_labels(group, sharing_node_labels(group))
        matching = [
            name for name, f in flavors.items() if all(labels.get(k) == v for k, v in f["spec"]["nodeLabels"].items())
        ]
        assert matching == [group.name]


def test_flavor_carries_the_group_taints_and_tolerates_exactly_them(fleet: Fleet) -> None:
    flavor = _objects(fleet, "ResourceFlavor")["h100"]["spec"]
    assert flavor["nodeLabels"] == {LABEL_NODE_GROUP: "h100"}
    assert flavor["nodeTaints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NoSchedule"},
    ]
    assert flavor["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "vpc.amazonaws.com/efa", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    ]


def test_spec_taints_reach_the_flavor(make_fleet: Callable[..., Fleet]) -> None:
    def taint(d: dict[str, Any]) -> None:
        d["nodeGroups"][1]["taints"] = [{"key": "example.com/pool", "value": "nb", "effect": "NoExecute"}]

    spec = _objects(make_fleet(taint), "ResourceFlavor")["notebooks"]["spec"]
    assert spec["nodeTaints"][-1] == {"key": "example.com/pool", "value": "nb", "effect": "NoExecute"}
    assert spec["tolerations"][-1] == {
        "key": "example.com/pool",
        "operator": "Equal",
        "value": "nb",
        "effect": "NoExecute",
    }


def test_flavor_keeps_eight_taints_and_the_stage_warns_about_the_rest(make_fleet: Callable[..., Fleet]) -> None:
    def many(d: dict[str, Any]) -> None:
        d["nodeGroups"][0]["taints"] = [
            {"key": f"example.com/t{i}", "value": "x", "effect": "NoSchedule"} for i in range(10)
        ]

    fleet = make_fleet(many)
    spec = _objects(fleet, "ResourceFlavor")["h100"]["spec"]
    assert len(spec["nodeTaints"]) == len(spec["tolerations"]) == 8  # Kueue's MaxItems
    assert [t["key"] for t in spec["nodeTaints"][:3]] == ["nvidia.com/gpu", "vpc.amazonaws.com/efa", "example.com/t0"]
    _, content = _build(fleet)
    assert content.warnings == (
        (
            "flavor h100: a Kueue ResourceFlavor holds at most 8 taints and tolerations, the group has 12: pods"
            " admitted there must tolerate the rest themselves (example.com/t6, example.com/t7, example.com/t8 and 1"
            " more)"
        ),
    )


@pytest.mark.parametrize(
    ("instance", "fabric", "explicit", "fixed", "only_tas_teams", "expected"),
    [
        # EFA on a type EKS labels with network topology, fixed size, its teams use no other group: TAS counts it all
        ("p5.48xlarge", "EFA", None, True, True, "Preferred"),
        # scales from zero: TAS counts only Ready nodes and nothing scales a group for a workload it never admits
        ("p5.48xlarge", "EFA", None, False, True, "None"),
        # a team also has quota on a non-TAS group: its queue would refuse plain jobs on the TAS flavor
        ("p5.48xlarge", "EFA", None, True, False, "None"),
        (
            "g5.48xlarge",
            "EFA",
            None,
            True,
            True,
            "None",
        ),  # EFA, but EC2 reports no topology for g5: no labels, no capacity
        ("p5.48xlarge", "None", None, True, True, "None"),
        ("p5.48xlarge", "EFA", "Required", False, False, "Required"),
        ("p5.48xlarge", "EFA", "None", True, True, "None"),
    ],
)
def test_placement_resolution(
    make_fleet: Callable[..., Fleet],
    instance: str,
    fabric: str,
    explicit: str | None,
    fixed: bool,
    only_tas_teams: bool,
    expected: str,
) -> None:
    def edit(d: dict[str, Any]) -> None:
        g = d["nodeGroups"][0]
        g["instanceType"], g["fabric"] = instance, fabric
        if fixed:
            g["scaling"] = {"minSize": 4, "maxSize": 4}
        if only_tas_teams:
            d["teams"] = [t for t in d["teams"] if all(q["nodeGroup"] == "h100" for q in t["quotas"])]
        if explicit is not None:
            g["topology"] = {"placement": explicit}

    fleet = make_fleet(edit)
    group = fleet.node_group("h100")
    assert defaults.placement(fleet, group) == expected
    flavor = kueue.resource_flavor(fleet, group)["spec"]
    assert flavor.get("topologyName") == (None if expected == "None" else kueue.TOPOLOGY_NAME)
    topologies = _objects(fleet, "Topology")
    assert (kueue.TOPOLOGY_NAME in topologies) == (expected != "None")


def test_topology_levels_are_the_eks_network_layers_then_the_host() -> None:
    assert kueue.topology()["spec"]["levels"] == [
        {"nodeLabel": "topology.k8s.aws/network-node-layer-1"},
        {"nodeLabel": "topology.k8s.aws/network-node-layer-2"},
        {"nodeLabel": "topology.k8s.aws/network-node-layer-3"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]


# ---------------------------------------------------------------------------------------------------------------
# Quotas


@pytest.mark.parametrize(
    ("vcpus", "milli"),
    [(1, 60), (2, 70), (4, 80), (8, 90), (192, 550)],  # nodeadm getCPUMillicoresToReserve
)
def test_kube_reserved_cpu_follows_nodeadm(vcpus: int, milli: int) -> None:
    assert kueue.kube_reserved_cpu_milli(vcpus) == milli


def test_per_gpu_shape_of_a_p5_training_node(fleet: Fleet) -> None:
    # p5.48xlarge: 192 vCPU, 2097152 MiB, 8 GPUs, 32 EFA, maxPods 100; Training => Topology Manager reserve too.
    # CPU: 192000 - (550 kube-reserved + 1000 system-reserved + 1000 DaemonSets) = 189450 / 8
    # memory: 2097152 - (11*100+255 + 100 eviction + 2048 system-reserved + 2048 DaemonSets) = 2091601 / 8
    shape = kueue.per_gpu(fleet.node_group("h100"))
    assert shape == kueue.PerGpu(devices=1, cpu_milli=23681, memory_mib=261450, efa=4.0)


def test_per_gpu_shape_of_a_time_sliced_g5(fleet: Fleet) -> None:
    # g5.xlarge: 4 vCPU, 16384 MiB, 1 GPU, maxPods 58; Interactive => no Topology Manager reserve.
    shape = kueue.per_gpu(fleet.node_group("notebooks"))
    assert shape == kueue.PerGpu(
        devices=4, cpu_milli=4000 - 80 - 1000, memory_mib=16384 - (11 * 58 + 255 + 100 + 2048), efa=0.0
    )


def _flavor(queue: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    group = queue["spec"]["resourceGroups"][0]
    flavor = next(f for f in group["flavors"] if f["name"] == name)
    return {r["name"]: {k: v for k, v in r.items() if k != "name"} for r in flavor["resources"]}


def test_quota_borrowing_and_lending_follow_the_spec(fleet: Fleet) -> None:
    vision = _objects(fleet, "ClusterQueue")["vision"]
    assert vision["spec"]["cohortName"] == "research"
    assert vision["spec"]["resourceGroups"][0]["coveredResources"] == [
        "cpu",
        "memory",
        "nvidia.com/gpu",
        "vpc.amazonaws.com/efa",
    ]
    assert _flavor(vision, "h100") == {
        "cpu": {
            "nominalQuota": str(23681 * 16) + "m",
            "borrowingLimit": str(23681 * 8) + "m",
            "lendingLimit": str(23681 * 4) + "m",
        },
        "memory": {
            "nominalQuota": f"{261450 * 16}Mi",
            "borrowingLimit": f"{261450 * 8}Mi",
            "lendingLimit": f"{261450 * 4}Mi",
        },
        "nvidia.com/gpu": {"nominalQuota": 16, "borrowingLimit": 8, "lendingLimit": 4},
        "vpc.amazonaws.com/efa": {"nominalQuota": 64, "borrowingLimit": 32, "lendingLimit": 16},
    }
    # Time-sliced: 2 GPUs are 8 nvidia.com/gpu devices; no limits given = unlimited borrowing, lend everything.
    assert _flavor(vision, "notebooks") == {
        "cpu": {"nominalQuota": "5840m"},
        "memory": {"nominalQuota": f"{13343 * 2}Mi"},
        "nvidia.com/gpu": {"nominalQuota": 8},
        "vpc.amazonaws.com/efa": {"nominalQuota": 0},
    }


def test_flavors_keep_the_order_of_the_team_quotas(fleet: Fleet) -> None:
    vision = _objects(fleet, "ClusterQueue")["vision"]
    assert [f["name"] for f in vision["spec"]["resourceGroups"][0]["flavors"]] == ["h100", "notebooks"]


def test_efa_quota_rounds_up_so_a_single_gpu_can_ask_for_an_interface(make_fleet: Callable[..., Fleet]) -> None:
    def p4d(d: dict[str, Any]) -> None:
        d["nodeGroups"][0]["instanceType"] = "p4d.24xlarge"  # 8 GPUs, 4 EFA interfaces

    group = make_fleet(p4d).node_group("h100")
    assert [kueue.resource_amounts(group, n)["vpc.amazonaws.com/efa"] for n in (1, 2, 3, 8)] == [1, 1, 2, 4]


def test_no_borrowing_or_lending_limit_without_a_cohort(make_fleet: Callable[..., Fleet]) -> None:
    fleet = make_fleet()
    ads = _objects(fleet, "ClusterQueue")["ads"]["spec"]
    assert "cohortName" not in ads
    assert ads["preemption"] == {"withinClusterQueue": "LowerPriority"}
    for flavor in ads["resourceGroups"][0]["flavors"]:
        for resource in flavor["resources"]:
            assert set(resource) == {"name", "nominalQuota"}
    assert _objects(fleet, "Cohort").keys() == {"research"}


def test_cohort_preemption_is_the_spec_policy_and_spares_non_preemptible_classes(fleet: Fleet) -> None:
    preemption = _objects(fleet, "ClusterQueue")["vision"]["spec"]["preemption"]
    # Default priorities: serving 100000 is not preemptible, training 1000 is the highest preemptible class.
    assert preemption == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1000},
    }


def test_borrow_never_gets_no_threshold(make_fleet: Callable[..., Fleet]) -> None:
    def never(d: dict[str, Any]) -> None:
        d["admission"]["preemption"]["borrowWithinCohort"] = "Never"

    assert _objects(make_fleet(never), "ClusterQueue")["vision"]["spec"]["preemption"]["borrowWithinCohort"] == {
        "policy": "Never"
    }


def test_oversubscribed_flavor_warns_and_exact_fit_does_not(make_fleet: Callable[..., Fleet]) -> None:
    _, content = _build(make_fleet())
    assert content.warnings == ()  # h100: 16 + 16 = 4 nodes x 8; notebooks: 2 + 4 <= 8

    def more(d: dict[str, Any]) -> None:
        d["teams"][2]["quotas"][0]["gpus"] = 7

    _, content = _build(make_fleet(more))
    assert content.warnings == (
        (
            "flavor notebooks: teams' nominal quotas add up to 9 GPUs, more than node group notebooks holds at maxSize "
            "(8 nodes, 8 GPUs): admitted workloads may wait for nodes that never come"
        ),
    )


def _with_mig(d: dict[str, Any]) -> None:
    mig = {
        **d["nodeGroups"][1],
        "name": "a100-mig",
        "instanceType": "p4d.24xlarge",
        "workloadClass": "Batch",
        "scaling": {"minSize": 0, "maxSize": 2},
    }
    d["nodeGroups"].append({**mig, "sharing": {"strategy": "MIG", "profile": "1g.5gb"}})
    d["teams"][2]["quotas"].append({"nodeGroup": "a100-mig", "gpus": 8})
    d["cost"]["gpuHourUsd"]["a100-mig"] = 4.1


@pytest.mark.parametrize(
    ("through", "devices"),
    [
        ("admission", {"notebooks": 4, "a100-mig": 8}),
        ("sharing", {"notebooks": 16, "a100-mig": 56}),
        ("cost", {"notebooks": 16, "a100-mig": 56}),
    ],
)
def test_shared_quotas_count_whole_gpus_before_the_sharing_stage(
    make_fleet: Callable[..., Fleet], through: str, devices: dict[str, int]
) -> None:
    """ads: 4 GPUs of notebooks (time-sliced x 4) and 8 of a100-mig (1g.5gb, 7 per A100). Their device plugin and
    MIG manager configs come with the sharing stage; before it the nodes advertise whole GPUs, and so do the quotas."""
    resources, content = _build(make_fleet(_with_mig), through)
    ads = next(
        r.args["object"]
        for r in resources.values()
        if r.args.get("object", {}).get("kind") == "ClusterQueue" and r.args["object"]["metadata"]["name"] == "ads"
    )
    assert {name: _flavor(ads, name)["nvidia.com/gpu"]["nominalQuota"] for name in devices} == devices
    rows = [line for line in content.notes if line.startswith(("| notebooks |", "| a100-mig |"))]
    per_gpu = (
        ("4 `nvidia.com/gpu`", "7 `nvidia.com/gpu`")
        if through != "admission"
        else ("1 `nvidia.com/gpu`", "1 `nvidia.com/gpu`")
    )
    assert [row.split(" | ")[3] for row in rows] == list(per_gpu)
    note = (
        "Sharing of node groups notebooks, a100-mig takes effect only when the environment reaches the sharing stage:"
        " until then no device plugin or MIG manager config is deployed, their nodes advertise whole `nvidia.com/gpu`,"
        " and the queues count whole GPUs."
    )
    assert (note in content.notes) is (through == "admission")


def test_plan_notes_show_nominal_borrow_and_lend_per_team(fleet: Fleet) -> None:
    _, content = _build(fleet)
    rows = [
        line
        for line in content.notes
        if line.startswith("| vision |") or line.startswith("| ads |") or line.startswith("| speech |")
    ]
    assert rows[0].startswith("| vision | vision | research | h100 | 16 | up to 8 | up to 4 |")
    assert rows[1].startswith(
        "| vision | vision | research | notebooks | 2 | unlimited (cohort's unused quota) | all 2 when unused |"
    )
    assert rows[2].startswith(
        "| speech | speech-ml | research | h100 | 16 | unlimited (cohort's unused quota) | all 16 when unused |"
    )
    assert rows[3].startswith("| ads | ads | - | notebooks | 4 | no (no cohort) | no (no cohort) |")


# ---------------------------------------------------------------------------------------------------------------
# Priorities


def test_priority_classes_match_workload_priority_classes(fleet: Fleet) -> None:
    pcs, wpcs = _objects(fleet, "PriorityClass"), _objects(fleet, "WorkloadPriorityClass")
    assert (
        {n: o["value"] for n, o in pcs.items()}
        == {n: o["value"] for n, o in wpcs.items()}
        == {"serving": 100000, "training": 1000, "batch": 100}
    )
    # preemptionPolicy is about whether a class may evict others at the scheduler, not whether it can be evicted.
    assert {n: o["preemptionPolicy"] for n, o in pcs.items()} == {
        "serving": "PreemptLowerPriority",
        "training": "Never",
        "batch": "Never",
    }
    assert all(o["globalDefault"] is False for o in pcs.values())


# ---------------------------------------------------------------------------------------------------------------
# The controller Configuration and the release


def test_configuration_turns_on_all_or_nothing_admission(fleet: Fleet) -> None:
    config = kueue.controller_configuration(fleet)
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["waitForPodsReady"] == {
        # derived: no image sets, so boot and join 180 s + operands 180 s + the pod's own pull (an assumed 10.78 GB in
        # parallel on AL2023 at 0.18 GB/s: 59.813 s, gpufleet.facts.image_pull) = 419.8 s, x1.5, a whole minute up
        # (gpufleet.spec.cold_start)
        "timeout": "660s",
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffLimitCount": 5,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }
    assert "enable" not in config["waitForPodsReady"]  # v1beta1 only
    assert config["integrations"]["frameworks"] == [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "trainer.kubeflow.org/trainjob",
        "pod",
        "deployment",
        "statefulset",
    ]
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ads", "speech-ml", "vision"]}
        ]
    }


def test_plain_pods_are_managed_only_in_team_namespaces(fleet: Fleet) -> None:
    selector = kueue.controller_configuration(fleet)["managedJobsNamespaceSelector"]
    for ns in ("kube-system", "kueue-system", "gpu-operator", "monitoring", "default"):
        assert not _selects(selector, _ns_labels(ns))
    for team in fleet.teams:
        assert _selects(selector, _ns_labels(team.namespace))


# Top-level fields of Configuration in kubernetes-sigs/kueue apis/config/v1beta2/configuration_types.go @v0.19.2
# (Configuration and the inlined ControllerManager). The controller rejects unknown fields when decoding strictly.
CONFIGURATION_FIELDS = {
    "apiVersion", "kind", "namespace", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector", "internalCertManagement",
    "waitForPodsReady", "clientConnection", "integrations", "multiKueue", "fairSharing", "admissionFairSharing", "resources",
    "featureGates", "objectRetentionPolicies", "visibilityServer",
    "webhook", "leaderElection", "metrics", "health", "pprofBindAddress", "controller", "tls",
}  # fmt: skip


def test_configuration_uses_only_v1beta2_fields(fleet: Fleet) -> None:
    config = kueue.controller_configuration(fleet)
    assert set(config) <= CONFIGURATION_FIELDS
    assert set(config["waitForPodsReady"]) <= {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"}
    assert set(config["waitForPodsReady"]["requeuingStrategy"]) <= {
        "timestamp",
        "backoffLimitCount",
        "backoffBaseSeconds",
        "backoffMaxSeconds",
    }
    assert set(config["integrations"]) <= {"frameworks", "externalFrameworks", "labelKeysToCopy"}
    assert set(config["resources"]) <= {
        "quotaCheckStrategy",
        "excludeResourcePrefixes",
        "transformations",
        "deviceClassMappings",
    }


def test_release_carries_the_configuration_as_the_chart_expects(fleet: Fleet) -> None:
    resources, _ = _build(fleet)
    release = resources[stage.HELM_ID]
    assert release.args["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release.args["version"] == "0.19.2"
    values = release.args["values"]
    assert yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"]) == kueue.controller_configuration(
        fleet
    )
    assert values["enablePrometheus"] is True  # the telemetry stage brings the ServiceMonitor CRD
    resources, _ = _build(fleet, through="admission")  # (telemetry is stage 2, so it is still included)
    assert resources[stage.HELM_ID].args["values"]["enablePrometheus"] is True
    resources, _ = _build(fleet, through="foundation")
    assert resources[stage.HELM_ID].args["values"]["enablePrometheus"] is False


# ---------------------------------------------------------------------------------------------------------------
# Wiring


def _depends_on_transitively(resources: dict[str, Resource], rid: str, target: str) -> bool:
    seen: set[str] = set()
    stack = [rid]
    while stack:
        current = stack.pop()
        if current == target:
            return True
        if current in seen or current not in resources:
            continue
        seen.add(current)
        stack.extend(resources[current].depends_on)
    return False


def test_every_kueue_object_waits_for_the_kueue_release(fleet: Fleet) -> None:
    resources, _ = _build(fleet)
    kueue_objects = [
        r for r in resources.values() if "object" in r.args and r.args["object"]["apiVersion"] == kueue.API
    ]
    # flavors, queues, cohort, local queues (the team's and "default" per namespace), WPCs; no Topology: the EFA
    # group scales from zero, so TAS could not count its capacity
    assert len(kueue_objects) == 2 + 3 + 1 + 6 + 3
    for res in kueue_objects:
        assert stage.HELM_ID in res.depends_on or _depends_on_transitively(resources, res.id, stage.HELM_ID), res.id
    local = next(
        r
        for r in kueue_objects
        if r.args["object"]["kind"] == "LocalQueue" and r.args["object"]["metadata"]["name"] == "speech"
    )
    assert "namespace-cluster-speech-ml" in local.depends_on


def test_no_teams_means_no_kueue(make_fleet: Callable[..., Fleet]) -> None:
    def no_teams(d: dict[str, Any]) -> None:
        d["teams"] = []

    resources, content = _build(make_fleet(no_teams))
    assert resources == {}
    assert content.notes == (
        "No teams: nothing to admit, so Kueue is not installed, nor the job APIs it admits (workloads).",
    )


@pytest.mark.parametrize("version", COMPONENTS["kueue"].supported)
def test_release_values_exist_in_the_pinned_chart(fleet: Fleet, version: str) -> None:
    from tests.upstream import chart_values, unknown_value_keys

    defaults = chart_values("kueue", version)
    values = kueue.helm_values(fleet, prometheus=True)
    assert list(unknown_value_keys(values, defaults)) == []
    assert set(values["controllerManager"]["podDisruptionBudget"]) <= set(
        defaults["controllerManager"]["podDisruptionBudget"]
    )


def test_tas_flavors_and_the_topology_are_replaced_on_immutable_changes() -> None:
    # The pinned CRDs' CEL rules reject updates of these fields; Pulumi must replace (names are fixed: delete first).
    from dataclasses import replace
    from pathlib import Path

    from gpufleet.components.recording import record
    from gpufleet.plan.rollout import build_plan
    from gpufleet.rules.pipeline import load_fleet

    base = load_fleet(str(Path(__file__).resolve().parents[2] / "fleet.yaml"), "dev").environments["dev"]
    groups = tuple(
        replace(g, topology=replace(g.topology, placement="Required")) if g.name == "h100" else g
        for g in base.node_groups
    )
    fleet = replace(base, node_groups=groups)
    content = stage.build(BuildContext(fleet=fleet, environment="dev", through="admission"))
    options = {
        r.id: (r.replace_on_changes, r.delete_before_replace)
        for r in content.resources
        if r.type.endswith((":ResourceFlavor", ":Topology"))
    }
    tas = {
        r.id
        for r in content.resources
        if r.type.endswith(":ResourceFlavor") and "topologyName" in r.args["object"]["spec"]
    }
    assert tas == {"resourceflavor-cluster-h100"}
    assert options["resourceflavor-cluster-h100"] == (
        ("spec.nodeLabels", "spec.tolerations", "spec.topologyName"),
        True,
    )
    assert options["topology-cluster-aws-network"] == (("spec.levels",), True)
    assert all(options[i] == ((), False) for i in options if i not in tas and not i.startswith("topology-"))
    # What synth records through Pulumi's resource options (inventory.json's replaceOnChanges / deleteBeforeReplace).
    recorded = {
        r.name: (r.replace_on_changes, r.delete_before_replace)
        for r in record(build_plan(fleet, "dev"))
        if r.name in options
    }
    assert recorded == options


def test_pods_ready_timeout_defaults_to_the_slowest_cold_start() -> None:
    # Before: 600 s (the example's value), shorter than a p5 group scaling from zero with a pre-pulled framework image.
    from pathlib import Path

    from gpufleet.rules.pipeline import load_fleet
    from gpufleet.spec import cold_start

    fleet = load_fleet(str(Path(__file__).resolve().parents[2] / "fleet.yaml"), "prod").environments["prod"]
    assert fleet.admission.pods_ready_timeout_seconds is None
    # Every group: boot and join 180 s + one image pull (an assumed 10.78 GB: in parallel at 0.18 GB/s, 59.813 s;
    # notebooks with containerd's own pull at 0.096 GB/s, 112.33 s; gpufleet.facts.image_pull) + operands 180 s. A warm
    # pool does not shorten it (issue 45 item 4: the timeout follows the cold figure; a scale-up past the pool's
    # minSize starts cold nodes), so notebooks is no longer 60 s + 180 s.
    assert {g.name: round(cold_start.group_seconds(fleet, g), 2) for g in fleet.node_groups} == {
        "h100": 419.81,
        "l40s": 419.81,
        "a100-mig": 419.81,
        "notebooks": 472.33,
    }
    # Issue 41 item 9: a serving pod on l40s is Ready only after its weights and warm-up: 419.81 s + its node's share
    # of 203 GB (a replica of 8 GPUs spans two 4-GPU g6e.12xlarge: 101.5 GB each) from S3 at 100 Gbps / 8 = 12.5 GB/s
    # (8.12 s) + 60 s warm-up = 487.93 s; x1.5 = 731.9 s -> 780 s.
    ready = {g.name: round(cold_start.ready_seconds(fleet, g), 1) for g in fleet.node_groups}
    assert ready == {"h100": 419.8, "l40s": 487.9, "a100-mig": 419.8, "notebooks": 472.3}
    assert cold_start.default_timeout_seconds(fleet) == (780, "l40s")
    assert kueue.controller_configuration(fleet)["waitForPodsReady"]["timeout"] == "780s"
