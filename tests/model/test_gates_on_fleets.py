"""The gates on whole fleets: the contradictions of issue 11, each as a fleet that has it, and the node model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from gpufleet.simulate import device_plugin
from gpufleet.simulate.canonical import canonical, rendered
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload
from tests.model.conftest import group, serving_every_kind

MakeModel = Callable[..., FleetModel]


def _job(
    ns: str,
    limits: dict[str, Any],
    selector: dict[str, str],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {"nodeSelector": selector, "containers": [{"name": "c", "resources": {"limits": limits}}]}
    }
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": ns, "labels": labels or {}},
        "spec": {"template": template},
    }


def test_node_model_of_p5(make_model: MakeModel) -> None:
    node = make_model().nodes["h100"]
    assert node.labels["gpufleet.io/node-group"] == "h100"
    assert [t["key"] for t in node.taints] == ["nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    assert node.allocatable["nvidia.com/gpu"] == 8 and node.allocatable["vpc.amazonaws.com/efa"] == 32
    assert node.per_numa["nvidia.com/gpu"] == {0: 4, 1: 4}
    assert node.template is not None and node.template["resources"]["vpc.amazonaws.com/efa"] == 32
    notebooks = make_model().nodes["notebooks"]
    assert notebooks.allocatable["nvidia.com/gpu"] == 4 and notebooks.fail_requests_greater_than_one


def test_single_numa_node_rejects_the_full_node_bandwidth_gate(make_model: MakeModel) -> None:
    """Contradiction 1: with podShape FullNode the NCCL gate asks for 8 GPUs and every EFA device on a 2-NUMA p5 under
    single-numa-node."""

    def edit(d: dict[str, Any]) -> None:
        group(d, "h100")["topology"] = {
            "policy": "single-numa-node",
            "scope": "pod",
            "placement": "None",
            "podShape": "FullNode",
        }

    model = make_model(edit)
    gate = next(w for w in rendered(model) if w.name == "nccl-gate-h100")
    verdict = explain(model, gate)
    assert not verdict.runs
    assert verdict.reasons[0].stage == "kubelet"
    assert verdict.reasons[0].spec_path == ("nodeGroups", 0, "topology", "policy")
    assert "TopologyAffinityError on node group h100" in verdict.reasons[0].message


def test_single_numa_node_admits_the_one_numa_node_gate_and_canonical_pod(make_model: MakeModel) -> None:
    """issue 29 item 17: podShape OneNumaNode (the default under single-numa-node) gives the gate one pod per NUMA node
    (4 GPUs, 16 EFA devices) and the canonical pod one NUMA node's share: the kubelet admits both."""

    def edit(d: dict[str, Any]) -> None:
        group(d, "h100")["topology"] = {"policy": "single-numa-node", "scope": "pod", "placement": "None"}

    model = make_model(edit)
    gate = next(w for w in rendered(model) if w.name == "nccl-gate-h100")
    assert explain(model, gate).runs
    pod = canonical(model, model.plan.fleet.node_group("h100"))
    assert explain(model, pod).runs


def test_restricted_admits_the_full_node_pod(make_model: MakeModel) -> None:
    def edit(d: dict[str, Any]) -> None:
        group(d, "h100")["topology"] = {"policy": "restricted", "scope": "pod", "placement": "None"}

    model = make_model(edit)
    gate = next(w for w in rendered(model) if w.name == "nccl-gate-h100")
    assert explain(model, gate).runs
    assert explain(model, canonical(model, model.plan.fleet.node_group("h100"))).runs


def test_single_numa_node_rejects_tp8_inference_on_g6e_48xlarge(make_model: MakeModel) -> None:
    def edit(d: dict[str, Any]) -> None:
        g = group(d, "l40s")
        g["instanceType"] = "g6e.48xlarge"
        g["topology"] = {"policy": "single-numa-node"}

    model = make_model(edit)
    job = workload(
        _job(
            "language",
            {"nvidia.com/gpu": 8, "cpu": "64", "memory": "256Gi"},
            {"gpufleet.io/node-group": "l40s"},
            {"kueue.x-k8s.io/queue-name": "language"},
        )
    )
    verdict = explain(model, job)
    assert not verdict.runs and verdict.reasons[0].stage == "kubelet"


def test_tas_flavor_on_a_group_scaling_from_zero_admits_nothing(make_model: MakeModel) -> None:
    """Contradiction 2: TAS counts Ready nodes only; minSize 0 and no ProvisioningRequest check: never admitted."""

    def edit(d: dict[str, Any]) -> None:
        group(d, "h100")["topology"] = {"policy": "restricted", "placement": "Required"}

    model = make_model(edit)
    job = _job(
        "vision",
        {"nvidia.com/gpu": 8},
        {"gpufleet.io/node-group": "h100"},
        {"kueue.x-k8s.io/queue-name": "vision"},
        {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"},
    )
    verdict = explain(model, workload(job))
    assert not verdict.runs and verdict.reasons[0].stage == "admission"
    assert 'topology "aws-network" allows to fit only 0 out of 1 pod(s)' in verdict.reasons[0].message


def test_mixed_queue_refuses_a_plain_job_on_the_tas_flavor(make_model: MakeModel) -> None:
    """Contradiction 3: the documented example Job has no topology request; the TAS flavor refuses it."""

    def edit(d: dict[str, Any]) -> None:
        group(d, "h100")["topology"] = {"policy": "restricted", "placement": "Preferred"}

    model = make_model(edit)
    verdict = explain(
        model,
        workload(
            _job(
                "vision",
                {"nvidia.com/gpu": 8},
                {"gpufleet.io/node-group": "h100"},
                {"kueue.x-k8s.io/queue-name": "vision"},
            )
        ),
    )
    assert not verdict.runs
    assert 'Flavor "h100" supports only TopologyAwareScheduling' in verdict.reasons[0].message


@pytest.mark.parametrize(
    "kind, api, wrap",
    [
        ("Pod", "v1", lambda pod: pod),
        ("Job", "batch/v1", lambda pod: {"template": pod}),
        ("Deployment", "apps/v1", lambda pod: {"replicas": 1, "template": pod}),
        (
            "JobSet",
            "jobset.x-k8s.io/v1alpha2",
            lambda pod: {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": pod}}}]},
        ),
        (
            "TrainJob",
            "trainer.kubeflow.org/v1alpha1",
            lambda pod: {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": 1, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}},
            },
        ),
        (
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io/v1",
            lambda pod: {"replicas": 1, "leaderWorkerTemplate": {"size": 1, "workerTemplate": pod}},
        ),
    ],
)
def test_gpu_workload_without_queue_label_cannot_escape_its_team_queue(
    make_model: MakeModel, kind: str, api: str, wrap: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    """Contradiction 4: with manageJobsWithoutQueueName false, a GPU workload naming no queue ran outside every
    quota. The team namespace's LocalQueue "default" now takes it to the team's ClusterQueue, whatever its kind."""
    model = serving_every_kind(make_model())
    pod = {
        "spec": {
            "nodeSelector": {"gpufleet.io/node-group": "notebooks"},
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
        }
    }
    spec = wrap(pod) if kind != "Pod" else pod["spec"]
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "w", "namespace": "vision"}, "spec": spec}
    verdict = explain(model, workload(obj))
    assert verdict.cluster_queue == "vision", verdict


def test_time_slicing_refuses_two_shared_gpus(make_model: MakeModel) -> None:
    model = make_model()
    node = model.nodes["notebooks"]
    job = workload(
        _job(
            "vision",
            {"nvidia.com/gpu": 2},
            {"gpufleet.io/node-group": "notebooks"},
            {"kueue.x-k8s.io/queue-name": "vision"},
        )
    )
    assert (
        device_plugin.allocate_error(node, job.pod_sets[0].pod)
        == "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1"
    )
    verdict = explain(model, job)
    assert not verdict.runs and verdict.reasons[0].stage == "device-plugin"


def test_mig_resource_name_under_single_strategy(make_model: MakeModel) -> None:
    model = make_model()
    job = workload(_job("default", {"nvidia.com/mig-1g.5gb": 1}, {"gpufleet.io/node-group": "a100-mig"}))
    verdict = explain(model, job)
    assert not verdict.runs and verdict.reasons[0].stage == "device-plugin"
    assert "advertises every slice as nvidia.com/gpu" in verdict.reasons[0].message


def _mixed(d: dict[str, Any]) -> None:
    group(d, "a100-mig")["sharing"] = {
        "strategy": "MIG",
        "migStrategy": "Mixed",
        "layout": [{"gpus": 4, "profile": "1g.5gb"}, {"gpus": 4, "profile": "3g.20gb"}],
    }


def test_mig_mixed_advertises_each_profile_and_queues_cover_them(make_model: MakeModel) -> None:
    model = make_model(_mixed)
    node = model.nodes["a100-mig"]
    assert node.mig_strategy == "mixed" and "nvidia.com/gpu" not in node.allocatable
    assert {r: node.allocatable[r] for r in device_plugin.advertised_mig(node)} == {
        "nvidia.com/mig-1g.5gb": 28,
        "nvidia.com/mig-3g.20gb": 8,
    }
    # GPUs 0-3 (NUMA node 0) hold the 1g.5gb slices, GPUs 4-7 (NUMA node 1) the 3g.20gb ones
    assert node.per_numa["nvidia.com/mig-1g.5gb"] == {0: 28, 1: 0} and node.per_numa["nvidia.com/mig-3g.20gb"] == {
        0: 0,
        1: 8,
    }
    for resource in ("nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb"):
        job = workload(
            _job(
                "speech", {resource: 1}, {"gpufleet.io/node-group": "a100-mig"}, {"kueue.x-k8s.io/queue-name": "speech"}
            )
        )
        assert explain(model, job).runs, resource
    assert explain(model, canonical(model, model.plan.fleet.node_group("a100-mig"))).runs


def test_mig_mixed_before_the_sharing_stage_is_whole_gpus(make_model: MakeModel) -> None:
    """dev stops at admission: no MIG manager config yet, so the node advertises whole GPUs and the queues count
    nvidia.com/gpu, and the group's canonical pod still runs."""
    model = make_model(_mixed, env="dev")
    node = model.nodes["a100-mig"]
    assert (
        node.mig_strategy is None and node.allocatable["nvidia.com/gpu"] == 8 and not device_plugin.advertised_mig(node)
    )
    assert explain(model, canonical(model, model.plan.fleet.node_group("a100-mig"))).runs
    queues = [
        r.args["object"]
        for s in model.plan.included()
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == "ClusterQueue"
    ]
    assert queues and not any(
        name.startswith("nvidia.com/mig-")
        for q in queues
        for name in q["spec"]["resourceGroups"][0]["coveredResources"]
    )


def test_mig_mixed_refuses_whole_gpus_and_unknown_profiles(make_model: MakeModel) -> None:
    model = make_model(_mixed)
    queued = explain(
        model,
        workload(
            _job(
                "speech",
                {"nvidia.com/gpu": 1},
                {"gpufleet.io/node-group": "a100-mig"},
                {"kueue.x-k8s.io/queue-name": "speech"},
            )
        ),
    )
    assert (
        not queued.runs and queued.reasons[0].stage == "admission"
    )  # Kueue first: no nvidia.com/gpu quota on that flavor
    verdict = explain(model, workload(_job("default", {"nvidia.com/gpu": 1}, {"gpufleet.io/node-group": "a100-mig"})))
    assert not verdict.runs and verdict.reasons[0].stage == "device-plugin"
    assert (
        verdict.reasons[0].message
        == "nvidia.com/gpu is not advertised on node group a100-mig: MIG strategy mixed advertises each slice by its"
        " profile (nvidia.com/mig-1g.5gb, nvidia.com/mig-3g.20gb)"
    )
    assert (
        verdict.reasons[0].fix
        == "request one of nvidia.com/mig-1g.5gb, nvidia.com/mig-3g.20gb (one MIG slice each) on node group a100-mig"
    )
    verdict = explain(
        model, workload(_job("default", {"nvidia.com/mig-2g.10gb": 1}, {"gpufleet.io/node-group": "a100-mig"}))
    )
    assert (
        verdict.reasons[0].message
        == "nvidia.com/mig-2g.10gb is not advertised on node group a100-mig: its layout has nvidia.com/mig-1g.5gb,"
        " nvidia.com/mig-3g.20gb"
    )


def test_autoscaler_cannot_exceed_max_size(make_model: MakeModel) -> None:
    model = make_model()
    job = _job(
        "speech", {"nvidia.com/gpu": 1}, {"gpufleet.io/node-group": "a100-mig"}, {"kueue.x-k8s.io/queue-name": "speech"}
    )
    job["spec"]["parallelism"] = 4 * 56 + 1  # a100-mig: maxSize 4 nodes x 8 GPUs x 7 slices
    verdict = explain(model, workload(job))
    assert not verdict.runs


def test_without_autoscaler_a_group_at_zero_never_grows(make_model: MakeModel) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["cluster"]["autoscaler"] = "None"

    model = make_model(edit)
    job = workload(
        _job(
            "speech",
            {"nvidia.com/gpu": 1},
            {"gpufleet.io/node-group": "a100-mig"},
            {"kueue.x-k8s.io/queue-name": "speech"},
        )
    )
    verdict = explain(model, job)
    assert not verdict.runs and verdict.reasons[0].stage == "autoscaler"
    assert (
        verdict.reasons[0].message
        == "node group a100-mig keeps 0 node(s) and nothing scales it up (cluster.autoscaler is None); 1 needed"
    )


def test_chart_operands_run_on_every_group_they_serve(make_model: MakeModel) -> None:
    """The pinned charts' node DaemonSets (gpufleet.simulate.operands): the device plugins must reach every group."""
    from gpufleet.simulate.operands import operands

    model = make_model()
    verdicts = {w.name: explain(model, w) for w in operands(model.plan)}
    assert verdicts["nvidia-device-plugin-daemonset"].node_group == "h100, l40s, a100-mig, notebooks"
    assert verdicts["aws-efa-k8s-device-plugin"].node_group == "h100"
    assert all(v.runs for v in verdicts.values())


def test_a_no_execute_taint_the_node_exporter_does_not_tolerate_is_found(make_model: MakeModel) -> None:
    from gpufleet.simulate.operands import operands

    def edit(d: dict[str, Any]) -> None:
        group(d, "a100-mig")["taints"] = [{"key": "example.com/spot", "value": "true", "effect": "NoExecute"}]

    model = make_model(edit)
    exporter = next(w for w in operands(model.plan) if w.name == "prometheus-node-exporter")
    assert explain(model, exporter).runs  # gpufleet adds the NoExecute toleration to the subchart's default
    bare = replace(
        exporter,
        pod_sets=(
            replace(
                exporter.pod_sets[0],
                pod=replace(exporter.pod_sets[0].pod, tolerations=({"operator": "Exists", "effect": "NoSchedule"},)),
            ),
        ),
    )
    verdict = explain(model, bare)
    assert not verdict.runs
    assert (
        verdict.reasons[0].message
        == "node group a100-mig has taint example.com/spot=true:NoExecute the DaemonSet does not tolerate"
    )


def test_chart_controllers_run_on_the_system_nodes(make_model: MakeModel) -> None:
    """The pinned charts' controllers (gpufleet.simulate.controllers) with their chart-default placement."""
    from gpufleet.simulate.controllers import controllers

    model = make_model()
    verdicts = {w.name: explain(model, w) for w in controllers(model.plan)}
    assert set(verdicts) == {
        "gpu-operator",
        "nfd-master",
        "nfd-gc",
        "cluster-autoscaler",
        "prometheus-operator",
        "prometheus",
        "kube-state-metrics",
        "kueue-controller-manager",
        "jobset-controller-manager",
        "kubeflow-trainer-controller-manager",
        "lws-controller-manager",
        "keda-operator",
        "keda-operator-metrics-apiserver",
        "keda-admission-webhooks",
        "s3-csi-controller",
    }
    assert all(v.runs and v.node_group == "system" for v in verdicts.values())


def test_a_controller_with_no_untainted_node_is_a_contradiction_of_the_spec(make_model: MakeModel) -> None:
    """Without system nodes every GPU group is tainted: Kueue's controller (no tolerations) has nowhere to run."""
    from gpufleet.simulate.self_check import contradictions

    model = replace(make_model(), system_nodes=False)
    issues = {i.message: i for i in contradictions(model, [])}
    message = (
        "gpufleet's own Deployment kueue-system/kueue-controller-manager would not run (scheduling): node(s) had"
        " untolerated taint {nvidia.com/gpu: true} on node group h100"
    )
    assert message in issues, sorted(issues)
    assert issues[message].path == ("cluster",)


def test_the_model_has_system_nodes_only_where_the_fleet_has_them(make_model: MakeModel) -> None:
    """mode Create brings cluster.systemNodes (given or defaulted; the rules refuse a spec left without them), mode
    Existing the cluster's own nodes."""
    from gpufleet.simulate.verdict import fleet_model

    plan = make_model().plan
    bare = replace(plan.fleet, cluster=replace(plan.fleet.cluster, system_nodes=None))
    assert make_model().system_nodes
    assert not fleet_model(replace(plan, fleet=bare)).system_nodes
    assert fleet_model(replace(plan, fleet=replace(bare, cluster=replace(bare.cluster, mode="Existing")))).system_nodes


def test_topology_refusal_on_a_mig_group_counts_slices_not_gpus(make_model: MakeModel) -> None:
    """p4d.24xlarge with 1g.5gb under strategy single advertises 56 nvidia.com/gpu slices, 28 per NUMA node (issue
    18)."""

    def edit(d: dict[str, Any]) -> None:
        group(d, "a100-mig")["topology"] = {"policy": "single-numa-node", "scope": "pod", "placement": "None"}

    job = workload(
        _job(
            "speech",
            {"nvidia.com/gpu": 29},
            {"gpufleet.io/node-group": "a100-mig"},
            {"kueue.x-k8s.io/queue-name": "speech"},
        )
    )
    (reason,) = explain(make_model(edit), job).reasons
    assert (
        reason.message
        == "TopologyAffinityError on node group a100-mig: Topology Manager single-numa-node (scope pod) cannot align"
        " the pod's devices and CPUs on one NUMA node; p4d.24xlarge has 2 NUMA nodes with 28 MIG slices"
        " (nvidia.com/gpu) each and the narrowest fit spans 2"
    )
    assert (
        reason.fix
        == "set topology.policy: restricted on node group a100-mig (admits the narrowest NUMA set), or ask for at most"
        " 28 MIG slices (nvidia.com/gpu) per pod"
    )


@pytest.mark.parametrize(("through", "with_sharing"), [("admission", False), ("sharing", True), ("cost", True)])
def test_shared_groups_are_whole_gpus_before_the_sharing_stage(
    make_model: MakeModel, through: str, with_sharing: bool
) -> None:
    """dev (speech: 8 GPUs of a100-mig, MIG 1g.5gb x 7, and 2 of notebooks, time-sliced x 4): without the sharing
    stage no device plugin or MIG manager config is deployed, so the nodes advertise whole GPUs and so do the
    queues; from the sharing stage on, slices and replicas."""

    def edit(d: dict[str, Any]) -> None:
        d["environments"]["dev"]["rollout"]["through"] = through

    model = make_model(edit, env="dev")
    queue = next(
        r.args["object"]
        for s in model.plan.included()
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == "ClusterQueue" and r.args["object"]["metadata"]["name"] == "speech"
    )
    quota = {
        f["name"]: next(r["nominalQuota"] for r in f["resources"] if r["name"] == "nvidia.com/gpu")
        for f in queue["spec"]["resourceGroups"][0]["flavors"]
    }
    assert (quota["a100-mig"], quota["notebooks"]) == ((56, 8) if with_sharing else (8, 2))
    mig, notebooks = model.nodes["a100-mig"], model.nodes["notebooks"]
    assert (mig.allocatable["nvidia.com/gpu"], notebooks.allocatable["nvidia.com/gpu"]) == (
        (56, 4) if with_sharing else (8, 1)
    )
    assert (mig.mig_strategy, notebooks.fail_requests_greater_than_one) == (
        ("single", True) if with_sharing else (None, False)
    )
    # nine devices of a100-mig: nine slices of one node once partitioned; before, more than the 8 GPUs of quota
    nine = explain(
        model,
        workload(
            _job(
                "speech",
                {"nvidia.com/gpu": 9},
                {"gpufleet.io/node-group": "a100-mig"},
                {"kueue.x-k8s.io/queue-name": "speech"},
            )
        ),
    )
    assert nine.runs is with_sharing
    if not with_sharing:
        assert nine.reasons[0].stage == "admission" and "insufficient quota" in nine.reasons[0].message, nine.reasons
    for name in ("a100-mig", "notebooks"):
        assert explain(model, canonical(model, model.plan.fleet.node_group(name))).runs, name
