"""MultiKueue credentials (issue 44 item 4): the worker's ClusterRole is Kueue's, the manager's rotation CronJob's
script signs as AWS does (botocore), writes a kubeconfig Kueue accepts, renews every worker it can and fails when
one is not renewed or not Active, and the golden trees hold each side's objects."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import sys
import urllib.parse
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from gpufleet.plan.manifests import multikueue
from tests.upstream import MULTIKUEUE_KUBECONFIG_SCRIPT, upstream_file

ROOT = Path(__file__).resolve().parents[2]
TREES = ROOT / "tests" / "golden" / "trees" / "multikueue"
MANAGER, EAST, WEST = "prod.research-manager", "prod.research-use1", "prod.research-usw2"
CREDS = {"AccessKeyId": "AKIDEXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "Token": "a/b+c="}


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "credentials", ROOT / "gpufleet" / "data" / "multikueue" / multikueue.SCRIPT
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CRED = _script()


def _object(stack: str, stage: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((TREES / stack / stage / "k8s" / f"{name}.yaml").read_text())
    return loaded


def test_the_worker_cluster_role_has_exactly_the_rules_of_kueues_script() -> None:
    text = upstream_file(MULTIKUEUE_KUBECONFIG_SCRIPT).read_text(encoding="utf-8")
    heredoc = re.search(r"kubectl apply -f - <<EOF\n(.*?)\nEOF\n", text, re.S)
    assert heredoc is not None
    docs = list(yaml.safe_load_all(heredoc.group(1)))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    assert list(multikueue.WORKER_RULES) == role["rules"]
    rendered = _object(EAST, "03-admission", "ClusterRole-cluster-gpufleet-multikueue")
    assert rendered["rules"] == role["rules"]


@pytest.mark.parametrize("stack", [EAST, WEST])
def test_each_worker_lets_the_managers_group_mint_its_accounts_tokens_only(stack: str) -> None:
    role = _object(stack, "03-admission", "Role-kueue-system-gpufleet-multikueue-token")
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["serviceaccounts/token"],
            "resourceNames": ["gpufleet-multikueue"],
            "verbs": ["create"],
        }
    ]
    binding = _object(stack, "03-admission", "RoleBinding-kueue-system-gpufleet-multikueue-token")
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gpufleet-multikueue-credentials"}
    ]
    crb = _object(stack, "03-admission", "ClusterRoleBinding-cluster-gpufleet-multikueue")
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "gpufleet-multikueue", "namespace": "kueue-system"}]


def test_the_manager_maps_its_pod_identity_role_into_each_worker_in_the_workers_region() -> None:
    inventory = json.loads((TREES / MANAGER / "inventory.json").read_text())
    by_id = {r["id"]: r for r in inventory}
    for worker, region in (("research-use1", "us-east-1"), ("research-usw2", "us-west-2")):
        entry = yaml.safe_load(
            (TREES / MANAGER / "01-foundation" / "aws" / f"multikueue-access-{worker}.yaml").read_text()
        )
        assert entry["inputs"]["clusterName"] == worker
        assert entry["inputs"]["kubernetesGroups"] == ["gpufleet-multikueue-credentials"]
        assert entry["inputs"]["principalArn"] == "<ref:multikueue-credentials-role.arn>"
        assert by_id[f"aws-provider-{worker}"]["inputs"]["region"] == region
    role = yaml.safe_load((TREES / MANAGER / "01-foundation" / "aws" / "multikueue-credentials-role.yaml").read_text())
    trust = json.loads(role["inputs"]["assumeRolePolicy"])["Statement"][0]["Condition"]["StringEquals"]
    assert trust == {
        "aws:RequestTag/eks-cluster-name": "research-manager",
        "aws:RequestTag/kubernetes-namespace": "kueue-system",
        "aws:RequestTag/kubernetes-service-account": "gpufleet-multikueue-credentials",
    }


def test_the_manager_cronjob_renews_well_before_expiry_and_may_touch_only_the_workers_secrets() -> None:
    cron = _object(MANAGER, "03-admission", "CronJob-kueue-system-gpufleet-multikueue-credentials")
    assert cron["spec"]["schedule"] == "17 */6 * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    env = {
        e["name"]: e["value"] for e in cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["WORKERS"] == "research-use1=us-east-1,research-usw2=us-west-2"
    assert int(env["TOKEN_SECONDS"]) == 4 * multikueue.RENEW_HOURS * 3600  # three runs may fail before it expires
    role = _object(MANAGER, "03-admission", "Role-kueue-system-gpufleet-multikueue-credentials")
    assert role["rules"][1]["resourceNames"] == ["multikueue-research-use1", "multikueue-research-usw2"]
    reader = _object(MANAGER, "03-admission", "ClusterRole-cluster-gpufleet-multikueue-credentials")
    assert reader["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["multikueueclusters"],
            "resourceNames": ["research-use1", "research-usw2"],
            "verbs": ["get"],
        }
    ]
    # The Secrets the MultiKueueClusters read are the ones the CronJob writes.
    for worker in ("research-use1", "research-usw2"):
        cluster = _object(MANAGER, "03-admission", f"MultiKueueCluster-cluster-{worker}")
        assert cluster["spec"]["clusterSource"]["kubeConfig"]["location"] == env["SECRET_PREFIX"] + worker


def test_the_managers_up_runs_the_first_renewal_after_everything_it_needs() -> None:
    cron = _object(MANAGER, "03-admission", "CronJob-kueue-system-gpufleet-multikueue-credentials")
    first = _object(MANAGER, "03-admission", "Job-kueue-system-gpufleet-multikueue-credentials-first")
    assert first["spec"] == cron["spec"]["jobTemplate"]["spec"]
    inventory = json.loads((TREES / MANAGER / "inventory.json").read_text())
    entry = next(e for e in inventory if e["id"] == "job-kueue-system-gpufleet-multikueue-credentials-first")
    needed = {
        e["id"]
        for e in inventory
        if e["stage"] == "admission"
        and ("multikueue" in e["id"])
        and e["type"].startswith("kubernetes:")
        and e["id"] != entry["id"]
    }
    assert needed and needed <= set(entry["dependsOn"]), needed - set(entry["dependsOn"])
    assert not any(
        e["id"].startswith("job-") for s in (EAST, WEST) for e in json.loads((TREES / s / "inventory.json").read_text())
    )


def _query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def test_the_eks_token_is_the_presigned_url_botocore_signs() -> None:
    request = AWSRequest(
        method="GET",
        url="https://sts.us-west-2.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        headers={"x-k8s-aws-id": "research-usw2"},
    )
    SigV4QueryAuth(
        Credentials(CREDS["AccessKeyId"], CREDS["SecretAccessKey"], CREDS["Token"]), "sts", "us-west-2", 60
    ).add_auth(request)
    expected = _query(request.url)
    token = CRED.eks_token(CREDS, cluster="research-usw2", region="us-west-2", stamp=expected["X-Amz-Date"])
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    url = base64.urlsafe_b64decode(token.removeprefix("k8s-aws-v1.") + "==").decode()
    assert url.startswith("https://sts.us-west-2.amazonaws.com/?") and _query(url) == expected


def test_describe_cluster_is_signed_as_botocore_signs() -> None:
    request = AWSRequest(method="GET", url="https://eks.us-east-1.amazonaws.com/clusters/research-use1")
    SigV4Auth(Credentials(CREDS["AccessKeyId"], CREDS["SecretAccessKey"], CREDS["Token"]), "eks", "us-east-1").add_auth(
        request
    )
    headers = CRED.signed_headers(
        CREDS,
        region="us-east-1",
        service="eks",
        host="eks.us-east-1.amazonaws.com",
        path="/clusters/research-use1",
        stamp=request.headers["X-Amz-Date"],
    )
    assert headers["authorization"] == request.headers["Authorization"]
    assert headers["x-amz-security-token"] == CREDS["Token"]


def test_the_kubeconfig_passes_kueues_checks() -> None:
    """kueue pkg/controller/admissionchecks/multikueue/multikueuecluster.go validateKubeconfig @ v0.19.2: a token
    inline (no tokenFile), TLS verified against certificate-authority-data (no file), a server, no exec plugin or
    auth provider, no basic auth."""
    config = yaml.safe_load(
        CRED.kubeconfig("research-use1", "https://ABC.gr7.us-east-1.eks.amazonaws.com", "Q0E=", "tok")
    )
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {
        "server": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }
    (user,) = config["users"]
    assert user["user"] == {"token": "tok"}
    assert config["current-context"] == "research-use1" and config["contexts"][0]["context"]["user"] == user["name"]


class _Fake:
    """The endpoints the script calls: the Pod Identity agent, EKS, each worker's API and the manager's."""

    def __init__(self, broken: set[str], inactive: set[str]) -> None:
        self.broken, self.inactive = broken, inactive
        self.applied: dict[str, dict[str, Any]] = {}
        self.minted: list[tuple[str, str, int]] = []

    def __call__(self, method: str, url: str, *, headers: Any = None, body: Any = None, context: Any = None) -> Any:
        parts = urllib.parse.urlsplit(url)
        if url == "http://169.254.170.23/v1/credentials":
            assert headers == {"Authorization": "agent-token"}
            return dict(CREDS)
        if parts.hostname and parts.hostname.startswith("eks."):
            name = parts.path.rsplit("/", 1)[1]
            if name in self.broken:
                raise CRED.HttpError(url, 403, "AccessDeniedException")
            return {"cluster": {"endpoint": f"https://{name}.example", "certificateAuthority": {"data": "Q0E="}}}
        if parts.hostname and parts.hostname.endswith(".example"):
            assert headers["Authorization"].startswith("Bearer k8s-aws-v1.")
            request = json.loads(body)
            self.minted.append((parts.hostname, parts.path, request["spec"]["expirationSeconds"]))
            return {"status": {"token": f"sa-token-{parts.hostname}"}}
        if method == "PATCH":
            assert headers["Content-Type"] == "application/apply-patch+yaml"
            assert _query(url) == {"fieldManager": "gpufleet-multikueue-credentials", "force": "true"}
            obj = json.loads(body)
            self.applied[obj["metadata"]["name"]] = obj
            return obj
        name = parts.path.rsplit("/", 1)[1]
        status = "False" if name in self.inactive else "True"
        return {"status": {"conditions": [{"type": "Active", "status": status, "message": "m"}]}}


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, broken: set[str], inactive: set[str]) -> tuple[int, _Fake]:
    agent = tmp_path / "agent"
    agent.write_text("agent-token\n")
    fake = _Fake(broken, inactive)
    monkeypatch.setattr(CRED, "http", fake)
    monkeypatch.setattr(sys.modules[CRED.Kube.__module__], "http", fake)  # the manager's API, through kube.py
    monkeypatch.setattr(
        CRED.Manager, "__init__", lambda self: setattr(self, "base", "https://manager") or setattr(self, "ctx", None)
    )
    monkeypatch.setattr(CRED.Manager, "_headers", lambda self, content_type=None: {"Content-Type": content_type or ""})
    monkeypatch.setattr(CRED, "ca_context", lambda data: None)
    monkeypatch.setattr(CRED.time, "sleep", lambda s: None)
    cron = _object(MANAGER, "03-admission", "CronJob-kueue-system-gpufleet-multikueue-credentials")
    env = {
        e["name"]: e["value"] for e in cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    env["ACTIVE_WAIT_SECONDS"] = "0"
    env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://169.254.170.23/v1/credentials"
    env["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = str(agent)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return CRED.main(), fake


def test_the_script_renews_every_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code, fake = _run(monkeypatch, tmp_path, set(), set())
    assert code == 0
    assert fake.minted == [
        (f"{w}.example", "/api/v1/namespaces/kueue-system/serviceaccounts/gpufleet-multikueue/token", 86400)
        for w in ("research-use1", "research-usw2")
    ]
    assert sorted(fake.applied) == ["multikueue-research-use1", "multikueue-research-usw2"]
    written = fake.applied["multikueue-research-usw2"]
    assert written["metadata"]["namespace"] == "kueue-system" and written["type"] == "Opaque"
    config = yaml.safe_load(base64.b64decode(written["data"]["kubeconfig"]))
    assert config["users"][0]["user"]["token"] == "sa-token-research-usw2.example"
    assert config["clusters"][0]["cluster"]["server"] == "https://research-usw2.example"


def test_one_worker_failing_does_not_stop_the_others_and_fails_the_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, fake = _run(monkeypatch, tmp_path, {"research-use1"}, set())
    assert code == 1 and sorted(fake.applied) == ["multikueue-research-usw2"]
    assert "not renewed: research-use1" in capsys.readouterr().err


def test_a_cluster_not_active_after_renewal_fails_the_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _run(monkeypatch, tmp_path, set(), {"research-usw2"})
    err = capsys.readouterr().err
    assert code == 1
    assert "research-usw2: MultiKueueCluster research-usw2 not Active after renewal: False (m)" in err


@pytest.mark.parametrize("spec", ["research-use1", "=us-east-1", "a=b,c"])
def test_a_bad_workers_list_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="is not name=region"):
        CRED.workers(spec)


def test_the_script_ships_with_the_health_scripts_client_and_uses_it() -> None:
    """One in-cluster client: the CronJob's ConfigMap carries kube.py beside the script, byte for byte the file of
    the health scripts' ConfigMap, and the script's Manager and HttpError are that client's."""
    credentials = _object(MANAGER, "03-admission", "ConfigMap-kueue-system-gpufleet-multikueue-credentials")["data"]
    health = yaml.safe_load(
        (
            ROOT
            / "tests/golden/trees/example/prod/07-health/k8s/ConfigMap-gpufleet-health-gpufleet-health-scripts.yaml"
        ).read_text()
    )["data"]
    assert sorted(credentials) == ["credentials.py", "kube.py"]
    assert credentials["kube.py"] == health["kube.py"] == (ROOT / "gpufleet/data/health/kube.py").read_text()
    kube = sys.modules[CRED.Kube.__module__]
    assert issubclass(CRED.Manager, kube.Kube) and CRED.HttpError is kube.HttpError and CRED.http is kube.http


def test_an_api_error_names_the_url_and_its_status() -> None:
    error = CRED.HttpError("https://manager/api/v1/namespaces/kueue-system/secrets/x", 403, "forbidden" * 100)
    assert (
        str(error) == "https://manager/api/v1/namespaces/kueue-system/secrets/x: HTTP 403: " + ("forbidden" * 100)[:300]
    )
    assert error.status == 403
