"""`gpufleet explain --as`: the tenant admission policies' refusals (issue 31), at stage `api` after authorization,
on the same planted requests as tests/admission/test_tenant_policies.py, and what still runs."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.plan.manifests import tenant_policies as tp
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload
from gpufleet.spec.names import LABEL_PRIORITY_CLASS
from tests.model.conftest import model_of

VISION = "arn:aws:iam::111122223333:role/vision-researchers"
LANGUAGE = "arn:aws:iam::111122223333:role/language-researchers"
ADMIN = "arn:aws:iam::111122223333:role/platform-admin"
GPU = {"limits": {"nvidia.com/gpu": 1}}


@pytest.fixture(scope="module")
def model() -> FleetModel:
    return model_of()


def job(
    namespace: str = "vision",
    labels: dict[str, str] | None = None,
    priority: str | None = None,
    owner: tuple[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": GPU}],
        "nodeSelector": {"gpufleet.io/node-group": "notebooks"},
    }
    if priority:
        spec["priorityClassName"] = priority
    meta: dict[str, Any] = {
        "name": "train",
        "namespace": namespace,
        "labels": {"kueue.x-k8s.io/queue-name": namespace, **(labels or {})},
    }
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": "p", "uid": "u", "controller": True}
        ]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": {"spec": spec}}}


def _stopped(model: FleetModel, obj: dict[str, Any], principal: str | None, policy: str) -> str:
    verdict = explain(model, workload(obj), principal)
    assert not verdict.runs
    assert [r.stage for r in verdict.reasons] == ["api"]
    assert verdict.reasons[0].message.startswith(f"denied by ValidatingAdmissionPolicy {policy}: ")
    return verdict.reasons[0].message


def test_a_class_the_team_may_not_use(model: FleetModel) -> None:
    assert explain(model, workload(job()), VISION).runs
    message = _stopped(model, job(labels={LABEL_PRIORITY_CLASS: "serving"}), VISION, tp.PRIORITY_POLICY)
    assert message.endswith(
        "the label kueue.x-k8s.io/priority-class: serving names a priority class namespace vision may not use; it may"
        " use: training, batch (teams[].priorities)"
    )
    # whoever submits it: the policy judges the object, not the requester
    assert "priorityClassName serving" in _stopped(model, job(priority="serving"), None, tp.PRIORITY_POLICY)
    assert "priorityClassName system-node-critical" in _stopped(
        model, job(priority="system-node-critical"), ADMIN, tp.PRIORITY_POLICY
    )
    # a team with Inference quota (language: l40s) may serve
    assert explain(model, workload(job("language", {LABEL_PRIORITY_CLASS: "serving"})), LANGUAGE).runs


def message_of_pod(model: FleetModel, owned_job: dict[str, Any]) -> str:
    """The refusal of the job's pod template as a bare Pod with the job's ownerReferences, submitted as a member."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": owned_job["metadata"],
        "spec": owned_job["spec"]["template"]["spec"],
    }
    return _stopped(model, pod, VISION, tp.OWNER_POLICY)


def test_owner_spoofing_is_refused_to_team_members(model: FleetModel) -> None:
    spoofed = job(owner=("jobset.x-k8s.io/v1alpha2", "JobSet"))
    message = _stopped(model, spoofed, VISION, tp.OWNER_POLICY)
    assert message.endswith(f": Job train names JobSet p{tp.CLAIM_REFUSED}")
    # the ReplicaSet of the team's own Deployment (issue 47 item 1): Kueue walks through it to the Deployment
    on_replica_set = job(owner=("apps/v1", "ReplicaSet"))
    assert message_of_pod(model, on_replica_set).endswith(f": Pod train names ReplicaSet p{tp.CLAIM_REFUSED}")
    # without --as, or as an admin, nothing refuses it (a controller's child is legitimate)
    assert not any(
        r.message.startswith(f"denied by ValidatingAdmissionPolicy {tp.OWNER_POLICY}")
        for r in explain(model, workload(spoofed)).reasons
    )
    cron = job(owner=("batch/v1", "CronJob"))
    assert explain(model, workload(cron), VISION).runs


def test_daemonsets_are_refused_to_team_members(model: FleetModel) -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "vision"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    message = _stopped(model, ds, VISION, tp.DAEMONSET_POLICY)
    assert "they stay Pending holding quota" in message
    assert all(r.stage != "api" for r in explain(model, workload(ds), ADMIN).reasons)
