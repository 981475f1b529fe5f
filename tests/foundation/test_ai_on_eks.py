"""examples/ai-on-eks.yaml: the GPU nodes of awslabs/ai-on-eks's base stack (infra/base/terraform
karpenter-resources/karpenter/gpu.yaml and gpu-p.yaml, the Bottlerocket EC2NodeClass template) as a gpufleet spec.
It validates, synthesises, every NodePool and EC2NodeClass validates against the pinned Karpenter 1.14.1 CRDs, and
what ai-on-eks's users rely on for GPU nodes is there (docs/karpenter.md "ai-on-eks" maps each setting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.facts import catalog
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet
from gpufleet.tree.write import Tree
from tests import fastyaml
from tests.golden.test_tree_schemas import _deployed
from tests.synthesized import tree_of
from tests.upstream import chart_values, require_shared, unknown_value_keys, validate_object

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "ai-on-eks.yaml"
G_POOLS = ("g5", "g5-4gpu", "g5-8gpu", "g6", "g6-4gpu", "g6-8gpu", "g6e", "g6e-4gpu", "g6e-8gpu")
P_POOLS = ("p5", "p5e", "p5en", "p6-b200")


@pytest.fixture(scope="module")
def tree() -> Tree:
    return tree_of(SPEC, "prod")


def _objects(tree: Tree, kind: str) -> dict[str, dict[str, Any]]:
    """The synthesised Kubernetes objects of a kind (01-foundation/k8s/<Kind>-cluster-<name>.yaml), by name."""
    out: dict[str, dict[str, Any]] = {}
    for path, text in tree.files.items():
        if path.startswith(f"01-foundation/k8s/{kind}-"):
            doc = fastyaml.load(text)
            out[doc["metadata"]["name"]] = doc
    return out


def test_every_gpu_pool_synthesises_as_a_node_pool_and_node_class(tree: Tree) -> None:
    assert sorted(_objects(tree, "NodePool")) == sorted(G_POOLS + P_POOLS)
    assert sorted(_objects(tree, "EC2NodeClass")) == sorted(G_POOLS + P_POOLS)


@pytest.mark.parametrize("kind", ["NodePool", "EC2NodeClass"])
def test_they_validate_against_the_pinned_crds(tree: Tree, kind: str) -> None:
    require_shared()
    for name, obj in _objects(tree, kind).items():
        assert validate_object(_deployed(obj)) == [], name


def _requirements(pool: dict[str, Any]) -> dict[str, list[str]]:
    return {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}


def test_ai_on_eks_gpu_node_settings_are_kept(tree: Tree) -> None:
    """What its users' pods and operations rely on: the nvidia.com/gpu NoSchedule taint (tolerated by key), the
    labels accelerator and ai-on-eks.io/amiFamily, Bottlerocket with a 300Gi encrypted gp3 data volume and RAID0
    instance store, Spot then On-Demand (reservations first on p5, selected by the tag ai-on-eks: "true"), and EFA on
    every network card of the P pools."""
    pools, classes = _objects(tree, "NodePool"), _objects(tree, "EC2NodeClass")
    for name in G_POOLS + P_POOLS:
        template = pools[name]["spec"]["template"]
        assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in template["spec"]["taints"]
        labels = template["metadata"]["labels"]
        assert (labels["accelerator"], labels["ai-on-eks.io/amiFamily"]) == ("nvidia", "bottlerocket")
        spec = classes[name]["spec"]
        assert spec["amiFamily"] == "Bottlerocket" and spec["instanceStorePolicy"] == "RAID0"
        data = next(b for b in spec["blockDeviceMappings"] if b["deviceName"] == "/dev/xvdb")["ebs"]
        assert (data["volumeSize"], data["volumeType"], data["encrypted"]) == ("300Gi", "gp3", True)
        capacity = _requirements(pools[name])["karpenter.sh/capacity-type"]
        assert capacity == (["reserved", "spot", "on-demand"] if name == "p5" else ["spot", "on-demand"])
    assert classes["p5"]["spec"]["capacityReservationSelectorTerms"] == [{"tags": {"ai-on-eks": "true"}}]
    for name in P_POOLS:
        info = catalog.lookup(_requirements(pools[name])["node.kubernetes.io/instance-type"][0])
        assert info is not None
        interfaces = classes[name]["spec"]["networkInterfaces"]
        # The primary ENA interface, then one efa-only per card (card 0's too): what Karpenter counts as EFA devices.
        efa = min(info.max_efa_interfaces, info.network_cards)
        assert len(interfaces) == efa + 1
        assert [i["interfaceType"] for i in interfaces[1:]] == ["efa-only"] * efa


def test_every_size_ai_on_eks_admits_has_a_pool(tree: Tree) -> None:
    """ai-on-eks's "gpu" pool takes every g instance of generation 5 and later (karpenter.k8s.aws/instance-category
    g, instance-generation Gt 4); of those gpufleet knows, every x86 g5, g6 and g6e size is in exactly one pool, and
    each pool has one GPU model and one GPU count per node."""
    pools = _objects(tree, "NodePool")
    types = [t for name in G_POOLS for t in _requirements(pools[name])["node.kubernetes.io/instance-type"]]
    known = sorted(n for n, i in catalog.CATALOG.items() if i.family in ("g5", "g6", "g6e"))
    assert sorted(types) == known and len(types) == len(set(types))
    for name in G_POOLS:
        infos = [catalog.lookup(t) for t in _requirements(pools[name])["node.kubernetes.io/instance-type"]]
        assert len({(i.gfd_product, i.gpu_count) for i in infos if i is not None}) == 1, name


def test_the_karpenter_controller_handles_interruptions(tree: Tree) -> None:
    """Spot capacity needs the interruption queue (ai-on-eks: karpenter_enable_spot_termination); every value key is
    the pinned chart's."""
    release = fastyaml.load(tree.files["01-foundation/helm/karpenter.yaml"])
    assert release["version"] == "1.14.1"
    assert release["values"]["settings"]["interruptionQueue"] == "ai-stack-karpenter"
    require_shared()
    defaults = chart_values("karpenter", "1.14.1")
    assert list(unknown_value_keys(release["values"], defaults, free_form=("nodeSelector",))) == []  # a label map


def test_no_gate_waits_for_nodes_nothing_would_launch() -> None:
    """The bandwidth gates and the planted-fault gate run on empty Karpenter pools: Karpenter launches nodes for their
    pending pods, as the Cluster Autoscaler would, so the plan does not warn that they wait for nodes (before, it told
    an all-Karpenter fleet with cluster.autoscaler None that "your autoscaler must add them")."""
    plan = build_plan(load_fleet(str(SPEC), "prod").environments["prod"], "prod")
    assert [w for w in plan.warnings if "may run fewer than two nodes" in w or "planted-fault gate: no" in w] == []


def test_waitforpodsready_covers_every_groups_cold_start() -> None:
    """Issue 41 item 9: ai-on-eks's Kueue timeout was 540 s (a node's boot, join and operands x1.5) while plan.md
    printed a 12.7 min cold start for g6e: the first serving pod of every pool was evicted and requeued. The timeout
    now covers, for every group, the node start, the pull the pod does itself (ai-on-eks pre-pulls nothing) and, on an
    Inference group, the weight load and warm-up: plan.md's "no warm node" figure."""
    from gpufleet.plan.builders import serving_start
    from gpufleet.plan.manifests import kueue
    from gpufleet.spec import cold_start

    fleet = load_fleet(str(SPEC), "prod").environments["prod"]
    timeout = int(kueue.controller_configuration(fleet)["waitForPodsReady"]["timeout"].rstrip("s"))
    # 1200 s until issue 45 priced a pull at 10.78 GB an image at 0.096 GB/s (gpufleet.facts.image_pull), not 300 s;
    # 960 s until parallel pull (0.18 GB/s on AL2023, 0.24 GB/s on ai-on-eks's Bottlerocket) became the default
    assert timeout == 840
    for group in fleet.node_groups:
        ready = cold_start.ready_seconds(fleet, group)
        assert ready * cold_start.MARGIN <= timeout, group.name
        times = serving_start.ready_time(fleet, group)
        if group.workload_class.value == "Inference":
            assert times is not None and ready == times.cold_node_s, group.name
