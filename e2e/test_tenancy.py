"""Tenancy for real: requests made as a team member (the user and groups EKS maps the team's access entry to) and
as a cluster admin, answered by the real RBAC authorizer and admission chain (PodSecurity, the fleet's
ValidatingAdmissionPolicies, the controllers' webhooks), on the example fleet in a box.

Each refusal gpufleet promises (plan.md's access table, docs/tenancy-and-access.md) is a row with the component
that must refuse it; each thing a member must be able to do (every documented example, reading their own
workloads and queues) must be admitted. Creates are dry runs (dryRun=All: authorized and admitted, webhooks and
policies included, then not stored), so rows do not disturb each other.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.box import fleet, tenancy
from e2e.box.client import ApiError, Client
from gpufleet.simulate.workload import KINDS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.yaml"))


def _member(box: fleet.Fleet, team: str) -> Client:
    member = next(m for m in tenancy.members(box.plan) if m.team == team)
    return tenancy.client(box.cluster, member)


def _pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    body = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]
    }
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": body,
    }


def _job(namespace: str = "vision", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": namespace} if labels is None else labels,
        },
        "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", **_pod()["spec"]}}},
    }


def _service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "vision"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "x"}, **spec},
    }


# (row, object, who refuses: a text the API server's refusal must contain)
REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("job in another team's namespace", _job("language"), 'cannot create resource "jobs"'),
    (
        "configmap in gpufleet-system",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "gpufleet-system"}},
        "forbidden",
    ),
    (
        "another team's priority",
        _job(labels={"kueue.x-k8s.io/queue-name": "vision", "kueue.x-k8s.io/priority-class": "serving"}),
        "gpufleet-team-priorities",
    ),
    (
        "a daemonset",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "d", "namespace": "vision"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": _pod()["spec"]},
            },
        },
        "gpufleet-team-no-daemonsets",
    ),
    ("a hostPath volume", _pod(volumes=[{"name": "h", "hostPath": {"path": "/"}}]), 'violates PodSecurity "baseline'),
    ("a LoadBalancer service", _service(type="LoadBalancer"), "gpufleet-team-service-exposure"),
    ("a NodePort service", _service(type="NodePort"), "gpufleet-team-service-exposure"),
    ("a service with externalIPs", _service(externalIPs=["198.51.100.7"]), "gpufleet-team-service-exposure"),
    (
        "a networkpolicy naming another namespace",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "n", "namespace": "vision"},
            "spec": {
                "podSelector": {},
                "ingress": [
                    {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "language"}}}]}
                ],
            },
        },
        "gpufleet-team-network-policies",
    ),
    (
        "visible devices without a GPU",
        _pod(
            containers=[{"name": "c", "image": "busybox", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]
        ),
        "gpufleet-visible-devices-need-gpu",
    ),
]


@pytest.mark.parametrize(("row", "obj", "refuser"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_member_is_refused(example: fleet.Fleet, row: str, obj: dict[str, Any], refuser: str) -> None:
    member = _member(example, "vision")
    with pytest.raises(ApiError) as refused:
        member.create(copy.deepcopy(obj), dry_run=True)
    assert refuser.lower() in refused.value.message.lower(), f"{row}: refused, but not by {refuser}: {refused.value}"


def _examples() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in EXAMPLES:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") and doc["kind"] != "Fleet":
                yield f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc


def _explain_as(box: fleet.Fleet, team: str, obj: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """`gpufleet explain --as` of one manifest as the team's first member: its one workload's answer."""
    arn = next(m.arn for m in tenancy.members(box.plan) if m.team == team)
    manifest = tmp / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(obj))
    done = fleet.gpufleet("explain", str(box.spec), str(manifest), "--env", box.env, "--as", arn, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["workloads"][0]


EXAMPLE_OBJECTS = list(_examples())


def _team_of(box: fleet.Fleet, namespace: str) -> str:
    return next(t.name for t in box.plan.fleet.teams if t.namespace == namespace)


@pytest.mark.parametrize(
    ("row", "obj", "refuser"),
    [r for r in REFUSALS if r[1]["kind"] in KINDS],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_explain_as_refuses_what_the_box_refuses(
    example: fleet.Fleet, row: str, obj: dict[str, Any], refuser: str, tmp_path: Path
) -> None:
    """`explain --as` against the real answer, for each refusal of a workload (explain reads workloads; the rows of
    Services, ConfigMaps and NetworkPolicies are the access table's and the box's alone): both refuse, and where
    the box names a policy, explain names the same one. RBAC's refusal is explain's `access` stage."""
    with pytest.raises(ApiError) as real:
        _member(example, "vision").create(copy.deepcopy(obj), dry_run=True)
    answer = _explain_as(example, "vision", obj, tmp_path)
    assert answer["runs"] is False, f"{row}: the box refused ({real.value.message}); explain --as says it runs"
    stages = {r["stage"] for r in answer["reasons"]}
    assert stages & {"access", "api"}, f"{row}: explain --as refuses, but not at admission: {answer['reasons']}"
    if "validatingadmissionpolicy" in real.value.message.lower() or "podsecurity" in real.value.message.lower():
        said = " ".join(r["message"] for r in answer["reasons"]).lower()
        assert refuser.lower() in said, f"{row}: the box: {real.value.message}; explain --as: {said}"


@pytest.mark.parametrize(
    ("row", "obj"),
    [(r, o) for r, o in EXAMPLE_OBJECTS if o["kind"] in KINDS],
    ids=[r for r, o in EXAMPLE_OBJECTS if o["kind"] in KINDS],
)
def test_explain_as_admits_what_the_box_admits(
    example: fleet.Fleet, row: str, obj: dict[str, Any], tmp_path: Path
) -> None:
    """Each documented workload the box admits from its team's member, explain --as lets through admission too."""
    team = _team_of(example, obj["metadata"]["namespace"])
    try:
        _member(example, team).create(copy.deepcopy(obj), dry_run=True)
    except ApiError as exc:
        pytest.fail(f"{row}: the box refused it: {exc.message}")
    answer = _explain_as(example, team, obj, tmp_path)
    refused = [r for r in answer["reasons"] if r["stage"] in ("access", "api")]
    assert not refused, f"{row}: admitted by the box, refused by explain --as: {refused}"


def test_job_without_a_queue_goes_to_the_default_local_queue(example: fleet.Fleet) -> None:
    """Kueue's LocalQueue defaulting (its mutating webhook, before the fleet's policies) labels a Job that names no
    queue with the namespace's LocalQueue `default`, which gpufleet renders per team: the require-queue-name policy
    then sees the label. explain says the same (it runs through the team's ClusterQueue)."""
    created = _member(example, "vision").create(_job(labels={}), dry_run=True)
    assert created["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"


def _wait_owned(client: Client, api_version: str, kind: str, namespace: str, owner_uid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for obj in client.list(api_version, kind, namespace):
            if any(r.get("uid") == owner_uid for r in obj["metadata"].get("ownerReferences", [])):
                return obj
        time.sleep(0.5)
    raise AssertionError(f"no {kind} owned by {owner_uid} after 60 s")


def _spoofing_pod(owner: dict[str, Any]) -> dict[str, Any]:
    pod = _pod("spoof")
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}
    return pod


def test_member_may_not_claim_a_real_owner(example: fleet.Fleet) -> None:
    """Owner-reference spoofing with owners that exist (issue 47 item 1): a Pod claiming, as its controller, the
    team's own Job or the ReplicaSet of its own queue-labelled Deployment would join an admitted workload outside
    quota. Kueue's pod webhook looks the owner up, so the owners are real objects the member created."""
    member = _member(example, "vision")
    job = member.create(_job())
    job.setdefault("apiVersion", "batch/v1")
    job.setdefault("kind", "Job")
    deployment = member.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "owner", "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "owner"}},
                "template": {"metadata": {"labels": {"app": "owner"}}, "spec": _pod()["spec"]},
            },
        }
    )
    replica_set = _wait_owned(example.cluster.admin, "apps/v1", "ReplicaSet", "vision", deployment["metadata"]["uid"])
    replica_set.update(apiVersion="apps/v1", kind="ReplicaSet")
    admitted = []
    for owner in (job, replica_set):
        try:
            member.create(_spoofing_pod(owner), dry_run=True)
            admitted.append(owner["kind"])
        except ApiError as exc:
            assert "gpufleet-no-owner-spoofing" in exc.message, exc.message
    assert not admitted, f"a member's Pod claiming a {', '.join(admitted)} as its controller was admitted"


def test_member_may_not_change_gpufleets_network_policy(example: fleet.Fleet) -> None:
    member = _member(example, "vision")
    current = example.cluster.admin.get(
        "networking.k8s.io/v1", "NetworkPolicy", "gpufleet-default-deny-ingress", "vision"
    )
    current["spec"]["ingress"] = [{}]
    with pytest.raises(ApiError) as refused:
        member.request(
            "PUT",
            member.resource("networking.k8s.io/v1", "NetworkPolicy").path("vision", "gpufleet-default-deny-ingress"),
            current,
            params={"dryRun": "All"},
        )
    assert "gpufleet-protect-owned-objects" in refused.value.message


@pytest.mark.parametrize(("row", "obj"), EXAMPLE_OBJECTS, ids=[r for r, _ in EXAMPLE_OBJECTS])
def test_member_may_create_documented_example(example: fleet.Fleet, row: str, obj: dict[str, Any]) -> None:
    member = _member(example, _team_of(example, obj["metadata"]["namespace"]))
    try:
        member.resource(obj["apiVersion"], obj["kind"])
    except ApiError:
        pytest.skip(f"{obj['apiVersion']} {obj['kind']}: its CRD is not in the box (python tools/fetch_upstream.py)")
    member.create(copy.deepcopy(obj), dry_run=True)


@pytest.mark.parametrize(
    ("api_version", "kind", "namespaced"),
    [
        ("kueue.x-k8s.io/v1beta2", "Workload", True),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue", True),
        ("batch/v1", "Job", True),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", False),
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor", False),
    ],
)
def test_member_may_read(example: fleet.Fleet, api_version: str, kind: str, namespaced: bool) -> None:
    _member(example, "vision").list(api_version, kind, "vision" if namespaced else None)


def test_admin_may_do_what_members_may_not(example: fleet.Fleet) -> None:
    daemonset = next(obj for row, obj, _ in REFUSALS if row == "a daemonset")
    example.cluster.admin.create(copy.deepcopy(daemonset), dry_run=True)
