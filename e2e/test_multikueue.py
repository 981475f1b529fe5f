"""MultiKueue for real: the golden case's manager and its first worker as two control planes on this machine, each
with its own tree applied and its own Kueue, JobSet, LWS and Trainer running. The worker's kubeconfig Secret is
written by gpufleet's renewal script itself (the CronJob's credentials.py, its AWS calls stood in for), with the
TokenRequest made as the identity EKS maps the manager's Pod Identity role to on the worker, and the Secret written
as the CronJob's ServiceAccount on the manager: so the RBAC of both sides is the one gpufleet renders. A JobSet a
team member submits to the manager then runs on the worker, where `gpufleet explain` says it does.

The second worker (us-west-2) is not started: its MultiKueueCluster stays inactive, as a region down would, and the
Incremental dispatcher (stepSize 1) nominates the first worker in round 1 regardless.
"""

from __future__ import annotations

import base64
import importlib.resources
import importlib.util
import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from e2e.box import fleet, tenancy

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests" / "golden" / "cases" / "multikueue" / "fleet.yaml"
MANAGER, WORKER, IDLE_WORKER = "research-manager", "research-use1", "research-usw2"
# The worker's access entry maps the manager's Pod Identity role to this group (the manager stack's
# multikueue-access-<worker>); EKS names the user after the assumed role's session.
CREDENTIALS_GROUP = "gpufleet-multikueue-credentials"
CREDENTIALS_USER = "arn:aws:sts::111122223333:assumed-role/multikueue-credentials-role/eks-pod-identity"
BEARER = "box-eks-token-of-the-credentials-role"
KUEUE = "kueue.x-k8s.io/v1beta2"
JOBSET = "jobset.x-k8s.io/v1alpha2"


def _credentials_script() -> ModuleType:
    path = importlib.resources.files("gpufleet").joinpath("data/multikueue/credentials.py")
    spec = importlib.util.spec_from_file_location("credentials", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cronjob_env(box: fleet.Fleet) -> dict[str, str]:
    cronjob = box.cluster.admin.get("batch/v1", "CronJob", "gpufleet-multikueue-credentials", "kueue-system")
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


def _service_account_token(box: fleet.Fleet, namespace: str, name: str) -> str:
    got = box.cluster.admin.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    return str(got["status"]["token"])


@pytest.fixture(scope="module")
def boxes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[fleet.Fleet, fleet.Fleet]]:
    worker = fleet.up(
        SPEC,
        f"prod.{WORKER}",
        tmp_path_factory.mktemp("worker"),
        tokens={BEARER: (CREDENTIALS_USER, (CREDENTIALS_GROUP,))},
    )
    try:
        manager = fleet.up(SPEC, f"prod.{MANAGER}", tmp_path_factory.mktemp("manager"))
    except BaseException:
        worker.stop()
        raise
    try:
        yield manager, worker
    finally:
        manager.stop()
        worker.stop()


def _renew(
    script: ModuleType, manager: fleet.Fleet, worker: fleet.Fleet, monkeypatch: pytest.MonkeyPatch, sa_dir: Path
) -> str:
    """One run of the CronJob's script for the worker, as the CronJob's ServiceAccount on the manager; only what
    needs AWS is stood in for: Pod Identity's credentials, eks:DescribeCluster (the worker's endpoint and CA) and
    the EKS token (the box's static token for the identity the access entry maps the role to)."""
    env = _cronjob_env(manager)
    sa_dir.mkdir(parents=True, exist_ok=True)
    (sa_dir / "token").write_text(_service_account_token(manager, env["NAMESPACE"], CREDENTIALS_GROUP))
    (sa_dir / "ca.crt").write_bytes(manager.cluster.ca.pem)
    host, _, port = manager.cluster.server.removeprefix("https://").partition(":")
    monkeypatch.setattr(script, "SA", str(sa_dir))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    worker_ca = base64.b64encode(worker.cluster.ca.pem).decode()
    monkeypatch.setattr(script, "pod_identity_credentials", lambda: {})
    monkeypatch.setattr(
        script, "describe_cluster", lambda creds, name, region, stamp: (worker.cluster.server, worker_ca)
    )
    monkeypatch.setattr(script, "eks_token", lambda creds, **kw: BEARER)
    (worker_name, region) = next(w for w in script.workers(env["WORKERS"]) if w[0] == WORKER)
    script.renew(script.Manager(), worker_name, region, env)
    return str(env["SECRET_PREFIX"]) + WORKER


def test_the_credentials_are_only_what_the_renewal_needs(
    boxes: tuple[fleet.Fleet, fleet.Fleet], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The identity the access entry maps the role to may mint a token of the MultiKueue ServiceAccount only, and
    the CronJob's ServiceAccount may rewrite only the workers' Secrets: the real authorizer refuses the rest."""
    manager, worker = boxes
    script = _credentials_script()
    ca = base64.b64encode(worker.cluster.ca.pem).decode()
    with pytest.raises(script.HttpError) as refused:
        script.request_token(worker.cluster.server, ca, BEARER, "kueue-system", "kueue-controller-manager", 3600)
    assert refused.value.status == 403, refused.value
    _renew(script, manager, worker, monkeypatch, tmp_path / "serviceaccount")
    with pytest.raises(script.HttpError) as refused:
        script.Manager().apply(script.secret("kueue-webhook-server-cert", "kueue-system", "{}", "never"))
    assert refused.value.status == 403, refused.value


def _jobset(name: str) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["sleep", "3600"],
        "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return {
        "apiVersion": JOBSET,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "vision", "labels": {"kueue.x-k8s.io/queue-name": "vision"}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                        }
                    },
                }
            ]
        },
    }


def _wait(what: str, check, timeout: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _manager_workload(manager: fleet.Fleet, name: str) -> dict[str, Any] | None:
    for workload in manager.cluster.admin.list(KUEUE, "Workload", "vision"):
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "JobSet" and o["name"] == name for o in owners):
            return dict(workload)
    return None


def test_a_jobset_submitted_to_the_manager_runs_on_the_worker(
    boxes: tuple[fleet.Fleet, fleet.Fleet], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    manager, worker = boxes
    for box in boxes:
        print(f"{box.env}: {box.report.text()}")
        assert not box.report.refused, box.report.text()
    secret = _renew(_credentials_script(), manager, worker, monkeypatch, tmp_path / "serviceaccount")
    assert manager.cluster.admin.get("v1", "Secret", secret, "kueue-system")["data"]["kubeconfig"]

    def active() -> str:
        cluster = manager.cluster.admin.get(KUEUE, "MultiKueueCluster", WORKER)
        return "True" if _condition(cluster, "Active").get("status") == "True" else json.dumps(cluster.get("status"))

    _wait(f"MultiKueueCluster {WORKER} Active", lambda: active() == "True" or None)
    idle = _condition(manager.cluster.admin.get(KUEUE, "MultiKueueCluster", IDLE_WORKER), "Active")
    assert idle.get("status") != "True", idle

    member = next(m for m in tenancy.members(manager.plan) if m.team == "vision")
    submitted = tenancy.client(manager.cluster, member).create(_jobset("dispatched"))
    # Kueue's JobSet webhook hands a JobSet whose queue has a MultiKueue check to MultiKueue (spec.managedBy), so
    # the manager's JobSet controller leaves it alone
    assert submitted["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue", submitted["spec"]

    def running_on_worker() -> list[str] | None:
        pods = worker.cluster.admin.list(
            "v1", "Pod", "vision", labelSelector="jobset.sigs.k8s.io/jobset-name=dispatched"
        )
        running = [p["spec"].get("nodeName", "") for p in pods if p["status"].get("phase") == "Running"]
        return running if len(running) == 2 else None

    nodes = _wait("the JobSet's two pods Running on the worker", running_on_worker)
    groups = {
        worker.cluster.admin.get("v1", "Node", n)["metadata"]["labels"].get("gpufleet.io/node-group") for n in nodes
    }
    assert groups == {"l40s-use1"}, groups
    assert not manager.cluster.admin.list("v1", "Pod", "vision"), "the manager runs no pods"

    workload = _wait("the manager's Workload", lambda: _manager_workload(manager, "dispatched"))
    workload = _wait(
        "the manager's Workload admitted, naming the worker",
        lambda: (
            (w := _manager_workload(manager, "dispatched")) and _condition(w, "Admitted").get("status") == "True" and w
        ),
    )
    assert workload["status"].get("clusterName") == WORKER, workload["status"]
    checks = {c["name"]: c["state"] for c in workload["status"].get("admissionChecks", [])}
    assert checks == {"multikueue": "Ready"}, checks
    # the manager mirrors the worker's status onto the JobSet the team submitted
    _wait(
        "the JobSet's status mirrored on the manager",
        lambda: (manager.cluster.admin.get(JOBSET, "JobSet", "dispatched", "vision").get("status") or {}).get(
            "replicatedJobsStatus"
        ),
    )


def test_explain_names_the_worker_the_jobset_ran_on(boxes: tuple[fleet.Fleet, fleet.Fleet], tmp_path: Path) -> None:
    manifest = tmp_path / "dispatched.yaml"
    manifest.write_text(yaml.safe_dump(_jobset("dispatched")))
    done = fleet.gpufleet("explain", str(SPEC), "--env", f"prod.{MANAGER}", str(manifest), "--format", "json")
    assert done.returncode == 0, done.stderr
    (verdict,) = json.loads(done.stdout)["workloads"]
    assert verdict["dispatchedTo"] == [WORKER], verdict
