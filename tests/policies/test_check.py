"""`gpufleet check DIR`: clean on every golden tree and on a fresh synth of the example; each violation planted
into the resources of a real tree (as `check` reads them from it) is reported with its rule name and resource, and
a mandatory one fails the command (its exit code)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.cli import main
from gpufleet.commands.check import report
from gpufleet.tree.output import write_tree
from tests.synthesized import tree_of
from tests.trees import resources

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted(p.parent for p in (ROOT / "tests" / "golden" / "trees").glob("*/*/plan.json"))


@pytest.fixture(scope="module")
def prod_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "prod"
    write_tree(tree_of(ROOT / "fleet.yaml", "prod"), str(out))
    return out


@pytest.fixture(scope="module")
def prod_resources(prod_tree: Path) -> list[dict[str, Any]]:
    return resources(prod_tree)


def check(directory: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", str(directory)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("tree", GOLDEN, ids=lambda p: str(p.relative_to(ROOT / "tests" / "golden" / "trees")))
def test_golden_trees_have_no_mandatory_violation(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tree, capsys)
    assert code == 0, out
    assert "MANDATORY" not in out


# The example pins no digest of the privileged images gpufleet renders (none is known to gpufleet; plan.md says how to
# read them): one advisory finding each (tests/unit/test_privileged_images.py).
EXAMPLE_ADVISORIES = {"privileged-image-digest"}


def test_example_synth_is_clean(prod_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(prod_tree, capsys)
    assert code == 0, out
    assert out.splitlines()[-1].endswith("0 mandatory violations, 2 advisory findings")
    assert {line.split(" ")[1] for line in out.splitlines() if line.startswith("ADVISORY ")} == EXAMPLE_ADVISORIES


def _find(inventory: list[dict[str, Any]], rid: str) -> dict[str, Any]:
    return next(e for e in inventory if e["id"] == rid)


def _user_data(inventory: list[dict[str, Any]], rid: str, edit: Callable[[str], str]) -> None:
    entry = _find(inventory, rid)
    entry["inputs"]["userData"] = edit(entry["inputs"]["userData"])  # a tree holds user data as text


def _kube(inventory: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(e for e in inventory if e["inputs"].get("kind") == kind and e["inputs"]["metadata"]["name"] == name)


_VLLM_ID = "deployment-language-vllm-server"


def _vllm(probe: bool = True) -> dict[str, Any]:
    """docs/examples/vllm.yaml's Deployment as a resource of the tree (a serving workload a stack would register)."""
    example = Path(__file__).resolve().parents[2] / "docs/examples/vllm.yaml"
    obj: dict[str, Any] = copy.deepcopy(next(iter(yaml.safe_load_all(example.read_text()))))
    if not probe:
        del obj["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    return {"id": _VLLM_ID, "type": "kubernetes:apps/v1:Deployment", "inputs": obj, "dependsOn": []}


def test_a_probed_serving_workload_in_the_tree_passes(prod_resources: list[dict[str, Any]]) -> None:
    """The rule reads the tree's Inference group (l40s, its gpufleet.io/serving taint), the serving class and the
    Deny binding of team namespace language: the example server with its readiness probe is clean, without it
    (PLANTED) it fails."""
    code, out = report([*prod_resources, _vllm()], "prod")
    assert code == 0 and "serving-readiness-probe" not in out, out


def _plant_taint(inv: list[dict[str, Any]]) -> None:
    _find(inv, "h100-node-group")["inputs"]["taints"] = [
        t for t in _find(inv, "h100-node-group")["inputs"]["taints"] if t["key"] != "nvidia.com/gpu"
    ]


def _plant_values(inv: list[dict[str, Any]], **values: Any) -> None:
    _find(inv, "helm-gpu-operator")["inputs"]["values"].update(values)


SPEECH_ENTRY = "access-team-speech-111122223333-teams-speech-researchers"
PLANTED: list[tuple[str, Callable[[list[dict[str, Any]]], None], str, str]] = [
    # (rule, plant, resource id reported, level)
    (
        "endpoint-not-open",
        lambda inv: _find(inv, "cluster")["inputs"]["vpcConfig"].update(publicAccessCidrs=["0.0.0.0/0"]),
        "cluster",
        "MANDATORY",
    ),
    (
        "endpoint-not-open",
        lambda inv: _find(inv, "cluster")["inputs"]["vpcConfig"].pop("publicAccessCidrs"),
        "cluster",
        "MANDATORY",
    ),
    ("team-has-members", lambda inv: inv.remove(_find(inv, SPEECH_ENTRY)), "namespace-cluster-speech", "MANDATORY"),
    (
        "team-access-in-namespace",
        lambda inv: _find(inv, SPEECH_ENTRY + "-edit")["inputs"].update(accessScope={"type": "cluster"}),
        SPEECH_ENTRY + "-edit",
        "MANDATORY",
    ),
    (
        "team-access-in-namespace",
        lambda inv: _kube(inv, "ClusterRole", "gpufleet-team-queue-viewer")["inputs"]["rules"][0]["verbs"].append(
            "delete"
        ),
        "clusterrolebinding-cluster-gpufleet-team-language-queue-viewer",
        "MANDATORY",
    ),
    (
        "team-namespace-default-deny",
        lambda inv: inv.remove(_kube(inv, "NetworkPolicy", "gpufleet-default-deny-ingress")),
        "namespace-cluster-language",
        "MANDATORY",
    ),
    (
        "team-namespace-default-deny",
        lambda inv: _find(inv, "addon-vpc-cni")["inputs"].pop("configurationValues"),
        "addon-vpc-cni",
        "MANDATORY",
    ),
    (
        "workload-namespace-pod-security",
        lambda inv: _kube(inv, "Namespace", "speech")["inputs"]["metadata"]["labels"].update(
            {"pod-security.kubernetes.io/enforce": "privileged"}
        ),
        "namespace-cluster-speech",
        "MANDATORY",
    ),
    ("serving-readiness-probe", lambda inv: inv.append(_vllm(probe=False)), _VLLM_ID, "MANDATORY"),
    ("gpu-node-group-tainted", _plant_taint, "h100-node-group", "MANDATORY"),
    (
        "one-instance-type",
        lambda inv: _find(inv, "l40s-node-group")["inputs"].update(instanceTypes=["g6e.12xlarge", "g6e.24xlarge"]),
        "l40s-node-group",
        "MANDATORY",
    ),
    (
        "node-image-pinned",
        lambda inv: _find(inv, "a100-mig-node-group")["inputs"].pop("releaseVersion"),
        "a100-mig-node-group",
        "MANDATORY",
    ),
    (
        "node-image-pinned",
        lambda inv: _find(inv, "a100-mig-node-group")["inputs"]["launchTemplate"].update(version="$Latest"),
        "a100-mig-node-group",
        "MANDATORY",
    ),
    (
        "desired-size-ignored",
        lambda inv: _find(inv, "notebooks-node-group").update(ignoreChanges=[]),
        "notebooks-node-group",
        "MANDATORY",
    ),
    (
        "training-topology-aligned",
        lambda inv: _user_data(
            inv,
            "h100-launch-template",
            lambda t: t.replace("topologyManagerPolicy: restricted", "topologyManagerPolicy: best-effort"),
        ),
        "h100-launch-template",
        "MANDATORY",
    ),
    (
        "efa-single-zone",
        lambda inv: _find(inv, "h100-node-group")["inputs"].update(
            subnetIds=["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
        ),
        "h100-node-group",
        "MANDATORY",
    ),
    (
        "efa-single-zone",
        lambda inv: _find(inv, "h100-launch-template")["inputs"].pop("networkInterfaces"),
        "h100-launch-template",
        "MANDATORY",
    ),
    (
        "gpu-operator-cve-fixed",
        lambda inv: _find(inv, "helm-gpu-operator")["inputs"].update(version="v25.3.0"),
        "helm-gpu-operator",
        "MANDATORY",
    ),
    ("gpu-operator-escape-closed", lambda inv: _plant_values(inv, devicePlugin={}), "helm-gpu-operator", "MANDATORY"),
    (
        "gpu-operator-escape-closed",
        lambda inv: _plant_values(inv, toolkit={"enabled": True, "version": "v1.17.8"}),
        "helm-gpu-operator",
        "MANDATORY",
    ),
    (
        "host-toolkit-escape-closed",
        lambda inv: _user_data(
            inv,
            "l40s-launch-template",
            lambda t: t.replace("envvar-when-unprivileged = false", "envvar-when-unprivileged = true"),
        ),
        "l40s-launch-template",
        "MANDATORY",
    ),
    (
        "checkpoint-bucket-protected",
        lambda inv: _find(inv, "checkpoint-bucket").update(protect=False),
        "checkpoint-bucket",
        "MANDATORY",
    ),
    (
        "checkpoint-bucket-protected",
        lambda inv: inv.remove(_find(inv, "checkpoint-bucket-public-access-block")),
        "checkpoint-bucket",
        "MANDATORY",
    ),
    (
        "team-namespace-queued",
        lambda inv: [
            inv.remove(e)
            for e in [
                e
                for e in inv
                if e["inputs"].get("kind") == "LocalQueue" and e["inputs"]["metadata"].get("namespace") == "speech"
            ]
        ],
        "namespace-cluster-speech",
        "MANDATORY",
    ),
    (
        "cluster-queue-selects-namespaces",
        lambda inv: _kube(inv, "ClusterQueue", "vision")["inputs"]["spec"].update(namespaceSelector={}),
        "clusterqueue-cluster-vision",
        "MANDATORY",
    ),
    (
        "interactive-warm-pool",
        lambda inv: _find(inv, "notebooks-node-group")["inputs"].pop("warmPoolConfig"),
        "notebooks-node-group",
        "ADVISORY",
    ),
    (
        "time-slicing-interactive-or-batch",
        lambda inv: _find(inv, "l40s-node-group")["inputs"]["labels"].update(
            {"nvidia.com/device-plugin.config": "notebooks"}
        ),
        "l40s-node-group",
        "ADVISORY",
    ),
]


@pytest.mark.parametrize(
    ("rule", "plant", "resource", "level"), PLANTED, ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANTED)]
)
def test_planted_violation_is_caught(
    rule: str,
    plant: Callable[[list[dict[str, Any]]], None],
    resource: str,
    level: str,
    prod_resources: list[dict[str, Any]],
) -> None:
    inventory = copy.deepcopy(prod_resources)
    plant(inventory)
    code, out = report(inventory, "prod")
    assert f"{level} {rule} {resource}: " in out, out
    assert "\n  fix: " in out
    reported = {line.split(" ")[1] for line in out.splitlines() if line.startswith(("MANDATORY ", "ADVISORY "))}
    assert reported - EXAMPLE_ADVISORIES == {rule}, out
    assert code == (1 if level == "MANDATORY" else 0)


def test_acknowledged_open_endpoint_passes_with_an_advisory_finding(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(ROOT / "tests" / "golden" / "trees" / "observability-install" / "prod", capsys)
    assert code == 0, out
    assert (
        "ADVISORY endpoint-open-acknowledged cluster: the public API endpoint of cluster obs is open to the internet"
        " (0.0.0.0/0), acknowledged: lab cluster - engineers connect from changing home networks" in out
    )


KARPENTER_TREE = ROOT / "tests" / "golden" / "trees" / "karpenter-mixed" / "prod"


def _spec_of(inv: list[dict[str, Any]], rid: str) -> dict[str, Any]:
    spec: dict[str, Any] = _find(inv, rid)["inputs"]["spec"]
    return spec


KARPENTER_PLANTED: list[tuple[str, Callable[[list[dict[str, Any]]], None], str]] = [
    # (rule, plant, resource id reported): each into the rendered karpenter-mixed tree, as `check` reads it
    (
        "karpenter-imds-v2",
        lambda inv: _spec_of(inv, "ec2nodeclass-cluster-l40s")["metadataOptions"].update(httpPutResponseHopLimit=2),
        "ec2nodeclass-cluster-l40s",
    ),
    (
        "karpenter-volumes-encrypted",
        lambda inv: _spec_of(inv, "ec2nodeclass-cluster-br")["blockDeviceMappings"][1]["ebs"].pop("encrypted"),
        "ec2nodeclass-cluster-br",
    ),
    (
        "karpenter-gpu-disruption",
        lambda inv: _spec_of(inv, "nodepool-cluster-h200")["disruption"].update(budgets=[{"nodes": "1"}]),
        "nodepool-cluster-h200",
    ),
    (
        "karpenter-gpu-disruption",
        lambda inv: _spec_of(inv, "nodepool-cluster-l40s")["template"]["spec"].pop("expireAfter"),
        "nodepool-cluster-l40s",
    ),
    (
        "gpu-node-group-tainted",
        lambda inv: _spec_of(inv, "nodepool-cluster-a100-mig")["template"]["spec"].update(taints=[]),
        "nodepool-cluster-a100-mig",
    ),
    (
        "training-topology-aligned",
        lambda inv: _spec_of(inv, "ec2nodeclass-cluster-h200").update(
            userData=_spec_of(inv, "ec2nodeclass-cluster-h200")["userData"].replace(
                "topologyManagerPolicy: restricted", "topologyManagerPolicy: best-effort"
            )
        ),
        "ec2nodeclass-cluster-h200",
    ),
    (
        "node-image-pinned",
        lambda inv: _spec_of(inv, "ec2nodeclass-cluster-l40s").update(amiSelectorTerms=[{"alias": "al2023@latest"}]),
        "ec2nodeclass-cluster-l40s",
    ),
    (
        "efa-single-zone",
        lambda inv: [
            _spec_of(inv, "nodepool-cluster-h200")["template"]["spec"].update(
                requirements=[
                    r
                    for r in _spec_of(inv, "nodepool-cluster-h200")["template"]["spec"]["requirements"]
                    if r["key"] != "topology.k8s.aws/zone-id"
                ]
            ),
            _spec_of(inv, "ec2nodeclass-cluster-h200")["subnetSelectorTerms"].append(
                {"id": "subnet-0a1b2c3d4e5f60002"}
            ),
        ],
        "nodepool-cluster-h200",
    ),
    (
        "host-toolkit-escape-closed",
        lambda inv: _spec_of(inv, "ec2nodeclass-cluster-notebooks").update(
            userData=_spec_of(inv, "ec2nodeclass-cluster-notebooks")["userData"].replace(
                "envvar-when-unprivileged = false", "envvar-when-unprivileged = true"
            )
        ),
        "ec2nodeclass-cluster-notebooks",
    ),
]


@pytest.mark.parametrize(
    ("rule", "plant", "resource"), KARPENTER_PLANTED, ids=[f"{p[0]}-{i}" for i, p in enumerate(KARPENTER_PLANTED)]
)
def test_planted_karpenter_violation_is_caught(
    rule: str, plant: Callable[[list[dict[str, Any]]], None], resource: str
) -> None:
    """The Karpenter rules run on the NodePools and EC2NodeClasses of a rendered tree: the golden karpenter-mixed
    tree is clean (test_golden_trees_have_no_mandatory_violation), and each planted violation fails it."""
    inventory = resources(KARPENTER_TREE)
    plant(inventory)
    code, out = report(inventory, "prod")
    assert f"MANDATORY {rule} {resource}: " in out, out
    reported = {line.split(" ")[1] for line in out.splitlines() if line.startswith("MANDATORY ")}
    assert reported == {rule}, out
    assert code == 1


def test_an_interactive_pool_without_headroom_is_an_advisory_finding(capsys: pytest.CaptureFixture[str]) -> None:
    """karpenter-mixed's notebooks pool keeps no headroom: an advisory finding, which fails nothing."""
    code, out = check(KARPENTER_TREE, capsys)
    assert code == 0, out
    assert (
        "ADVISORY interactive-warm-pool nodepool-cluster-notebooks: Interactive NodePool 'notebooks' has no headroom:"
        " Karpenter launches a node only once a user's pod is pending, a cold start of minutes"
    ) in out
