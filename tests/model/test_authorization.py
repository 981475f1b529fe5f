"""`gpufleet explain --as ARN`: the API server's authorization as the fleet's access entries and team RBAC grant it
(issue 17, item 6): admins anywhere, team members only in their team's namespace and only the kinds the EKS edit
policy and the team Role give them, nobody else on a cluster gpufleet creates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from gpufleet.simulate import authorization
from gpufleet.simulate.authorization import Decision, Refusal, may_create
from gpufleet.simulate.verdict import FleetModel, explain
from gpufleet.simulate.workload import workload
from tests.model.conftest import model_of

MakeModel = Callable[..., FleetModel]

ACCOUNT = "111122223333"
VISION = f"arn:aws:iam::{ACCOUNT}:role/vision-researchers"
SPEECH = f"arn:aws:iam::{ACCOUNT}:role/teams/speech-researchers"  # a role with a path
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/platform-admin"
STRANGER = f"arn:aws:iam::{ACCOUNT}:role/intern"

FLEET = model_of().plan.fleet


@pytest.mark.parametrize(
    "arn, kind, namespace, expected",
    [
        (ADMIN, "DaemonSet", "kube-system", Decision()),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/platform-admin/alice", "Job", "vision", Decision()),
        (VISION, "Job", "vision", Decision()),
        (VISION, "TrainJob", "vision", Decision()),
        (VISION, "JobSet", "vision", Decision()),
        (VISION, "LeaderWorkerSet", "vision", Decision()),
        # a session of a role with a path: the session ARN drops the path, EKS still maps it to the role
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/speech-researchers/bob", "Pod", "speech", Decision()),
        (
            VISION,
            "Job",
            "language",
            Decision(
                refusal=Refusal(
                    message=(
                        f"{VISION} (team vision, group gpufleet-team-vision) may create workloads only in namespace"
                        " vision; the Job is in namespace language, where the API server forbids it (Forbidden)"
                    ),
                    fix=(
                        f"submit it in namespace vision, or move {VISION} to teams[language].members (one access entry"
                        " per principal)"
                    ),
                    spec_path=("teams", 0, "members"),
                )
            ),
        ),
        (
            SPEECH,
            "Job",
            "default",
            Decision(
                refusal=Refusal(
                    message=(
                        f"{SPEECH} (team speech, group gpufleet-team-speech) may create workloads only in namespace"
                        " speech; the Job is in namespace default, where the API server forbids it (Forbidden)"
                    ),
                    fix="submit it in namespace speech",
                    spec_path=("teams", 2, "members"),
                )
            ),
        ),
        (
            STRANGER,
            "Job",
            "speech",
            Decision(
                refusal=Refusal(
                    message=(
                        f"{STRANGER} has no EKS access entry on cluster research (authenticationMode API): the API"
                        " server refuses the request (Unauthorized)"
                    ),
                    fix=f"add {STRANGER} to teams[speech].members, or to cluster.admins",
                    spec_path=("teams", 2, "members"),
                )
            ),
        ),
        (
            f"arn:aws:iam::{ACCOUNT}:user/vision-researchers",  # a user is not the role of the same name
            "Job",
            "elsewhere",
            Decision(
                refusal=Refusal(
                    message=(
                        f"arn:aws:iam::{ACCOUNT}:user/vision-researchers has no EKS access entry on cluster research"
                        " (authenticationMode API): the API server refuses the request (Unauthorized)"
                    ),
                    fix="submit it in a team's namespace, or to cluster.admins",
                )
            ),
        ),
        (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/intern/carol",  # the fix names the role the session came from
            "Job",
            "vision",
            Decision(
                refusal=Refusal(
                    message=(
                        f"arn:aws:sts::{ACCOUNT}:assumed-role/intern/carol has no EKS access entry on cluster research"
                        " (authenticationMode API): the API server refuses the request (Unauthorized)"
                    ),
                    fix=f"add {STRANGER} to teams[vision].members, or to cluster.admins",
                    spec_path=("teams", 0, "members"),
                )
            ),
        ),
        (
            "arn:aws:iam::444455556666:role/vision-researchers",  # same name, another account
            "Job",
            "vision",
            Decision(
                refusal=Refusal(
                    message=(
                        "arn:aws:iam::444455556666:role/vision-researchers has no EKS access entry on cluster research"
                        " (authenticationMode API): the API server refuses the request (Unauthorized)"
                    ),
                    fix=(
                        "add arn:aws:iam::444455556666:role/vision-researchers to teams[vision].members, or to"
                        " cluster.admins"
                    ),
                    spec_path=("teams", 0, "members"),
                )
            ),
        ),
    ],
)
def test_who_may_create_what_where(arn: str, kind: str, namespace: str, expected: Decision) -> None:
    assert may_create(FLEET, "cost", arn, kind, namespace) == expected


@pytest.mark.parametrize("kind", ["RayJob", "PyTorchJob", "MPIJob"])  # the last two: no legacy operator installed
def test_a_kind_neither_the_edit_policy_nor_the_team_role_grants(kind: str) -> None:
    decision = may_create(FLEET, "cost", VISION, kind, "vision")
    assert decision.refusal is not None
    assert (
        decision.refusal.message
        == f"{VISION} (team vision) may not create {kind}: neither AmazonEKSEditPolicy nor the Role gpufleet-team"
        " grants it"
    )
    assert (
        decision.refusal.fix
        == "submit one of DaemonSet, Deployment, Job, JobSet, LeaderWorkerSet, Pod, StatefulSet, TrainJob, or ask a"
        " cluster admin"
    )


def test_before_the_admission_stage_the_team_namespace_does_not_exist() -> None:
    decision = may_create(FLEET, "telemetry", VISION, "Job", "vision")
    assert decision.refusal is not None
    assert decision.refusal.message.startswith(
        "namespace vision does not exist in this environment: the admission stage creates it"
    )


def test_an_existing_cluster_may_grant_access_outside_the_spec() -> None:
    existing = replace(FLEET, cluster=replace(FLEET.cluster, mode="Existing"))
    decision = may_create(existing, "cost", STRANGER, "Job", "vision")
    assert decision.refusal is None
    assert (
        decision.note
        == f"{STRANGER} has no access entry in the spec; the existing cluster research may grant access outside"
        " gpufleet "
        "(other access entries, aws-auth), which explain cannot see"
    )
    # what the spec does grant still holds on an existing cluster
    assert may_create(existing, "cost", VISION, "Job", "language").refusal is not None


@pytest.mark.parametrize(
    "arn",
    [
        "bogus",
        f"arn:aws:iam::{ACCOUNT}:group/devs",
        f"arn:aws:iam::{ACCOUNT}:role/",
        "arn:aws:iam::1234:role/x",
        f"arn:aws:sts::{ACCOUNT}:assumed-role/no-session",
        f"{VISION}\n",
    ],
)
def test_not_a_principal_arn(arn: str) -> None:
    with pytest.raises(authorization.PrincipalError, match="is not an IAM role, user or assumed-role ARN"):
        authorization.identity(arn)


def test_access_is_the_first_gate(make_model: MakeModel) -> None:
    """A workload the other gates would run is stopped at access, with the spec field to change."""
    job = workload(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "language", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
            "spec": {
                "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
            },
        }
    )
    model = make_model()
    assert explain(model, job).runs
    verdict = explain(model, job, VISION)
    assert not verdict.runs
    assert [(r.stage, r.spec_path) for r in verdict.reasons] == [("access", ("teams", 0, "members"))]
    assert explain(model, job, f"arn:aws:iam::{ACCOUNT}:role/language-researchers").runs
