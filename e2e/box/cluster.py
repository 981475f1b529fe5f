"""The control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK, on loopback.

kube-apiserver runs with RBAC authorization and the PodSecurity and ValidatingAdmissionPolicy admission plugins named
explicitly (with the default set); nodes are KWOK's (e2e.box.nodes makes them), and KWOK moves every pod bound to
one to Running (its `fast` stages less pod-complete: a pod stays Running until deleted, so what ran can be read
after the fact; with complete_jobs, a Job's pods complete, as the Pulumi engine's await of a Job needs). Services get
IPs from a loopback range; pods from the benchmarking range 198.18.0.0/15 (RFC 2544), which no network routes, and
which Endpoints accept where they refuse loopback (a Service the engine awaits needs its endpoints). Nothing listens
on a pod IP and no kube-proxy routes a service IP, so nothing ever sends traffic off this machine.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests
import yaml

from e2e.box import build, processes
from e2e.box.client import Client
from e2e.box.pki import Authority, Pair

# On by default in kube-apiserver 1.35 already; named so a change of defaults cannot drop the two plugins the
# fleet's tenancy rests on (kubernetes pkg/kubeapiserver/options/plugins.go DefaultOffAdmissionPlugins).
ADMISSION_PLUGINS = "PodSecurity,ValidatingAdmissionPolicy"
SERVICE_RANGE = "127.96.0.0/16"
POD_RANGE = "198.18.0.0/16"
# KWOK manages only the nodes carrying this annotation (kwok's documented selector).
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default (Documentation/networking/ip-sysctl.rst, ip_local_port_range)


_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port no one holds, below the kernel's ephemeral range, never handed out twice by this process.

    A port from bind(0) is an ephemeral one: between closing it and the server binding it, any outbound connection
    (a controller's watch on the API server) may take it as its source port, which is how a CI run lost LWS to
    "bind: address already in use". Ports below the ephemeral range are never picked as source ports.
    """
    low, _ = _ephemeral_range()
    start, stop = max(1024, low - 12000), low
    first = start + (os.getpid() * 7919) % (stop - start)
    for offset in range(stop - start):
        port = start + (first - start + offset) % (stop - start)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free loopback port in {start}-{stop - 1}")


def kubeconfig(server: str, ca: Path, pair: Pair, path: Path) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "box", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "user", "user": {"client-certificate": str(pair.cert), "client-key": str(pair.key)}}],
        "contexts": [{"name": "box", "context": {"cluster": "box", "user": "user"}}],
        "current-context": "box",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@dataclass
class Cluster:
    """A running control plane. `admin` talks to it as system:masters; `as_user` makes a client for an identity."""

    root: Path
    server: str
    ca: Authority
    admin_kubeconfig: Path
    admin: Client
    binaries: dict[str, Path]
    versions: dict[str, str]
    procs: list[processes.Process] = field(default_factory=list)

    def as_user(self, user: str, groups: tuple[str, ...] = ()) -> Client:
        digest = hashlib.sha256(repr((user, groups)).encode()).hexdigest()[:10]
        safe = "".join(c if c.isalnum() else "-" for c in user)[-40:] + f"-{digest}"
        pair = self.ca.issue(f"user-{safe}", user, groups=groups)
        return Client(self.server, str(self.ca.cert), (str(pair.cert), str(pair.key)))

    def kubeconfig_for(self, name: str, user: str, groups: tuple[str, ...] = ()) -> Path:
        pair = self.ca.issue(name, user, groups=groups)
        return kubeconfig(self.server, self.ca.cert, pair, self.root / f"{name}.kubeconfig")

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> processes.Process:
        p = processes.Process(name, argv, self.root / "logs", env=env)
        self.procs.append(p)
        return p

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
        self.procs.clear()


def _kwok_stages(path: Path, complete_jobs: bool) -> Path:
    """KWOK's own `fast` node and pod stages and the lease heartbeat, from its module at the pinned version, less
    pod-complete (which ends a Job's pods at once) unless complete_jobs."""
    src = (
        build.module_dir("sigs.k8s.io/kwok", build.required(build.CONTROLLERS, "sigs.k8s.io/kwok"))
        / "kustomize"
        / "stage"
    )
    files = [
        src / "node" / "fast" / "node-initialize.yaml",
        src / "node" / "heartbeat-with-lease" / "node-heartbeat-with-lease.yaml",
        src / "pod" / "fast" / "pod-ready.yaml",
        src / "pod" / "fast" / "pod-delete.yaml",
        *([src / "pod" / "fast" / "pod-complete.yaml"] if complete_jobs else []),
    ]
    path.write_text("\n---\n".join(f.read_text() for f in files))
    return path


def versions(binaries: dict[str, Path]) -> dict[str, str]:
    out = subprocess.run([str(binaries["kube-apiserver"]), "--version"], capture_output=True, text=True).stdout
    return {"kubernetes": out.split()[-1]}


def start(
    root: Path | None = None,
    log=None,
    *,
    complete_jobs: bool = False,
    tokens: Mapping[str, tuple[str, tuple[str, ...]]] | None = None,
) -> Cluster:
    """Build what is missing, then start the control plane and wait until it answers. `tokens` maps bearer tokens
    to (user, groups): identities that authenticate as EKS authenticates an IAM principal's token, for a client
    that sends a bearer token where the box otherwise issues certificates (kube-apiserver's --token-auth-file)."""
    binaries = build.build_all()
    root = Path(root or tempfile.mkdtemp(prefix="gpufleet-box-"))
    (root / "logs").mkdir(parents=True, exist_ok=True)
    ca = Authority(root / "pki")
    serving = ca.issue("apiserver", "kube-apiserver", serving=True)
    sa = ca.service_account_key()
    admin_pair = ca.issue("admin", "box-admin", groups=("system:masters",))
    port = free_port()
    server = f"https://127.0.0.1:{port}"
    admin = Client(server, str(ca.cert), (str(admin_pair.cert), str(admin_pair.key)))
    cluster = Cluster(
        root=root,
        server=server,
        ca=ca,
        admin_kubeconfig=kubeconfig(server, ca.cert, admin_pair, root / "admin.kubeconfig"),
        admin=admin,
        binaries=binaries,
        versions=versions(binaries),
    )
    try:
        _start_processes(cluster, port, serving, sa, complete_jobs, _token_file(root, tokens or {}))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _ready(cluster: Cluster) -> bool:
    return cluster.admin.session.get(cluster.server + "/readyz", timeout=5).status_code == 200


def _component_flags(cluster: Cluster, component: str) -> list[str]:
    """What the controller manager and the scheduler share: their bootstrap identity (system:<component>, which the
    API server's bootstrap RBAC binds), one replica, their health endpoints on loopback."""
    config = cluster.kubeconfig_for(component, f"system:{component}")
    return [
        f"--kubeconfig={config}",
        f"--authentication-kubeconfig={config}",
        f"--authorization-kubeconfig={config}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={free_port()}",
    ]


def _token_file(root: Path, tokens: Mapping[str, tuple[str, tuple[str, ...]]]) -> list[str]:
    """kube-apiserver's static token file: token,user,uid,"group,..." per line
    (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#static-token-file)."""
    if not tokens:
        return []
    path = root / "tokens.csv"
    path.write_text("".join(f'{t},{user},{user},"{",".join(groups)}"\n' for t, (user, groups) in tokens.items()))
    return [f"--token-auth-file={path}"]


def _start_processes(
    cluster: Cluster, port: int, serving: Pair, sa: Pair, complete_jobs: bool, token_flags: list[str]
) -> None:
    b, root, ca = cluster.binaries, cluster.root, cluster.ca
    etcd_port, peer_port = free_port(), free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    etcd = cluster.start(
        "etcd",
        [
            str(b["etcd"]),
            f"--data-dir={root / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-cluster=default=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync",  # a throwaway store: durability buys nothing, fsync costs seconds
            "--quota-backend-bytes=4294967296",
            "--log-level=warn",
        ],
    )
    processes.wait_for("etcd", lambda: requests.get(f"{etcd_url}/health", timeout=2).ok, etcd)
    apiserver = cluster.start(
        "kube-apiserver",
        [
            str(b["kube-apiserver"]),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={serving.cert}",
            f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={ca.cert}",
            "--authorization-mode=RBAC",
            f"--enable-admission-plugins={ADMISSION_PLUGINS}",
            "--allow-privileged=true",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={sa.cert}",
            f"--service-account-signing-key-file={sa.key}",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            f"--cert-dir={root / 'apiserver-certs'}",
            "--profiling=false",
            # the kubernetes Service's endpoints would be this loopback address, which Endpoints validation refuses
            "--endpoint-reconciler-type=none",
            *token_flags,
            "--v=1",
        ],
    )
    processes.wait_for("kube-apiserver", lambda: _ready(cluster), apiserver, timeout=180)
    cluster.start(
        "kube-controller-manager",
        [
            str(b["kube-controller-manager"]),
            *_component_flags(cluster, "kube-controller-manager"),
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={sa.key}",
            f"--root-ca-file={ca.cert}",
            # no cloud, no node CIDRs, no real kubelets to sign for
            "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
            "--v=1",
        ],
    )
    cluster.start("kube-scheduler", [str(b["kube-scheduler"]), *_component_flags(cluster, "kube-scheduler"), "--v=1"])
    kwok_config = cluster.kubeconfig_for("kwok", "kwok", groups=("system:masters",))
    cluster.start(
        "kwok",
        [
            str(b["kwok"]),
            f"--kubeconfig={kwok_config}",
            f"--config={_kwok_stages(root / 'kwok-stages.yaml', complete_jobs)}",
            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION[0]}={KWOK_ANNOTATION[1]}",
            f"--cidr={POD_RANGE}",
            "--node-ip=127.0.0.1",
            f"--server-address=127.0.0.1:{free_port()}",
        ],
    )
    cluster.admin.discover()
