"""A minimal Kubernetes API client on the Python standard library (in-cluster service account), so the scripts that
run in the cluster (the remediation controller, the planted-fault Job, the MultiKueue credentials CronJob) run on a
stock pinned python image with nothing installed. One file, shipped beside each script in its ConfigMap
(gpufleet-health-scripts, gpufleet-multikueue-credentials) and imported from the script's own directory;
gpufleet/data/multikueue/kube.py is a link to this file."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from typing import Any

SA = "/var/run/secrets/kubernetes.io/serviceaccount"


class HttpError(Exception):
    def __init__(self, url: str, status: int, body: str) -> None:
        super().__init__(f"{url}: HTTP {status}: {body[:300]}")
        self.status = status


def http(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    context: ssl.SSLContext | None = None,
) -> Any:
    """One request; the JSON of the answer (None for an empty one); HttpError with the status otherwise. The query
    is left out of the error: a presigned URL carries credentials in it."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, context=context, timeout=30) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        raise HttpError(url.split("?")[0], exc.code, exc.read().decode(errors="replace")) from exc
    return json.loads(raw) if raw else None


class Kube:
    """get/patch/post on API paths of this cluster, as the pod's ServiceAccount, e.g. get("/api/v1/nodes")."""

    def __init__(self, sa: str = SA) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.base = f"https://{host}:{port}"
        self.sa = sa
        self.ctx = ssl.create_default_context(cafile=f"{sa}/ca.crt")

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        with open(f"{self.sa}/token", encoding="utf-8") as f:  # re-read: projected tokens rotate
            headers = {"Authorization": f"Bearer {f.read().strip()}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = self._headers(content_type if data is not None else None)
        return http(method, self.base + path, headers=headers, body=data, context=self.ctx)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body, "application/merge-patch+json")

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)
