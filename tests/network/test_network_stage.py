"""Stage 5: what runs where, with which settings, and the gate's threshold."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.facts import catalog
from gpufleet.facts.versions import image_is_pinned
from gpufleet.plan.manifests import network as net
from gpufleet.plan.parts import Resource
from gpufleet.spec.fleet import Fabric
from gpufleet.spec.names import LABEL_FABRIC, LABEL_NODE_GROUP
from tests.network.fleets import HEAD, RDMA, fleet, group, plan
from tests.trees import resources

K8S_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def tolerates(toleration: dict[str, str], taint: dict[str, str]) -> bool:
    """Kubernetes' rule (k8s.io/api core/v1 Toleration.ToleratesTaint)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return toleration.get("value", "") == taint.get("value", "")


def stage(p, name: str):
    return next(s for s in p.stages if s.name == name)


def node_taints(p, group_name: str) -> list[dict[str, str]]:
    """The taints the foundation stage really puts on the group's nodes (EKS spelling converted back)."""
    ng = next(
        r
        for r in stage(p, "foundation").content.resources
        if r.type == "aws:eks/nodeGroup:NodeGroup" and r.args["labels"].get(LABEL_NODE_GROUP) == group_name
    )
    return [{"key": t["key"], "value": t["value"], "effect": K8S_EFFECT[t["effect"]]} for t in ng.args["taints"]]


def node_labels(p, group_name: str) -> dict[str, str]:
    ng = next(
        r
        for r in stage(p, "foundation").content.resources
        if r.type == "aws:eks/nodeGroup:NodeGroup" and r.args["labels"].get(LABEL_NODE_GROUP) == group_name
    )
    return dict(ng.args["labels"])


def by_kind(resources: tuple[Resource, ...], kind: str) -> list[dict]:
    return [r.args["object"] for r in resources if "object" in r.args and r.args["object"]["kind"] == kind]


EFA_FLEET = [
    group("h100", "p5.48xlarge", "EFA", taints="[{key: example.com/dedicated, value: llm, effect: NoSchedule}]"),
    group(
        "a100",
        "p4d.24xlarge",
        "EFA",
        taints=(
            "[{key: example.com/preempt, value: 'yes', effect: NoExecute}, {key: example.com/soft, effect:"
            " PreferNoSchedule}]"
        ),
    ),
    group("l4", "g6.xlarge", taints="[{key: example.com/other, value: x, effect: NoSchedule}]"),
]


@pytest.fixture(scope="module")
def efa_plan():
    return plan(fleet(EFA_FLEET))


def test_efa_plugin_tolerates_every_taint_of_every_efa_group(efa_plan) -> None:
    release = next(r for r in stage(efa_plan, "network").content.resources if r.id == "helm-aws-efa-k8s-device-plugin")
    tolerations = release.args["values"]["tolerations"]
    for name in ("h100", "a100"):
        taints = node_taints(efa_plan, name)
        assert {t["key"] for t in taints} >= {"nvidia.com/gpu", "vpc.amazonaws.com/efa"}
        untolerated = [t for t in taints if not any(tolerates(tol, t) for tol in tolerations)]
        assert untolerated == [], name


def test_efa_plugin_runs_on_efa_groups_only(efa_plan) -> None:
    values = next(
        r for r in stage(efa_plan, "network").content.resources if r.id == "helm-aws-efa-k8s-device-plugin"
    ).args["values"]
    selector = values["nodeSelector"]
    for name, expected in (("h100", True), ("a100", True), ("l4", False)):
        labels = node_labels(efa_plan, name)
        assert all(labels.get(k) == v for k, v in selector.items()) is expected, name
    assert values["supportedInstanceLabels"] == {
        "keys": ["node.kubernetes.io/instance-type"],
        "values": ["p4d.24xlarge", "p5.48xlarge"],
    }
    # The TCP-only group's taint is not tolerated: the plugin has no business there.
    assert not any(t["key"] == "example.com/other" for t in values["tolerations"])


def test_efa_plugin_tolerations_are_each_listed_once(efa_plan) -> None:
    values = next(
        r for r in stage(efa_plan, "network").content.resources if r.id == "helm-aws-efa-k8s-device-plugin"
    ).args["values"]
    keys = [(t["key"], t["effect"]) for t in values["tolerations"]]
    assert len(keys) == len(set(keys)) == 5


@pytest.mark.parametrize("name", ["h100", "a100"])
def test_gate_job_runs_on_two_nodes_of_its_group_with_all_their_devices(efa_plan, name: str) -> None:
    job = next(
        o
        for o in by_kind(stage(efa_plan, "network").content.resources, "Job")
        if o["metadata"]["name"] == f"nccl-gate-{name}"
    )
    pod = job["spec"]["template"]["spec"]
    info = catalog.lookup({"h100": "p5.48xlarge", "a100": "p4d.24xlarge"}[name])
    assert pod["nodeSelector"] == {LABEL_NODE_GROUP: name}
    assert all(any(tolerates(tol, t) for tol in pod["tolerations"]) for t in node_taints(efa_plan, name))
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits[net.GPU_RESOURCE] == info.gpu_count
    assert limits[net.EFA_RESOURCE] == info.max_efa_interfaces
    # A CPU per rank is requested, never limited (docs/policies-and-diff.md, CKV_K8S_11).
    assert pod["containers"][0]["resources"]["requests"] == {**limits, "cpu": info.gpu_count}
    assert "cpu" not in limits
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 2
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert image_is_pinned(pod["containers"][0]["image"])
    assert pod["containers"][0]["envFrom"] == [{"configMapRef": {"name": "nccl-env-efa"}}]


def test_gate_is_registered_with_its_job_and_threshold(efa_plan) -> None:
    content = stage(efa_plan, "network").content
    gates = {g.name: g for g in content.gates}
    assert set(gates) == {"nccl-bandwidth-h100", "nccl-bandwidth-a100"}
    ids = {r.id for r in content.resources}
    assert gates["nccl-bandwidth-h100"].resource in ids
    # AWS's lowest published healthy 2 x p5.48xlarge run (EKS) averages 375.6 GB/s at 1-2 GiB; 0.9 x that fails.
    assert (
        "NCCL_TESTS_MIN_BW=375.6`" in gates["nccl-bandwidth-h100"].expectation
        and "338 GB/s" in gates["nccl-bandwidth-h100"].expectation
    )
    job = next(o for o in by_kind(content.resources, "Job") if o["metadata"]["name"] == "nccl-gate-a100")
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["NCCL_TESTS_MIN_BW"] == "77.6"  # p4d: its same-fabric sibling p4de's published run
    assert (
        "| a100 | EFA | p4d.24xlarge | 400 Gbit/s = 50 GB/s | 77.6 (p4de.24xlarge's published floor: the same 4 x 100"
        " Gbit/s EFA and 8 x A100 NVSwitch board (40 GB, not 80 GB, GPUs)) | 69.8 |" in content.notes
    )
    assert any(
        line.startswith(
            "| h100 | EFA | p5.48xlarge | 3200 Gbit/s = 400 GB/s | 375.6 (lowest published 2-node all_reduce bus"
            " bandwidth of p5.48xlarge (Slurm 449.0, AWS Batch 454.0, EKS 375.6; aws-samples"
        )
        for line in content.notes
    )


@pytest.mark.parametrize(
    ("instance", "efficiency", "expected"),
    [
        ("p5.48xlarge", 0.8, 375.6),  # the lowest published 2 x p5.48xlarge run (EKS, 1-2 GiB), not 0.8 x 400 = 320
        ("p4de.24xlarge", 0.5, 77.6),  # published, 1-2 GiB; efficiency does not apply
        ("p4d.24xlarge", 0.8, 77.6),  # p4de's: the same fabric (was 0.8 x 50 = 40)
        ("g6e.12xlarge", 0.8, 10.0),  # 100 / 8 = 12.5
        ("p5en.48xlarge", 0.7, 375.6),  # p5's (was 0.7 x 400 = 280)
        ("p6-b300.48xlarge", 0.8, 640.0),  # 6400 / 8 = 800
        ("g5.12xlarge", 0.75, 3.8),  # 40 / 8 = 5 -> 3.75 -> 3.8
    ],
)
def test_min_bus_bandwidth_is_published_or_line_rate_times_efficiency(
    instance: str, efficiency: float, expected: float
) -> None:
    assert net.min_bus_bandwidth(catalog.lookup(instance), efficiency) == expected


def test_efa_nccl_env_pins_the_network_and_leaves_out_harmful_settings() -> None:
    env = net.nccl_env(Fabric.EFA)
    assert env == {"FI_PROVIDER": "efa", "NCCL_NET": "AWS Libfabric", "NCCL_SOCKET_IFNAME": "=eth0"}
    for absent in ("NCCL_PROTO", "RDMAV_FORK_SAFE", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE"):
        assert absent not in env


def test_nccl_env_configmaps_go_to_the_network_and_the_teams_on_fabric_groups() -> None:
    extra = """\
teams:
  - {name: llm, quotas: [{nodeGroup: h100, gpus: 8}]}
  - {name: batch, namespace: batch-jobs, quotas: [{nodeGroup: l4, gpus: 1}]}
"""
    p = plan(fleet([group("h100", "p5.48xlarge", "EFA"), group("l4", "g6.xlarge")], extra))
    maps = by_kind(stage(p, "network").content.resources, "ConfigMap")
    assert sorted((m["metadata"]["namespace"], m["metadata"]["name"]) for m in maps) == [
        ("gpufleet-network", "nccl-env-efa"),
        ("llm", "nccl-env-efa"),
    ]


@pytest.fixture(scope="module", params=["InfiniBand", "Ethernet"])
def rdma_plan(request):
    return request.param, plan(
        fleet(
            [group("ib", "p5en.48xlarge", "RDMA", taints="[{key: example.com/ib, value: 'on', effect: NoSchedule}]")],
            RDMA.format(link=request.param),
        )
    )


def test_nic_cluster_policy_has_the_current_api_and_no_thin_multus(rdma_plan) -> None:
    link, p = rdma_plan
    (policy,) = by_kind(stage(p, "network").content.resources, "NicClusterPolicy")
    spec = policy["spec"]
    assert policy["metadata"]["name"] == "nic-cluster-policy"
    assert "multus" not in spec["secondaryNetwork"] and "ipamPlugin" not in spec["secondaryNetwork"]
    assert ("ipoib" in spec["secondaryNetwork"]) is (link == "InfiniBand")
    assert spec["nvIpam"]["image"] == "nvidia-k8s-ipam"
    config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
    assert config == {
        "configList": [
            {
                "resourceName": "rdma_shared_device",
                "rdmaHcaMax": 63,
                "selectors": {"vendors": ["15b3"], "ifNames": ["ibp24s0", "ibp41s0"]},
            }
        ]
    }
    assert spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": LABEL_FABRIC, "operator": "In", "values": ["RDMA"]}]}
    ]
    assert all(any(tolerates(tol, t) for tol in spec["tolerations"]) for t in node_taints(p, "ib"))


def test_one_network_attachment_per_rdma_port(rdma_plan) -> None:
    link, p = rdma_plan
    nads = by_kind(stage(p, "network").content.resources, "NetworkAttachmentDefinition")
    configs = {n["metadata"]["name"]: json.loads(n["spec"]["config"]) for n in nads}
    assert set(configs) == {"rail0", "rail1"}
    cni = "ipoib" if link == "InfiniBand" else "macvlan"
    assert configs["rail1"]["type"] == cni and configs["rail1"]["master"] == "ibp41s0"
    assert configs["rail1"]["ipam"] == {"type": "nv-ipam", "poolName": "pool1"}
    assert configs["rail0"]["ipam"]["poolName"] == "rail0"
    assert ("mode" in configs["rail0"]) is (link == "Ethernet")


def test_rdma_nccl_env_and_gate_use_the_hcas_and_the_networks(rdma_plan) -> None:
    _, p = rdma_plan
    resources = stage(p, "network").content.resources
    env = next(m for m in by_kind(resources, "ConfigMap") if m["metadata"]["name"] == "nccl-env-rdma")["data"]
    assert env == {"NCCL_IB_HCA": "=mlx5_0,mlx5_1", "NCCL_NET": "IB", "NCCL_SOCKET_IFNAME": "=eth0"}
    (job,) = by_kind(resources, "Job")
    template = job["spec"]["template"]
    assert (
        template["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
        == "gpufleet-network/rail0,gpufleet-network/rail1"
    )
    container = template["spec"]["containers"][0]
    assert container["resources"]["limits"]["rdma/rdma_shared_device"] == 1
    assert net.EFA_RESOURCE not in container["resources"]["limits"]
    assert container["securityContext"]["capabilities"] == {
        "drop": ["ALL"],
        "add": [*net.GATE_CAPABILITIES, "IPC_LOCK"],
    }


def test_multus_is_the_thick_plugin_at_the_pinned_release(rdma_plan) -> None:
    _, p = rdma_plan
    (ds,) = by_kind(stage(p, "network").content.resources, "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    images = {c["image"] for c in spec["containers"] + spec["initContainers"]}
    assert images == {"ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0-thick"}
    assert spec["nodeSelector"] == {LABEL_FABRIC: "RDMA"}
    assert spec["initContainers"][0]["command"][-2:] == ["-t", "thick"]


def test_network_attachments_wait_for_the_operator_crd_and_multus(rdma_plan) -> None:
    _, p = rdma_plan
    resources = {r.id: r for r in stage(p, "network").content.resources}
    nad = next(r for r in resources.values() if r.type.endswith(":NetworkAttachmentDefinition"))
    assert "helm-network-operator" in nad.depends_on
    assert any(resources[d].type.endswith(":DaemonSet") for d in nad.depends_on)


def test_gate_keeps_only_what_sshd_and_mpirun_need(efa_plan) -> None:
    job = next(
        o
        for o in by_kind(stage(efa_plan, "network").content.resources, "Job")
        if o["metadata"]["name"] == "nccl-gate-h100"
    )
    pod = job["spec"]["template"]["spec"]
    # Keys travel over HTTP and SSH between the two pods; no token is needed.
    assert pod["automountServiceAccountToken"] is False
    # Root on purpose (sshd), with every capability dropped but what sshd needs, and no way to gain more.
    assert pod["securityContext"] == {"runAsUser": 0, "runAsGroup": 0}
    assert pod["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT"]},
    }
    skipped = {v.split("=", 1)[0] for k, v in job["metadata"]["annotations"].items() if k.startswith("checkov.io/skip")}
    assert skipped == {"CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_25", "CKV_K8S_31", "CKV_K8S_40"}


def test_multus_reads_only_network_attachment_definitions(rdma_plan) -> None:
    _, p = rdma_plan
    (role,) = by_kind(stage(p, "network").content.resources, "ClusterRole")
    rule = next(r for r in role["rules"] if r["apiGroups"] == ["k8s.cni.cncf.io"])
    assert rule == {
        "apiGroups": ["k8s.cni.cncf.io"],
        "resources": ["network-attachment-definitions"],
        "verbs": ["get", "list", "watch"],
    }
    (ds,) = by_kind(stage(p, "network").content.resources, "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    assert all(c["resources"]["limits"]["memory"] for c in spec["initContainers"] + spec["containers"])


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("fabric", ["EFA", "RDMA"])
def test_gate_script_is_valid_bash(fabric: str) -> None:
    instance = "p5en.48xlarge" if fabric == "RDMA" else "p5.48xlarge"  # tests/rdma_fiction.py
    f = fleet([group("g", instance, fabric)], RDMA.format(link="InfiniBand") if fabric == "RDMA" else "")
    _, job = net.gate_objects(f, f.node_groups[0])
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    subprocess.run(["bash", "-n", "-c", script], check=True)
    assert "via NET/Socket" in script
    assert f"Using network {net.EFA_NET if fabric == 'EFA' else net.RDMA_NET}" in script


def test_group_too_small_for_the_gate_is_skipped_with_a_warning() -> None:
    groups = [
        group("one", "p5.48xlarge", "EFA", min_size=0, max_size=1),
        group("two", "p4d.24xlarge", "EFA", min_size=0, max_size=2),
    ]
    content = stage(plan(fleet(groups)), "network").content
    assert [g.name for g in content.gates] == ["nccl-bandwidth-two"]
    assert any('"one" has maxSize 1' in w for w in content.warnings)
    # The Cluster Autoscaler (the default) scales "two" up for the gate's pending pods: nothing to warn about.
    assert not any("may run fewer than two nodes" in w for w in content.warnings)
    head = HEAD.replace("cluster:\n", "cluster:\n  autoscaler: None\n", 1)
    content = stage(plan(fleet(groups, head=head)), "network").content
    assert any('"two" may run fewer than two nodes' in w for w in content.warnings)


def test_no_fabric_groups_no_network_resources() -> None:
    p = plan(fleet([group("l4", "g6.xlarge")]))
    assert stage(p, "network").content.resources == ()


def test_later_stages_wait_for_the_network_stage() -> None:
    """The gate blocks the rollout: the Job is a child of the network stage component and a dependency of its
    readiness, and every storage resource depends on that readiness, as recorded in the golden inventory of the
    Pulumi program (tests/components/test_stage_order.py checks the readiness of every stage)."""
    inventory = resources(Path(__file__).resolve().parents[1] / "golden" / "trees" / "network-efa" / "prod")
    job = next(e for e in inventory if e["id"] == "job-gpufleet-network-nccl-gate-h100")
    assert job["parent"] == "05-network"
    ready = next(e for e in inventory if e["id"] == "05-network-ready")
    assert job["id"] in ready["dependsOn"]
    storage = [e for e in inventory if e["parent"] == "06-storage" and e["id"] != "06-storage-ready"]
    assert storage and all("05-network-ready" in e["dependsOn"] for e in storage)


def test_a_capacity_block_group_is_checked_in_its_window_without_gating_later_stages() -> None:
    # Before: the gate waited timeoutMinutes for two nodes a Capacity Block cannot have outside its window, then
    # failed and held back every later stage.
    from gpufleet.plan.rollout import build_plan
    from gpufleet.rules.pipeline import load_fleet

    case = Path(__file__).resolve().parents[1] / "golden" / "cases" / "existing-capacity-block" / "fleet.yaml"
    network = stage(build_plan(load_fleet(str(case), "prod").environments["prod"], "prod"), "network")
    assert "nccl-bandwidth-h200-block" not in {g.name for g in network.content.gates}
    (job,) = [j for j in by_kind(network.content.resources, "Job") if j["metadata"]["name"] == "nccl-gate-h200-block"]
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    assert (
        "pulumi.com/timeoutSeconds" not in job["metadata"]["annotations"] and "activeDeadlineSeconds" not in job["spec"]
    )
    assert (
        'node group "h200-block" is a Capacity Block: its bandwidth check (Job gpufleet-network/nccl-gate-h200-block)'
        " runs once the reservation window opens and does not gate later stages; read its result with kubectl before"
        " scheduling jobs on the group" in network.content.warnings
    )
