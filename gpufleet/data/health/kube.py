"""A minimal Kubernetes API client on the Python standard library (in-cluster service account), so the
remediation controller and the planted-fault Job run on a stock pinned python image with nothing installed."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from typing import Any

SA = "/var/run/secrets/kubernetes.io/serviceaccount"


class ApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


class Kube:
    """get/patch/post/delete on API paths, e.g. get("/api/v1/nodes")."""

    def __init__(self) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.base = f"https://{host}:{port}"
        self.ctx = ssl.create_default_context(cafile=f"{SA}/ca.crt")

    def _token(self) -> str:
        with open(f"{SA}/token", encoding="utf-8") as f:  # re-read: projected tokens rotate
            return f.read().strip()

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self._token()}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")) from exc
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body, "application/merge-patch+json")

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)
