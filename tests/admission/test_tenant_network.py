"""Issue 31 item 5: a team pod reaching a node's DCGM host engine (port 5555, no authentication). The egress side of
the rendered NetworkPolicies is evaluated as Kubernetes defines it (a pod selected by no Egress policy may send
anywhere; a selected one only what some rule allows: peers and ports ANDed, rules and policies ORed), and the
node-level rule is read from the rendered user data."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from gpufleet.plan.manifests import node_bootstrap, tenancy
from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from tests.admission.conftest import build_fleet

NODE_IP = "10.0.5.17"  # a node of the VPC: where a hostNetwork nv-hostengine listens


@pytest.fixture(scope="module")
def plan() -> RolloutPlan:
    return build_plan(build_fleet(), "prod")


def _policies(plan: RolloutPlan, namespace: str, names: set[str] | None = None) -> list[dict[str, Any]]:
    return [
        r.args["object"]
        for s in plan.included()
        for r in s.content.resources
        if r.args.get("object", {}).get("kind") == "NetworkPolicy"
        and r.args["object"]["metadata"]["namespace"] == namespace
        and (names is None or r.args["object"]["metadata"]["name"] in names)
    ]


def _peer_allows(peer: dict[str, Any], dest: dict[str, Any], namespace: str) -> bool:
    if "ipBlock" in peer:
        if dest.get("pod_namespace") is not None and dest.get("ip") is None:
            return False
        net = ipaddress.ip_network(peer["ipBlock"]["cidr"])
        return ipaddress.ip_address(dest["ip"]) in net and not any(
            ipaddress.ip_address(dest["ip"]) in ipaddress.ip_network(e) for e in peer["ipBlock"].get("except", [])
        )
    if dest.get("pod_namespace") is None:
        return False  # pod and namespace selectors name pods, never a node's address
    if "namespaceSelector" in peer:
        wanted = peer["namespaceSelector"].get("matchLabels", {})
        if wanted and wanted != {"kubernetes.io/metadata.name": dest["pod_namespace"]}:
            return False
    elif dest["pod_namespace"] != namespace:
        return False
    return not peer.get("podSelector", {}).get("matchLabels")


def egress_allowed(policies: list[dict[str, Any]], namespace: str, dest: dict[str, Any], port: int) -> bool:
    selecting = [p for p in policies if "Egress" in p["spec"].get("policyTypes", [])]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("egress", []):
            ports = rule.get("ports")
            if ports and not any(p.get("port") == port for p in ports):
                continue
            peers = rule.get("to")
            if not peers or any(_peer_allows(peer, dest, namespace) for peer in peers):
                return True
    return False


DCGM = ({"ip": NODE_IP}, 5555)


def test_a_team_pod_cannot_reach_the_dcgm_host_engine(plan: RolloutPlan) -> None:
    before = _policies(plan, "vision", {tenancy.DEFAULT_DENY})  # ingress only, as rendered before issue 31
    assert egress_allowed(before, "vision", *DCGM), "the hole is not open before the fix"
    after = _policies(plan, "vision")
    assert not egress_allowed(after, "vision", *DCGM)
    assert not egress_allowed(after, "vision", {"ip": NODE_IP}, 10250)  # the kubelet
    assert not egress_allowed(after, "vision", {"ip": "169.254.169.254"}, 80)  # instance metadata
    assert not egress_allowed(after, "vision", {"ip": "10.0.9.9", "pod_namespace": "speech-ml"}, 8080)


@pytest.mark.parametrize(
    ("dest", "port"),
    [
        ({"ip": "10.0.9.9", "pod_namespace": "vision"}, 29500),  # torchrun rendezvous, NCCL bootstrap
        ({"ip": "52.216.0.1"}, 443),  # S3, the API server, registries
        ({"ip": "172.20.0.10"}, 53),  # DNS through the kube-dns ClusterIP
        ({"ip": "169.254.170.23"}, 80),  # the Pod Identity agent
    ],
)
def test_what_a_team_pod_still_reaches(plan: RolloutPlan, dest: dict[str, Any], port: int) -> None:
    assert egress_allowed(_policies(plan, "vision"), "vision", dest, port)


def test_gpu_nodes_drop_the_engines_port_from_other_hosts() -> None:
    fleet = build_fleet()
    text = node_bootstrap.user_data(fleet.node_group("h100"), None)
    script = next(part for part in text.split("--==GPUFLEET==") if "gpufleet-dcgm-port" in part)
    rules = [line.strip() for line in script.splitlines() if line.strip().startswith('"$ipt"')]
    assert rules == [
        '"$ipt" -w -N GPUFLEET-DCGM 2>/dev/null || "$ipt" -w -F GPUFLEET-DCGM',
        '"$ipt" -w -A GPUFLEET-DCGM -i lo -j RETURN',
        '"$ipt" -w -A GPUFLEET-DCGM -i eni+ -j RETURN',
        '"$ipt" -w -A GPUFLEET-DCGM -j DROP',
        '"$ipt" -w -C INPUT -p tcp --dport 5555 -j GPUFLEET-DCGM 2>/dev/null || "$ipt" -w -I INPUT 1 -p tcp --dport 5555'
        " -j GPUFLEET-DCGM",
    ]
    assert "systemctl enable --now gpufleet-dcgm-port.service" in script
    assert "WantedBy=multi-user.target" in script  # every boot, not once per instance
