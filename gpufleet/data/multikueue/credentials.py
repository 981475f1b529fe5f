"""Renews the kubeconfig the MultiKueue manager reaches each worker with, before its token expires
(docs/multi-cluster.md, "Rotating credentials"). Runs on the manager as the CronJob gpufleet-multikueue-credentials,
on the pinned python image with the standard library only.

For each worker of WORKERS ("name=region,..."):
1. AWS credentials of this pod's EKS Pod Identity (the agent's endpoint AWS_CONTAINER_CREDENTIALS_FULL_URI, with the
   token in AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE), whose role may only eks:DescribeCluster the workers.
2. The worker's endpoint and CA from eks:DescribeCluster (SigV4-signed GET /clusters/<name>).
3. An EKS authentication token for the worker: a presigned sts:GetCallerIdentity URL with the header x-k8s-aws-id
   signed in, "k8s-aws-v1." + base64url without padding (what `aws eks get-token` and aws-iam-authenticator send).
   The worker's access entry maps the role to the group whose only permission is to create a token for the
   worker's MultiKueue ServiceAccount.
4. A token of that ServiceAccount from the TokenRequest API (POST .../serviceaccounts/<sa>/token, expirationSeconds
   TOKEN_SECONDS), written into a kubeconfig as Kueue accepts it (token and certificate-authority-data inline: no
   tokenFile, no exec plugin; kueue pkg/controller/admissionchecks/multikueue/multikueuecluster.go
   validateKubeconfig @ v0.19.2).
5. The Secret multikueue-<worker> (key kubeconfig) in kueue-system on the manager, by server-side apply; Kueue
   watches it and reconnects the MultiKueueCluster.
6. The MultiKueueCluster's Active condition, polled for up to ACTIVE_WAIT_SECONDS.
A worker that fails does not stop the others; the Job fails if any did, so a failing renewal is seen on the
CronJob (and alerted on) hours before the previous token expires.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
import ssl
import sys
import time
import urllib.parse
from typing import Any

# kube.py ships beside this script (the same ConfigMap): the in-cluster client the health scripts use too.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube import SA, HttpError, Kube, http  # noqa: E402

__all__ = ["SA", "HttpError", "Kube", "Manager", "http"]
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
# aws-iam-authenticator: the token is "k8s-aws-v1." + base64url(presigned URL), the URL valid for 60 s
# (kubernetes-sigs/aws-iam-authenticator pkg/token/token.go: v1Prefix, presignedURLExpiration = 15 min max; the
# AWS CLI's `eks get-token` presigns for 60 s).
TOKEN_PREFIX = "k8s-aws-v1."
PRESIGN_SECONDS = 60
CLUSTER_ID_HEADER = "x-k8s-aws-id"
FIELD_MANAGER = "gpufleet-multikueue-credentials"


# --- AWS Signature Version 4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret}".encode(), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="-_.~")


def _canonical_query(params: dict[str, str]) -> str:
    return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(params.items()))


def _signature(
    creds: dict[str, str],
    *,
    region: str,
    service: str,
    stamp: str,
    method: str,
    path: str,
    query: str,
    headers: dict[str, str],
    payload_sha256: str,
) -> str:
    names = sorted(headers)
    canonical = "\n".join(
        [
            method,
            path,
            query,
            "".join(f"{n}:{headers[n].strip()}\n" for n in names),
            ";".join(names),
            payload_sha256,
        ]
    )
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _signing_key(creds["SecretAccessKey"], stamp[:8], region, service)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def signed_headers(
    creds: dict[str, str], *, region: str, service: str, host: str, path: str, stamp: str
) -> dict[str, str]:
    """The headers of a SigV4-signed GET of `path` on `host` (no query, no body)."""
    headers = {"host": host, "x-amz-date": stamp}
    if creds.get("Token"):
        headers["x-amz-security-token"] = creds["Token"]
    signature = _signature(
        creds,
        region=region,
        service=service,
        stamp=stamp,
        method="GET",
        path=path,
        query="",
        headers=headers,
        payload_sha256=EMPTY_SHA256,
    )
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={creds['AccessKeyId']}/{scope}, SignedHeaders={';'.join(sorted(headers))},"
        f" Signature={signature}"
    )
    return headers


def eks_token(creds: dict[str, str], *, cluster: str, region: str, stamp: str) -> str:
    """The bearer token EKS authenticates an IAM principal by: sts:GetCallerIdentity presigned with the cluster's name
    signed in (https://sts.<region>.amazonaws.com, the regional endpoint)."""
    host = f"sts.{region}.amazonaws.com"
    params = {
        "Action": "GetCallerIdentity",
        "Version": "2011-06-15",
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{creds['AccessKeyId']}/{stamp[:8]}/{region}/sts/aws4_request",
        "X-Amz-Date": stamp,
        "X-Amz-Expires": str(PRESIGN_SECONDS),
        "X-Amz-SignedHeaders": f"host;{CLUSTER_ID_HEADER}",
    }
    if creds.get("Token"):
        params["X-Amz-Security-Token"] = creds["Token"]
    query = _canonical_query(params)
    signature = _signature(
        creds,
        region=region,
        service="sts",
        stamp=stamp,
        method="GET",
        path="/",
        query=query,
        headers={"host": host, CLUSTER_ID_HEADER: cluster},
        payload_sha256=EMPTY_SHA256,
    )
    url = f"https://{host}/?{query}&X-Amz-Signature={signature}"
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


# --- the steps


def pod_identity_credentials() -> dict[str, str]:
    with open(os.environ["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"], encoding="utf-8") as f:
        authorization = f.read().strip()
    got: dict[str, str] = http(
        "GET", os.environ["AWS_CONTAINER_CREDENTIALS_FULL_URI"], headers={"Authorization": authorization}
    )
    return got


def describe_cluster(creds: dict[str, str], name: str, region: str, stamp: str) -> tuple[str, str]:
    """The worker's API endpoint and its CA (base64 PEM)."""
    host = f"eks.{region}.amazonaws.com"
    path = f"/clusters/{_quote(name)}"
    headers = signed_headers(creds, region=region, service="eks", host=host, path=path, stamp=stamp)
    cluster = http("GET", f"https://{host}{path}", headers=headers)["cluster"]
    return str(cluster["endpoint"]), str(cluster["certificateAuthority"]["data"])


def ca_context(ca_data: str) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=base64.b64decode(ca_data).decode())


def request_token(endpoint: str, ca_data: str, bearer: str, namespace: str, account: str, seconds: int) -> str:
    url = f"{endpoint}/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    got = http(
        "POST",
        url,
        headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"},
        body=json.dumps(body).encode(),
        context=ca_context(ca_data),
    )
    return str(got["status"]["token"])


def kubeconfig(worker: str, endpoint: str, ca_data: str, token: str) -> str:
    """A kubeconfig Kueue's validateKubeconfig accepts (JSON, which is YAML)."""
    user = f"{worker}-multikueue"
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": worker, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": worker, "context": {"cluster": worker, "user": user}}],
            "current-context": worker,
        },
        indent=2,
    )


def secret(name: str, namespace: str, config: str, expires: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "gpufleet"},
            "annotations": {"gpufleet.io/token-expires": expires},
        },
        "data": {"kubeconfig": base64.b64encode(config.encode()).decode()},
    }


class Manager(Kube):
    """This cluster's API, as the pod's ServiceAccount."""

    def __init__(self) -> None:
        super().__init__(SA)  # this module's SA, looked up now: a test points it elsewhere

    def apply(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/secrets/{meta['name']}"
        query = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER, "force": "true"})
        self.request("PATCH", f"{path}?{query}", obj, "application/apply-patch+yaml")

    def active(self, cluster: str) -> tuple[str, str]:
        """(status, message) of the MultiKueueCluster's Active condition."""
        got = self.get(f"/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/{cluster}")
        for condition in (got.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Active":
                return str(condition.get("status")), str(condition.get("message", ""))
        return "Unknown", "no Active condition yet"


def workers(spec: str) -> list[tuple[str, str]]:
    out = []
    for item in spec.split(","):
        name, _, region = item.strip().partition("=")
        if not name or not region:
            raise ValueError(f"WORKERS: {item!r} is not name=region")
        out.append((name, region))
    return out


def now_stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def renew(manager: Manager, worker: str, region: str, env: dict[str, str]) -> None:
    seconds = int(env["TOKEN_SECONDS"])
    creds = pod_identity_credentials()
    endpoint, ca_data = describe_cluster(creds, worker, region, now_stamp())
    bearer = eks_token(creds, cluster=worker, region=region, stamp=now_stamp())
    token = request_token(endpoint, ca_data, bearer, env["WORKER_NAMESPACE"], env["WORKER_SERVICE_ACCOUNT"], seconds)
    expires = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    name = f"{env['SECRET_PREFIX']}{worker}"
    manager.apply(secret(name, env["NAMESPACE"], kubeconfig(worker, endpoint, ca_data, token), expires))
    print(f"{worker}: Secret {env['NAMESPACE']}/{name} renewed, token valid until {expires}")
    deadline = time.monotonic() + int(env["ACTIVE_WAIT_SECONDS"])
    while True:
        status, message = manager.active(worker)
        if status == "True":
            print(f"{worker}: MultiKueueCluster Active")
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"MultiKueueCluster {worker} not Active after renewal: {status} ({message})")
        time.sleep(10)


def main() -> int:
    env = dict(os.environ)
    manager = Manager()
    failed = []
    for worker, region in workers(env["WORKERS"]):
        try:
            renew(manager, worker, region, env)
        except Exception as exc:  # one worker's failure must not keep the others' tokens from renewing
            print(f"{worker}: {exc}", file=sys.stderr)
            failed.append(worker)
    if failed:
        print(f"not renewed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
