"""The fleet's controllers as local processes against the box, configured from what their charts render.

Each runs with the Configuration its chart renders into its ConfigMap from gpufleet's values (Kueue's
integrations, waitForPodsReady, managed namespaces, resources...), changed only where a process on loopback must
differ from a pod: no leader election, probes and webhooks on 127.0.0.1 ports, metrics off, certificates from the
box's CA instead of the controller's own rotation (which needs a Service to name). The chart's webhook
configurations are applied with their rules and selectors as rendered, each clientConfig pointed at the process.
"""

from __future__ import annotations

import copy
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from e2e.box import processes
from e2e.box.cluster import Cluster, free_port

WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


@dataclass
class Running:
    name: str
    process: processes.Process
    webhook_port: int
    ca_bundle: str


def manager_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The controller's Configuration as its chart rendered it (the one ConfigMap value of kind Configuration)."""
    for obj in objects:
        if obj["kind"] != "ConfigMap":
            continue
        for text in (obj.get("data") or {}).values():
            doc = yaml.safe_load(text) if isinstance(text, str) and "kind: Configuration" in text else None
            if isinstance(doc, dict) and doc.get("kind") == "Configuration":
                return doc
    raise RuntimeError("the chart rendered no ConfigMap holding a Configuration")


def _loopback(config: dict[str, Any], chart: str, webhook_port: int, cert_dir: Path) -> dict[str, Any]:
    cfg = copy.deepcopy(config)
    cfg["leaderElection"] = {**(cfg.get("leaderElection") or {}), "leaderElect": False}
    cfg["health"] = {**(cfg.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{free_port()}"}
    cfg["metrics"] = {**(cfg.get("metrics") or {}), "bindAddress": "0"}
    cfg["webhook"] = {**(cfg.get("webhook") or {}), "port": webhook_port, "host": "127.0.0.1"}
    if chart == "kubeflow-trainer":
        # Trainer's webhook has no certDir: controller-runtime's default under $TMPDIR (set per process below).
        cfg["certManagement"] = {**(cfg.get("certManagement") or {}), "enable": False}
        cfg["statusServer"] = {**(cfg.get("statusServer") or {}), "port": free_port()}
    else:
        cfg["webhook"]["certDir"] = str(cert_dir)
        cfg["internalCertManagement"] = {**(cfg.get("internalCertManagement") or {}), "enable": False}
    return cfg


# Kueue v0.19.2 reads its metrics certificate from a fixed path whenever its own certificate management is off
# (cmd/kueue/main.go: metricsCertPath := "/etc/kueue/metrics/certs"), even with metrics off; the pod gets it from a
# Secret volume. The box writes a pair of its CA there once, where none is (it needs root: CI and the box's
# machines run as root), and says so.
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")


def _kueue_metrics_certs(cluster: Cluster) -> None:
    if (KUEUE_METRICS_CERTS / "tls.crt").is_file():
        return
    try:
        KUEUE_METRICS_CERTS.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        raise RuntimeError(
            f"Kueue needs {KUEUE_METRICS_CERTS}/tls.crt (cmd/kueue/main.go); run the box as root"
        ) from None
    pair = cluster.ca.issue("kueue-metrics", "kueue-metrics", serving=True)
    (KUEUE_METRICS_CERTS / "tls.crt").write_bytes(pair.cert.read_bytes())
    (KUEUE_METRICS_CERTS / "tls.key").write_bytes(pair.key.read_bytes())
    print(f"box: wrote a throwaway metrics certificate to {KUEUE_METRICS_CERTS} (Kueue reads it from there)")


def start(cluster: Cluster, chart: str, objects: list[dict[str, Any]], namespace: str) -> Running:
    binary = {"kueue": "kueue", "jobset": "jobset", "lws": "lws", "kubeflow-trainer": "trainer"}[chart]
    root = cluster.root / chart
    tmp = root / "tmp"
    cert_dir = tmp / "k8s-webhook-server" / "serving-certs"
    cert_dir.mkdir(parents=True, exist_ok=True)
    pair = cluster.ca.issue(f"{chart}-webhook", f"{chart}-webhook", serving=True)
    (cert_dir / "tls.crt").write_bytes(pair.cert.read_bytes())
    (cert_dir / "tls.key").write_bytes(pair.key.read_bytes())
    if chart == "kueue":
        _kueue_metrics_certs(cluster)
    port = free_port()
    cfg = _loopback(manager_config(objects), chart, port, cert_dir)
    config_file = root / "config.yaml"
    config_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    kubeconfig = cluster.kubeconfig_for(
        f"{chart}-controller", f"system:serviceaccount:{namespace}:{chart}", ("system:masters",)
    )
    env = {
        "KUBECONFIG": str(kubeconfig),
        "TMPDIR": str(tmp),
        "POD_NAMESPACE": namespace,
        "NAMESPACE": namespace,
        "HOME": str(root),
        "PATH": "/usr/bin:/bin",
    }
    argv = [str(cluster.binaries[binary]), f"--config={config_file}", f"--kubeconfig={kubeconfig}"]
    if chart == "kueue":
        # Kueue's visibility API server is an aggregated API with its certificates at a fixed /visibility and a
        # port on every interface (pkg/visibility/server.go); the box serves no aggregated API (apply.py skips the
        # APIService), so it stays off.
        argv.append("--feature-gates=VisibilityOnDemand=false")
    proc = cluster.start(chart, argv, env=env)
    health = cfg["health"]["healthProbeBindAddress"]
    processes.wait_for(
        f"{chart} ready",
        lambda: requests.get(f"http://{health}/readyz", timeout=2).status_code == 200 and _serves_tls(port),
        proc,
        timeout=120,
    )
    return Running(chart, proc, port, cluster.ca.pem.decode())


def _serves_tls(port: int) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock, ctx.wrap_socket(sock):
        return True


def pointed(webhook_config: Mapping[str, Any], running: Running) -> dict[str, Any]:
    """A chart's webhook configuration with every clientConfig sent to the local process."""
    import base64

    obj = copy.deepcopy(dict(webhook_config))
    for hook in obj.get("webhooks", []):
        service = hook["clientConfig"].get("service") or {}
        hook["clientConfig"] = {
            "url": f"https://127.0.0.1:{running.webhook_port}{service.get('path', '/')}",
            "caBundle": base64.b64encode(running.ca_bundle.encode()).decode(),
        }
    # cert-manager's annotation asks its CA injector to fill caBundle; nothing runs it here
    (obj.get("metadata") or {}).get("annotations", {}).pop("cert-manager.io/inject-ca-from", None)
    return obj
