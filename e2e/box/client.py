"""A small Kubernetes REST client for the box: discovery, server-side apply, create, get, list, delete.

A request as a team member goes with a client certificate naming that user and groups (CN and O, which
kube-apiserver's x509 authenticator maps to exactly those), so RBAC and admission see the identity itself, not an
admin impersonating it. kubectl is built too, for people; the tests talk HTTP so that a refusal is the API server's
own Status message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

FIELD_MANAGER = "gpufleet-box"


@dataclass(frozen=True)
class Resource:
    group_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        ns = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{base}{ns}/{self.plural}" + (f"/{name}" if name else "")


class ApiError(Exception):
    def __init__(self, status: int, body: Mapping[str, Any] | str) -> None:
        self.status = status
        self.body = body
        self.reason = body.get("reason", "") if isinstance(body, Mapping) else ""
        message = body.get("message", str(body)) if isinstance(body, Mapping) else body
        super().__init__(f"{status} {self.reason}: {message}")
        self.message = message


class Client:
    def __init__(
        self,
        server: str,
        ca: str,
        cert: tuple[str, str],
    ) -> None:
        self.server = server
        self.session = requests.Session()
        # REQUESTS_CA_BUNDLE and proxy variables would override the box's CA and route loopback through a proxy
        self.session.trust_env = False
        self.session.verify = ca
        self.session.cert = cert
        self._resources: dict[tuple[str, str], Resource] = {}

    # --- HTTP ---------------------------------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json", params: Any = None
    ) -> Any:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        data = None if body is None else json.dumps(body)
        resp = self.session.request(method, self.server + path, data=data, headers=headers, params=params, timeout=60)
        if resp.status_code >= 400:
            try:
                raise ApiError(resp.status_code, resp.json())
            except ValueError:
                raise ApiError(resp.status_code, resp.text) from None
        return resp.json() if resp.content else None

    # --- discovery ----------------------------------------------------------------------------------------
    def discover(self) -> None:
        self._resources.clear()
        versions = ["v1"]
        for group in self.request("GET", "/apis")["groups"]:
            versions += [v["groupVersion"] for v in group["versions"]]
        for gv in versions:
            path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
            try:
                listing = self.request("GET", path)
            except ApiError:
                continue
            for r in listing["resources"]:
                if "/" in r["name"]:
                    continue
                self._resources[(gv, r["kind"])] = Resource(gv, r["name"], r["namespaced"])

    def resource(self, api_version: str, kind: str) -> Resource:
        key = (api_version, kind)
        if key not in self._resources:
            self.discover()
        if key not in self._resources:
            raise ApiError(
                404, {"reason": "NotFound", "message": f"the server has no resource for {api_version} {kind}"}
            )
        return self._resources[key]

    def wait_for_kind(self, api_version: str, kind: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.resource(api_version, kind)
                return
            except ApiError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    # --- objects ------------------------------------------------------------------------------------------
    def _path(self, obj: Mapping[str, Any], *, named: bool) -> str:
        meta = obj.get("metadata", {})
        res = self.resource(obj["apiVersion"], obj["kind"])
        return res.path(meta.get("namespace"), meta.get("name") if named else None)

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> Any:
        params = {"fieldManager": FIELD_MANAGER, "force": "true"}
        if dry_run:
            params["dryRun"] = "All"
        return self.request(
            "PATCH", self._path(obj, named=True), obj, content_type="application/apply-patch+yaml", params=params
        )

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> Any:
        params = {"dryRun": "All"} if dry_run else None
        return self.request("POST", self._path(obj, named=False), obj, params=params)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        return self.request("GET", self.resource(api_version, kind).path(namespace, name))

    def list(self, api_version: str, kind: str, namespace: str | None = None, **params: str) -> list[Any]:
        return self.request("GET", self.resource(api_version, kind).path(namespace), params=params or None)["items"]

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, **params: str) -> Any:
        return self.request("DELETE", self.resource(api_version, kind).path(namespace, name), params=params or None)
