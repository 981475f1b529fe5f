"""Issue 27: `explain` agrees with Kueue and the API server on the workloads people really submit. Each case carries
the upstream verdict it was decided from (kubernetes-sigs/kueue v0.19.2, kubernetes/kubernetes)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.simulate import api_server
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload

MakeModel = Callable[..., FleetModel]
GPU = "nvidia.com/gpu"


def _pod(limits: dict[str, Any], selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "spec": {
            **({"nodeSelector": selector} if selector else {}),
            "containers": [{"name": "c", "resources": {"limits": limits}}],
            **spec,
        }
    }


def _obj(kind: str, api: str, ns: str, spec: dict[str, Any], name: str = "w") -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


# kueue pkg/controller/jobs/job/job_controller_test.go TestPodsReady: "parallelism > completions; reaching completions
# is enough" (3/2), "parallelism < completions; reaching parallelism is enough" (2/3), "parallelism specified only"
# (3): what Job.podsCount counts; parallelism defaults to 1 (batch/v1 defaulting).
@pytest.mark.parametrize(
    ("parallelism", "completions", "pods"), [(3, 2, 2), (2, 3, 2), (3, None, 3), (None, None, 1), (16, 2, 2), (0, 4, 0)]
)
def test_a_jobs_pods_are_min_of_parallelism_and_completions(
    parallelism: int | None, completions: int | None, pods: int
) -> None:
    spec: dict[str, Any] = {"template": _pod({"cpu": "1"})}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    (ps,) = workload(_obj("Job", "batch/v1", "vision", spec)).pod_sets
    assert ps.count == pods


# kueue pkg/controller/jobs/jobset/jobset_controller_test.go TestPodSets "no annotations": job1 replicas 2,
# parallelism 1, completions 1 -> 2 pods; job2 replicas 3, parallelism 2, completions 3 -> 6 (PodsCountPerReplica).
def test_a_jobsets_pods_are_replicas_times_the_jobs_pods() -> None:
    def rj(name: str, replicas: int, parallelism: int, completions: int) -> dict[str, Any]:
        job = {"parallelism": parallelism, "completions": completions, "template": _pod({"cpu": "1"})}
        return {"name": name, "replicas": replicas, "template": {"spec": job}}

    spec = {"replicatedJobs": [rj("job1", 2, 1, 1), rj("job2", 3, 2, 3)]}
    wl = workload(_obj("JobSet", "jobset.x-k8s.io/v1alpha2", "vision", spec))
    assert [(ps.name, ps.count) for ps in wl.pod_sets] == [("job1", 2), ("job2", 6)]


def test_parallelism_16_completions_2_is_two_full_nodes(make_model: MakeModel) -> None:
    """The issue's Job: 16 x 8 GPUs would pass vision's quota (64 + 32 borrowed); the two pods Kueue counts fit."""
    model = make_model()
    spec = {"parallelism": 16, "completions": 2, "template": _pod({GPU: 8}, {"gpufleet.io/node-group": "h100"})}
    verdict = explain(model, workload(_obj("Job", "batch/v1", "vision", spec)))
    assert verdict.runs, verdict.reasons
    assert (verdict.pods_total, verdict.pods_admitted) == (2, 2)
    assert verdict.json()["pods"] == {"total": 2, "admitted": 2}


def _deployment(ns: str, replicas: int, limits: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    """A server Deployment; its container has a readiness probe (gpufleet-serving-readiness requires one on l40s)."""
    template = _pod(limits, selector)
    for c in template["spec"]["containers"]:
        c["readinessProbe"] = {"tcpSocket": {"port": 8000}}
    return _obj("Deployment", "apps/v1", ns, {"replicas": replicas, "template": template}, "server")


def test_deployment_pods_are_admitted_one_by_one(make_model: MakeModel) -> None:
    """kueue site/content/en/docs/tasks/run/deployment.md: "every Pod from a Deployment is represented as a single
    independent Plain Pod". language has 32 l40s GPUs and may borrow the 8 speech lends: 10 replicas of 4 GPUs are
    admitted, 2 wait for quota; the model used to say the whole Deployment would not run."""
    model = make_model()
    verdict = explain(model, workload(_deployment("language", 12, {GPU: 4}, {"gpufleet.io/node-group": "l40s"})))
    assert not verdict.runs
    assert (verdict.pods_total, verdict.pods_admitted) == (12, 10)
    assert verdict.cluster_queue == "language" and verdict.flavor == "l40s" and verdict.node_group == "l40s"
    (reason,) = verdict.reasons
    assert reason.stage == "admission"
    # the quota the 10 admitted pods hold (flavorassigner.go fitsResourceQuota: "insufficient unused quota")
    assert reason.message == (
        "couldn't assign flavors to pod set main: flavor h100 doesn't match node affinity, insufficient unused quota"
        " for nvidia.com/gpu in flavor l40s, 4 more needed, flavor notebooks doesn't match node affinity"
    )
    # issue 41 item 17: the team targets l40s already; the fix said "select a node group the team has quota on"
    assert reason.fix == (
        "raise the team's quota on that node group (teams[].quotas[].gpus), lower the replicas or what each pod asks"
        " for, or borrow from the cohort (teams[].quotas[].borrowingLimit)"
    )
    assert verdict.json()["pods"] == {"total": 12, "admitted": 10}


# kueue test/e2e/singlecluster/baseline/deployment_test.go "should admit workloads that fits": 3 replicas of 200m
# CPU under a 5-CPU ClusterQueue all become ready.
def test_a_deployment_that_fits_runs_whole(make_model: MakeModel) -> None:
    model = make_model()
    verdict = explain(model, workload(_deployment("vision", 3, {"cpu": "200m"}, {"gpufleet.io/node-group": "h100"})))
    assert verdict.runs, verdict.reasons
    assert (verdict.pods_total, verdict.pods_admitted) == (3, 3)


def test_deployment_pods_beyond_the_groups_nodes_wait_for_nodes(make_model: MakeModel) -> None:
    """Outside Kueue (namespace default) the pods are scheduled one by one too: 12 nodes of l40s hold 12 of 13."""
    model = make_model()
    tolerate = [{"key": "gpufleet.io/serving", "operator": "Exists", "effect": "NoSchedule"}]
    obj = _deployment("default", 13, {GPU: 4}, {"gpufleet.io/node-group": "l40s"})
    obj["spec"]["template"]["spec"]["tolerations"] = tolerate
    verdict = explain(model, workload(obj))
    assert (verdict.runs, verdict.pods_total, verdict.pods_admitted) == (False, 13, 12)
    assert verdict.reasons[0].stage == "autoscaler"
    assert verdict.reasons[0].message == "node group l40s may grow to 12 node(s); 13 pod(s) of this shape need 13"


def test_a_statefulset_stays_all_or_nothing(make_model: MakeModel) -> None:
    """kueue pkg/controller/jobs/statefulset: the StatefulSet's pods are one pod group, admitted together."""
    model = make_model()
    obj = _deployment("language", 12, {GPU: 4}, {"gpufleet.io/node-group": "l40s"})
    obj["kind"] = "StatefulSet"
    verdict = explain(model, workload(obj))
    assert (verdict.runs, verdict.pods_total, verdict.pods_admitted) == (False, 12, 0)


def test_a_pod_with_no_requests_is_admitted_with_no_flavor(make_model: MakeModel) -> None:
    """flavorassigner.go assignFlavors: no requests, no flavor, admitted; no nodeSelector is injected, so it lands
    on the untainted system nodes."""
    model = make_model()
    obj = _obj("Pod", "v1", "vision", {"containers": [{"name": "c"}]}, "idle")
    verdict = explain(model, workload(obj))
    assert verdict.runs, verdict.reasons
    assert (verdict.cluster_queue, verdict.flavor, verdict.node_group) == ("vision", None, "system")


def test_a_kind_the_fleet_does_not_serve_stops_at_api(make_model: MakeModel) -> None:
    """Issue 28 item 3: the fleet installs no PyTorchJob CRD, so `kubectl apply` fails at the REST mapping
    (apimachinery pkg/api/meta/errors.go NoKindMatchError) before Kueue or authorization see it."""
    model = make_model()
    obj = _obj("PyTorchJob", "kubeflow.org/v1", "vision", {"pytorchReplicaSpecs": {"Worker": {"template": _pod({})}}})
    verdict = explain(model, workload(obj), "arn:aws:iam::111122223333:role/language-researchers")
    (reason,) = verdict.reasons
    assert (verdict.runs, reason.stage) == (False, "api")
    assert reason.message == (
        'no matches for kind "PyTorchJob" in version "kubeflow.org/v1": the fleet installs no PyTorchJob API'
        " (kubectl apply fails before Kueue sees it)"
    )
    assert reason.fix.startswith("the fleet installs no PyTorchJob CRD or controller")
    assert verdict.json()["pods"] == {"total": 1, "admitted": 0}


def test_a_built_in_kind_at_a_version_not_served_stops_at_api(make_model: MakeModel) -> None:
    verdict = explain(make_model(), workload(_obj("Job", "batch/v2", "vision", {"template": _pod({"cpu": "1"})})))
    assert verdict.reasons[0].stage == "api"
    assert (
        verdict.reasons[0].message
        == 'no matches for kind "Job" in version "batch/v2": this fleet serves Job at batch/v1'
    )
    assert verdict.reasons[0].fix == "set apiVersion: batch/v1"


def test_served_kinds_come_from_what_the_plan_installs(make_model: MakeModel, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = make_model().plan
    # the example fleet installs JobSet, the Trainer and LWS (gpufleet.plan.manifests.workloads)
    assert api_server.served_kinds(plan) == {
        **api_server.BUILT_IN,
        "JobSet": ("jobset.x-k8s.io/v1alpha2",),
        "TrainJob": ("trainer.kubeflow.org/v1alpha1",),
        "TrainingRuntime": ("trainer.kubeflow.org/v1alpha1",),
        "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1",),
        "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",),
    }
    # a chart of the plan that installs a CRD serves its kinds
    monkeypatch.setattr(api_server, "CHART_KINDS", {"kueue": {"RayJob": ("ray.io/v1",)}})
    assert api_server.served_kinds(plan)["RayJob"] == ("ray.io/v1",)
    assert "JobSet" not in api_server.served_kinds(plan)
    # and so does a CustomResourceDefinition the plan applies itself
    stage = plan.stages[0]
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "kubeflow.org",
            "names": {"kind": "PyTorchJob"},
            "versions": [{"name": "v1", "served": True}, {"name": "v1beta1", "served": False}],
        },
    }
    resource = dataclasses.replace(stage.content.resources[0], args={"object": crd})
    content = dataclasses.replace(stage.content, resources=(*stage.content.resources, resource))
    with_crd = dataclasses.replace(plan, stages=(dataclasses.replace(stage, content=content), *plan.stages[1:]))
    assert api_server.served_kinds(with_crd)["PyTorchJob"] == ("kubeflow.org/v1",)


def test_node_choice_prefers_existing_nodes_over_scale_up(make_model: MakeModel) -> None:
    """A 1-GPU pod outside Kueue that tolerates every group: kube-scheduler places it on a node that exists (l40s
    keeps 2); the autoscaler would only act on a pod the scheduler could not place. The model took h100, the first
    group by order, which scales from zero."""
    model = make_model()
    obj = _obj("Pod", "v1", "default", _pod({GPU: 1}, tolerations=[{"operator": "Exists"}])["spec"])
    verdict = explain(model, workload(obj))
    assert verdict.runs and verdict.node_group == "l40s", verdict


def test_a_resource_of_a_stage_the_rollout_has_not_reached_names_the_stage(make_model: MakeModel) -> None:
    """dev rolls out through admission (stage 3); the EFA device plugin comes with the network stage (5). The model
    said "ask for at most what one node offers"; the reason now names the stage and the field to change."""
    model = make_model(env="dev")
    limits = {GPU: 8, "vpc.amazonaws.com/efa": 32}
    verdict = explain(model, workload(_obj("Job", "batch/v1", "vision", _job_spec(limits, "h100"))))
    (reason,) = verdict.reasons
    assert reason.stage == "scheduling"
    assert reason.message == (
        "Insufficient vpc.amazonaws.com/efa on node group h100: vpc.amazonaws.com/efa is advertised by the EFA device"
        " plugin, which the network stage (stage 5) installs; environment dev rolls out through admission (stage 3)"
    )
    assert reason.fix == (
        "roll out through network (environments.dev.rollout.through), or ask for no vpc.amazonaws.com/efa"
    )
    assert reason.spec_path == ("environments", "dev", "rollout", "through")
    # through the network stage (prod) the same Job runs
    assert explain(make_model(), workload(_obj("Job", "batch/v1", "vision", _job_spec(limits, "h100")))).runs


def _job_spec(limits: dict[str, Any], group: str) -> dict[str, Any]:
    return {"template": _pod(limits, {"gpufleet.io/node-group": group})}


def test_ephemeral_storage_is_offered_on_modelled_nodes(make_model: MakeModel) -> None:
    """Every node used to offer 0 ephemeral-storage, so any pod asking for it "would not run". A notebook pod asking
    10Gi of scratch runs on the running notebooks node; one asking more than the node's disk does not."""
    model = make_model()
    ok = _obj(
        "Pod",
        "v1",
        "vision",
        _pod({GPU: 1, "ephemeral-storage": "10Gi"}, {"gpufleet.io/node-group": "notebooks"})["spec"],
    )
    assert explain(model, workload(ok)).runs
    big = _obj(
        "Pod",
        "v1",
        "vision",
        _pod({GPU: 1, "ephemeral-storage": "100Ti"}, {"gpufleet.io/node-group": "notebooks"})["spec"],
    )
    verdict = explain(model, workload(big))
    assert not verdict.runs and "Insufficient ephemeral-storage on node group notebooks" in verdict.reasons[0].message


def _daemonset(ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return _obj("DaemonSet", "apps/v1", ns, {"template": {"spec": spec}}, "agent")


def test_a_daemonset_in_a_team_namespace_stays_pending(make_model: MakeModel) -> None:
    """kueue v0.19.2 pod_webhook.go Default: FindAncestorJobManagedByKueue stops at the DaemonSet (not a kind Kueue
    manages), the pod gets the `default` LocalQueue, is admitted to the first flavor that fits (vision: h100) and
    gets its nodeSelector; the DaemonSet's pods for the untainted system nodes can never match it. The model placed
    them on the system nodes."""
    model = make_model()
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    verdict = explain(model, workload(_daemonset("vision", spec)))
    assert (verdict.runs, verdict.cluster_queue, verdict.flavor) == (False, "vision", "h100")
    assert verdict.json()["pods"] == {"total": 1, "admitted": 0}
    (reason,) = verdict.reasons
    assert reason.stage == "scheduling"
    assert reason.message.endswith(
        "gets its nodeSelector gpufleet.io/node-group=h100, which conflicts with the DaemonSet's node affinity for its"
        " node on node group system: those pods stay Pending"
    )
    # outside the team namespaces Kueue leaves it alone: it runs on the system nodes
    outside = explain(model, workload(_daemonset("default", spec)))
    assert (outside.runs, outside.node_group) == (True, "system")


def test_a_daemonset_on_the_flavors_own_group_runs(make_model: MakeModel) -> None:
    model = make_model()
    spec = {
        "nodeSelector": {"gpufleet.io/node-group": "h100"},
        "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
    }
    verdict = explain(model, workload(_daemonset("vision", spec)))
    assert (verdict.runs, verdict.flavor, verdict.node_group) == (True, "h100", "h100"), verdict.reasons


def test_a_daemonset_pods_queue_comes_from_its_pod_template(make_model: MakeModel) -> None:
    """The pod's own queue-name label (pod_webhook_test.go "default queue is created, pod has queue label"): a
    LocalQueue vision does not have stops its pods at admission; the DaemonSet's own labels do not reach its pods."""
    model = make_model()
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    obj = _daemonset("vision", spec)
    obj["spec"]["template"]["metadata"] = {"labels": {"kueue.x-k8s.io/queue-name": "nope"}}
    verdict = explain(model, workload(obj))
    assert verdict.reasons[0].stage == "admission"
    assert verdict.reasons[0].message == "LocalQueue nope doesn't exist"
    obj = _daemonset("vision", spec)
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "nope"}
    assert explain(model, workload(obj)).reasons[0].stage == "scheduling"  # the default LocalQueue, as before
