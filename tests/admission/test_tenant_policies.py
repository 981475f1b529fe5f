"""Issue 31's holes, each as a planted request: the policies the plan rendered before the fix (every rendered
policy but the tenant ones) admit it, the rendered policies deny it now, and the legitimate requests next to it
still pass. The CEL is evaluated with cel-python on the request as the API server would see it (tests/admission/vap.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.plan.manifests import tenancy
from gpufleet.plan.manifests import tenant_policies as tp
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.spec.names import LABEL_PRIORITY_CLASS
from tests.admission.conftest import build_fleet
from tests.admission.vap import JOB_CONTROLLER, Request, denied_by, message, policies

ADMIN = ("platform-admins", "system:authenticated")
QUEUE = {"kueue.x-k8s.io/queue-name": "vision"}
MANAGED = {"app.kubernetes.io/managed-by": "gpufleet"}
# checkpoints with the teams' S3 claims (checkpoints.mountpoint)
CLAIMS = {
    "bucket": "team-checkpoints",
    "modelParameters": 8_000_000_000,
    "meanTimeBetweenFailuresHours": 6,
    "mountpoint": {},
}


def _plan(*edits: Any) -> RolloutPlan:
    return build_plan(build_fleet(*edits), "prod")


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    return _plan()


def _open_then_closed(plan: RolloutPlan, request: Request, policy: str) -> None:
    assert denied_by(plan, request, without=tp.POLICIES) == [], "the hole is not open before the fix"
    assert policy in denied_by(plan, request)


def _admitted(plan: RolloutPlan, request: Request) -> None:
    assert denied_by(plan, request) == []


def pod_spec(priority: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if priority is not None:
        spec["priorityClassName"] = priority
    return spec


def job(
    labels: dict[str, str] | None = None, priority: str | None = None, owner: tuple[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "train", "namespace": "vision", "labels": {**QUEUE, **(labels or {})}}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": "p", "uid": "u", "controller": True}
        ]
        del meta["labels"]["kueue.x-k8s.io/queue-name"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"template": {"spec": pod_spec(priority)}},
    }


def pod(priority: str | None = None, labels: dict[str, str] | None = None, owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "vision", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": owner, "name": "j", "uid": "u", "controller": True}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(priority)}


# ---------------------------------------------------------------------------------------------------------------
# 1. Priorities


def test_default_priorities_serving_only_with_inference_quota() -> None:
    from gpufleet.spec import defaults

    def inference(data: dict[str, Any]) -> None:
        data["nodeGroups"][1]["workloadClass"] = "Inference"
        data["nodeGroups"][1]["sharing"]["acknowledgeNoIsolation"] = True

    fleet = build_fleet()
    assert {t.name: defaults.team_priorities(fleet, t) for t in fleet.teams} == {
        "vision": ("training", "batch"),
        "speech": ("training", "batch"),
        "ads": ("training", "batch"),
    }
    fleet = build_fleet(inference)
    assert {t.name: defaults.team_priorities(fleet, t) for t in fleet.teams} == {
        "vision": ("serving", "training", "batch"),
        "speech": ("training", "batch"),
        "ads": ("serving", "training", "batch"),
    }


@pytest.mark.parametrize(
    "obj",
    [
        job({LABEL_PRIORITY_CLASS: "serving"}),  # Kueue's label: wins cohort contention, immune to borrowing preemption
        job(priority="serving"),  # Kueue takes the template's class when the label is absent
        job(priority="system-node-critical"),
        pod("serving"),  # PreemptLowerPriority at the kube-scheduler
        pod(labels={LABEL_PRIORITY_CLASS: "serving"}),  # a plain pod's workload priority
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "vision", "labels": QUEUE},
            "spec": {
                "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": pod_spec("serving")}}}}]
            },
        },
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "vision", "labels": QUEUE},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": {"spec": pod_spec("training")}},
                    "Worker": {"replicas": 3, "template": {"spec": pod_spec("serving")}},
                }
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "vision", "labels": QUEUE},
            "spec": {"template": {"metadata": {}, "spec": pod_spec("serving")}},
        },
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "namespace": "vision", "labels": QUEUE},
            "spec": {
                "leaderWorkerTemplate": {
                    "size": 2,
                    "leaderTemplate": {"spec": pod_spec("training")},
                    "workerTemplate": {"spec": pod_spec("serving")},
                }
            },
        },
    ],
    ids=["job-label", "job-template", "system-class", "pod", "pod-label", "jobset", "pytorchjob", "deployment", "lws"],
)
def test_a_class_the_team_may_not_use_is_refused(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    # from a team member, and from a controller (the Job controller creating the pod is the same breach)
    _open_then_closed(plan, Request(obj, "vision"), tp.PRIORITY_POLICY)
    _open_then_closed(plan, Request(obj, "vision", groups=JOB_CONTROLLER), tp.PRIORITY_POLICY)


def test_the_label_cannot_be_raised_on_a_running_workload(plan: RolloutPlan) -> None:
    before = job({LABEL_PRIORITY_CLASS: "training"})
    _admitted(plan, Request(before, "vision"))
    _open_then_closed(plan, Request(job({LABEL_PRIORITY_CLASS: "serving"}), "vision", old=before), tp.PRIORITY_POLICY)
    # an object admitted before the policy, with a class it now refuses, stays updatable (finalizers)
    legacy = job({LABEL_PRIORITY_CLASS: "serving"})
    _admitted(plan, Request(copy.deepcopy(legacy), "vision", old=legacy))


@pytest.mark.parametrize(
    "obj", [job(), job({LABEL_PRIORITY_CLASS: "training"}), job(priority="batch"), pod("training"), pod()]
)
def test_allowed_classes_pass(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    _admitted(plan, Request(obj, "vision"))


def test_the_spec_grants_serving() -> None:
    def grant(data: dict[str, Any]) -> None:
        data["teams"][0]["priorities"] = ["serving", "training"]

    granted = _plan(grant)
    _admitted(granted, Request(job({LABEL_PRIORITY_CLASS: "serving"}), "vision"))
    assert denied_by(granted, Request(job(priority="batch"), "vision")) == [tp.PRIORITY_POLICY]
    speech = job({LABEL_PRIORITY_CLASS: "serving"})
    speech["metadata"]["namespace"] = "speech-ml"
    assert denied_by(granted, Request(speech, "speech-ml")) == [tp.PRIORITY_POLICY]


# ---------------------------------------------------------------------------------------------------------------
# 2, 3. gpufleet's objects in the team namespace, and the team's own NetworkPolicies


def _rendered(plan: RolloutPlan, kind: str, name: str) -> dict[str, Any]:
    return next(
        r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == kind
        and r.args["object"]["metadata"]["name"] == name
        and r.args["object"]["metadata"].get("namespace") == "vision"
    )


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("NetworkPolicy", tenancy.DEFAULT_DENY),
        ("NetworkPolicy", tenancy.DEFAULT_DENY_EGRESS),
        ("LocalQueue", "vision"),
        ("LocalQueue", "default"),
    ],
)
def test_a_team_cannot_delete_or_change_gpufleets_objects(plan: RolloutPlan, kind: str, name: str) -> None:
    obj = _rendered(plan, kind, name)
    _open_then_closed(plan, Request(None, "vision", old=obj), tp.OWNED_POLICY)
    changed = copy.deepcopy(obj)
    changed["metadata"]["labels"]["x"] = "y"
    _open_then_closed(plan, Request(changed, "vision", old=obj), tp.OWNED_POLICY)
    stripped = copy.deepcopy(obj)
    del stripped["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    _open_then_closed(plan, Request(stripped, "vision", old=obj), tp.OWNED_POLICY)
    # a cluster admin still can
    _admitted(plan, Request(None, "vision", old=obj, groups=ADMIN))


def test_a_team_cannot_delete_its_s3_claim() -> None:
    """A deleted claim leaves its static PersistentVolume Released: it never binds again, the team's pods stay
    Pending on a missing claim until an admin recreates both."""

    def mountpoint(data: dict[str, Any]) -> None:
        data["checkpoints"] = copy.deepcopy(CLAIMS)

    plan = _plan(mountpoint)
    claim = _rendered(plan, "PersistentVolumeClaim", "s3-h100")
    _open_then_closed(plan, Request(None, "vision", old=claim), tp.OWNED_POLICY)
    _admitted(plan, Request(None, "vision", old=claim, groups=ADMIN))


def test_a_team_cannot_delete_or_change_its_weight_prefetch() -> None:
    """The prefetch DaemonSet holds each node's Mountpoint cache (teams[].prefetch): a team member may not delete it
    or rewrite its pods (AmazonEKSEditPolicy would let them); gpufleet's deployer may, and the pods the DaemonSet
    controller creates pass every policy of the namespace."""

    def serving(data: dict[str, Any]) -> None:
        data["nodeGroups"].append(
            {
                "name": "serve",
                "instanceType": "g6e.12xlarge",
                "workloadClass": "Inference",
                "ami": {"type": "AL2023_x86_64_NVIDIA", "releaseVersion": "1.33.13-20260714"},
                "scaling": {"minSize": 0, "maxSize": 2},
                "localStorage": "RAID0",
            }
        )
        data["teams"][0]["quotas"].append({"nodeGroup": "serve", "gpus": 4})
        data["teams"][0]["prefetch"] = [{"nodeGroup": "serve", "paths": ["models/"]}]
        data["checkpoints"] = copy.deepcopy(CLAIMS)

    plan = _plan(serving)
    ds = _rendered(plan, "DaemonSet", "prefetch-serve")
    _open_then_closed(plan, Request(None, "vision", old=ds), tp.OWNED_POLICY)
    changed = copy.deepcopy(ds)
    changed["spec"]["template"]["spec"]["containers"][0]["command"] = ["sleep", "infinity"]
    _open_then_closed(plan, Request(changed, "vision", old=ds), tp.OWNED_POLICY)
    _admitted(plan, Request(ds, "vision", groups=ADMIN))
    pod_of_ds = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "prefetch-serve-x7k2p",
            "namespace": "vision",
            "labels": ds["spec"]["template"]["metadata"]["labels"],
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "prefetch-serve", "uid": "u", "controller": True}
            ],
        },
        "spec": ds["spec"]["template"]["spec"],
    }
    _admitted(plan, Request(pod_of_ds, "vision", groups=JOB_CONTROLLER))


def test_the_checkpoint_objects_and_default_service_account_are_protected(plan: RolloutPlan) -> None:
    account = _rendered(plan, "ServiceAccount", "default")
    assert account["automountServiceAccountToken"] is False
    opened = {**copy.deepcopy(account), "automountServiceAccountToken": True}
    _open_then_closed(plan, Request(opened, "vision", old=account), tp.OWNED_POLICY)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "checkpoint-config", "labels": MANAGED}}
    _open_then_closed(plan, Request(None, "vision", old=config), tp.OWNED_POLICY)
    # nor may a team label its own objects as gpufleet's
    _open_then_closed(plan, Request(config, "vision"), tp.OWNED_POLICY)
    _admitted(plan, Request({**config, "metadata": {"name": "mine"}}, "vision"))


def _netpol(ingress: list[Any] | None = None, egress: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {}, "policyTypes": []}
    if ingress is not None:
        spec["ingress"], spec["policyTypes"] = ingress, ["Ingress"]
    if egress is not None:
        spec["egress"] = egress
        spec["policyTypes"].append("Egress")
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "mine"}, "spec": spec}


@pytest.mark.parametrize(
    "obj",
    [
        _netpol(ingress=[{}]),  # a rule without peers: from everywhere
        _netpol(ingress=[{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]),
        _netpol(ingress=[{"from": [{"namespaceSelector": {}}]}]),  # every other team
        _netpol(egress=[{"to": [{"namespaceSelector": {}}], "ports": [{"port": 5555}]}]),
        _netpol(egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 5555}]}]),  # the DCGM engines
        _netpol(egress=[{"ports": [{"port": 10250}]}]),  # the kubelets
    ],
)
def test_a_team_networkpolicy_cannot_widen(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    _open_then_closed(plan, Request(obj, "vision"), tp.NETWORK_POLICY_POLICY)


def test_a_team_networkpolicy_within_its_namespace_passes(plan: RolloutPlan) -> None:
    inside = [{"podSelector": {"matchLabels": {"app": "db"}}}]
    _admitted(plan, Request(_netpol(ingress=[{"from": inside}], egress=[{"to": inside}]), "vision"))


# ---------------------------------------------------------------------------------------------------------------
# 4. Owner references


@pytest.mark.parametrize(
    "obj",
    [
        job(owner=("jobset.x-k8s.io/v1alpha2", "JobSet")),  # the queue-name policy exempts a JobSet's Job
        job(owner=("trainer.kubeflow.org/v1alpha1", "TrainJob")),
        pod(owner="Job"),  # Kueue's pod webhook skips a pod its Job owns
        {
            **pod(),
            "metadata": {
                "name": "p",
                "namespace": "vision",
                "ownerReferences": [
                    {
                        "apiVersion": "leaderworkerset.x-k8s.io/v1",
                        "kind": "LeaderWorkerSet",
                        "name": "l",
                        "uid": "u",
                        "controller": True,
                    }
                ],
            },
        },
    ],
    ids=["jobset", "trainjob", "pod-of-job", "lws"],
)
def test_a_team_member_cannot_spoof_a_kueue_owner(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    _open_then_closed(plan, Request(obj, "vision"), tp.OWNER_POLICY)
    _admitted(plan, Request(obj, "vision", groups=JOB_CONTROLLER))  # the controllers' own children


# One planted child per owner kind a member may not claim, with the owner's real apiVersion: the kind of every
# Kueue v0.19.2 integration (pkg/controller/jobs/*), the ReplicaSet it walks through to a Deployment, the DaemonSet
# whose pods gpufleet-serving-readiness judges at the parent. Each child is the kind that owner's controller makes.
OWNERS = {
    ("", "Pod"): ("v1", "Pod"),
    ("batch", "Job"): ("batch/v1", "Pod"),
    ("apps", "Deployment"): ("apps/v1", "ReplicaSet"),
    ("apps", "ReplicaSet"): ("apps/v1", "Pod"),
    ("apps", "StatefulSet"): ("apps/v1", "Pod"),
    ("apps", "DaemonSet"): ("apps/v1", "Pod"),
    ("jobset.x-k8s.io", "JobSet"): ("jobset.x-k8s.io/v1alpha2", "Job"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): ("leaderworkerset.x-k8s.io/v1", "StatefulSet"),
    ("trainer.kubeflow.org", "TrainJob"): ("trainer.kubeflow.org/v1alpha1", "JobSet"),
    ("kubeflow.org", "PyTorchJob"): ("kubeflow.org/v1", "Pod"),
    ("kubeflow.org", "MPIJob"): ("kubeflow.org/v2beta1", "Pod"),
    ("kubeflow.org", "TFJob"): ("kubeflow.org/v1", "Pod"),
    ("kubeflow.org", "PaddleJob"): ("kubeflow.org/v1", "Pod"),
    ("kubeflow.org", "XGBoostJob"): ("kubeflow.org/v1", "Pod"),
    ("kubeflow.org", "JAXJob"): ("kubeflow.org/v1", "Pod"),
    ("ray.io", "RayCluster"): ("ray.io/v1", "Pod"),
    ("ray.io", "RayJob"): ("ray.io/v1", "RayCluster"),
    ("ray.io", "RayService"): ("ray.io/v1", "RayCluster"),
    ("workload.codeflare.dev", "AppWrapper"): ("workload.codeflare.dev/v1beta2", "JobSet"),
    ("sparkoperator.k8s.io", "SparkApplication"): ("sparkoperator.k8s.io/v1beta2", "Pod"),
}
CHILDREN: dict[str, dict[str, Any]] = {
    "Pod": pod(labels=dict(QUEUE)),
    "Job": job(),
    "ReplicaSet": {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d8f", "namespace": "vision"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": pod_spec()}},
    },
    "StatefulSet": {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "lws-0", "namespace": "vision"},
        "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": {"spec": pod_spec()}},
    },
    "JobSet": {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "trainer", "namespace": "vision", "labels": dict(QUEUE)},
        "spec": {"replicatedJobs": []},
    },
    "RayCluster": {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray", "namespace": "vision", "labels": dict(QUEUE)},
        "spec": {},
    },
}


def _claiming(owner: tuple[str, str]) -> dict[str, Any]:
    api_version, child = OWNERS[owner]
    obj = copy.deepcopy(CHILDREN[child])
    obj["metadata"]["ownerReferences"] = [
        # As the kube-controller-manager writes it, uid included: a member can read the uid of its own objects.
        {
            "apiVersion": api_version,
            "kind": owner[1],
            "name": "parent",
            "uid": "0c5b2f6e-1111-4d6a-9c1e-2b7a4f3d9e01",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return obj


def test_every_claimed_owner_kind_has_a_planted_child() -> None:
    assert set(OWNERS) == set(tp.CLAIMED_OWNERS)


@pytest.mark.parametrize("owner", tp.CLAIMED_OWNERS, ids=lambda o: o[1])
def test_a_team_member_cannot_claim_any_controller_owner(plan: RolloutPlan, owner: tuple[str, str]) -> None:
    """Issue 47 item 1: every owner kind Kueue walks up from a child, the ReplicaSet of the team's own Deployment
    first: the member's request cannot prove the controller created it."""
    obj = _claiming(owner)
    request = Request(obj, "vision")
    assert tp.OWNER_POLICY in denied_by(plan, request)
    assert message(next(p for p, _ in policies(plan) if p["metadata"]["name"] == tp.OWNER_POLICY), request) == (
        f"{obj['kind']} {obj['metadata']['name']} names {owner[1]} parent{tp.CLAIM_REFUSED}"
    )
    # A ServiceAccount of the team's namespace is an identity the member can make (and mint a token for).
    team_sa = Request(
        obj,
        "vision",
        groups=("system:serviceaccounts", "system:serviceaccounts:vision"),
        user=("system:serviceaccount:vision:builder"),
    )
    assert tp.OWNER_POLICY in denied_by(plan, team_sa)
    # The controllers themselves, under their kube-system ServiceAccounts, are not judged.
    controller = Request(
        obj, "vision", groups=JOB_CONTROLLER, user="system:serviceaccount:kube-system:replicaset-controller"
    )
    assert tp.OWNER_POLICY not in denied_by(plan, controller)


def test_an_update_may_keep_the_creators_claim_but_not_add_one(plan: RolloutPlan) -> None:
    made = _claiming(("apps", "ReplicaSet"))  # a pod the ReplicaSet controller made
    relabelled = copy.deepcopy(made)
    relabelled["metadata"]["labels"] = {**relabelled["metadata"].get("labels", {}), "debug": "true"}
    assert tp.OWNER_POLICY not in denied_by(plan, Request(relabelled, "vision", old=made))
    unowned = copy.deepcopy(made)
    del unowned["metadata"]["ownerReferences"]
    assert tp.OWNER_POLICY in denied_by(plan, Request(made, "vision", old=unowned))
    switched = copy.deepcopy(made)
    switched["metadata"]["ownerReferences"][0]["name"] = "another"
    request = Request(switched, "vision", old=made)
    assert message(next(p for p, _ in policies(plan) if p["metadata"]["name"] == tp.OWNER_POLICY), request) == (
        f"Pod p names ReplicaSet another{tp.CLAIM_REFUSED}"
    )


def test_a_non_controller_owner_reference_is_not_a_claim(plan: RolloutPlan) -> None:
    obj = _claiming(("apps", "ReplicaSet"))
    obj["metadata"]["ownerReferences"][0]["controller"] = False  # Kueue reads only the controller (GetControllerOf)
    assert tp.OWNER_POLICY not in denied_by(plan, Request(obj, "vision"))


def test_an_mpijob_owner_exempts_nothing_where_no_mpi_operator_is_installed(plan: RolloutPlan) -> None:
    # The queue-name policy exempts only the parents the fleet installs (gpufleet.plan.manifests.admission_policy).
    obj = job(owner=("kubeflow.org/v2beta1", "MPIJob"))
    assert "gpufleet-require-queue-name" in denied_by(plan, Request(obj, "vision"), without=tp.POLICIES)


def test_a_cronjob_owner_is_not_spoofing(plan: RolloutPlan) -> None:
    obj = job(owner=("batch/v1", "CronJob"))
    obj["metadata"]["labels"] = dict(QUEUE)
    _admitted(plan, Request(obj, "vision"))  # `kubectl create job --from=cronjob/...`, still through the queue


# ---------------------------------------------------------------------------------------------------------------
# 5. DaemonSets


def test_a_team_member_cannot_create_a_daemonset(plan: RolloutPlan) -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "vision"},
        "spec": {"selector": {}, "template": {"spec": pod_spec()}},
    }
    _open_then_closed(plan, Request(ds, "vision"), tp.DAEMONSET_POLICY)
    _admitted(plan, Request(ds, "vision", groups=ADMIN))


# ---------------------------------------------------------------------------------------------------------------
# 6. Services


def service(kind: str | None = None, external_ips: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if kind:
        spec["type"] = kind
    if external_ips is not None:
        spec["externalIPs"] = external_ips
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "vision"}, "spec": spec}


@pytest.mark.parametrize("obj", [service("LoadBalancer"), service("NodePort"), service(external_ips=["203.0.113.7"])])
def test_a_team_member_cannot_expose_pods_by_default(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    _open_then_closed(plan, Request(obj, "vision"), tp.SERVICE_POLICY)


@pytest.mark.parametrize("obj", [service(), service("ClusterIP"), service("ExternalName")])
def test_internal_services_pass(plan: RolloutPlan, obj: dict[str, Any]) -> None:
    _admitted(plan, Request(obj, "vision"))


def test_the_spec_allows_load_balancers() -> None:
    def allow(data: dict[str, Any]) -> None:
        data["teams"][0]["serviceTypes"] = ["LoadBalancer"]

    allowed = _plan(allow)
    _admitted(allowed, Request(service("LoadBalancer"), "vision"))
    assert denied_by(allowed, Request(service("NodePort"), "vision")) == [tp.SERVICE_POLICY]
    other = service("LoadBalancer")
    other["metadata"]["namespace"] = "ads"
    assert denied_by(allowed, Request(other, "ads")) == [tp.SERVICE_POLICY]


# ---------------------------------------------------------------------------------------------------------------
# What the API server answers


def _policy(plan: RolloutPlan, name: str) -> dict[str, Any]:
    return next(p for p, _ in policies(plan) if p["metadata"]["name"] == name)


def test_the_refusals_say_what_and_how_to_fix(plan: RolloutPlan) -> None:
    assert message(_policy(plan, tp.PRIORITY_POLICY), Request(job({LABEL_PRIORITY_CLASS: "serving"}), "vision")) == (
        "the label kueue.x-k8s.io/priority-class: serving names a priority class namespace vision may not use; it may"
        " use: training, batch (teams[].priorities)"
    )
    assert message(_policy(plan, tp.PRIORITY_POLICY), Request(pod("serving"), "vision")) == (
        "priorityClassName serving is a priority class namespace vision may not use; it may use: training, batch"
        " (teams[].priorities)"
    )
    deny = _rendered(plan, "NetworkPolicy", tenancy.DEFAULT_DENY)
    assert message(_policy(plan, tp.OWNED_POLICY), Request(None, "vision", old=deny)) == (
        "NetworkPolicy gpufleet-default-deny-ingress belongs to gpufleet (app.kubernetes.io/managed-by: gpufleet): a"
        " team may not create, change or delete it, nor label its own objects so; ask a cluster admin to change the"
        " fleet spec"
    )
    assert message(_policy(plan, tp.SERVICE_POLICY), Request(service("LoadBalancer"), "vision")) == (
        "Services of type LoadBalancer are not allowed in namespace vision (they expose pods outside the cluster or on"
        " every node); allowed: ClusterIP, ExternalName (teams[].serviceTypes)"
    )
