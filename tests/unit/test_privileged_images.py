"""The privileged images gpufleet renders itself run by digest when the spec gives one (issue 31 item 8, part):
the table of gpufleet/facts/images.py holds every privileged container of the rendered trees, `images.<key>` renders
as `name:tag@sha256:<digest>`, a digest of the wrong shape or for another tag is a positioned error,
`images.requireDigests` refuses a tag alone, plan.md lists each tag-pinned image with how to read its digest, and
`gpufleet check` reports an advisory finding per image.

FAKE DIGESTS: every sha256 below is made up for the test (a repeated hex digit, the hash of the word "fake"); none is
the digest of a real image, and none may be copied into a spec.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.base.errors import SpecError
from gpufleet.cli import main
from gpufleet.commands.check import report
from gpufleet.facts.images import IMAGES, PRIVILEGED, PYTHON_IMAGE, matches
from gpufleet.plan.before_deploy import before_you_deploy
from gpufleet.plan.rollout import build_plan
from gpufleet.policies.rules import RULES_BY_NAME
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.tree.output import write_tree
from tests.synthesized import tree_of
from tests.trees import resources

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted(p.parent for p in (ROOT / "tests" / "golden" / "trees").glob("*/*/plan.json"))
EXAMPLE = (ROOT / "fleet.yaml").read_text()
RDMA_CASE = ROOT / "tests" / "golden" / "cases" / "network-rdma" / "fleet.yaml"

# FAKE, well-formed digests (not of any real image).
FAKE = "sha256:" + hashlib.sha256(b"fake").hexdigest()
FAKE_2 = "sha256:" + "f" * 64
DCGM_TAG = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
MULTUS_TAG = "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0-thick"


def _with_images(text: str, images: Mapping[str, Any]) -> str:
    return text + "\n" + yaml.safe_dump({"images": dict(images)}, width=1000)


def _pod_containers(inputs: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    spec = inputs.get("spec") or {}
    spec = (spec.get("jobTemplate") or {}).get("spec") or spec  # a CronJob's pods are its job template's
    pod = (spec.get("template") or {}).get("spec")
    if isinstance(pod, Mapping):
        for key in ("initContainers", "containers"):
            for c in pod.get(key) or []:
                yield key, pod, c


def _cluster_bound(entries: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(namespace, service account) of every ServiceAccount bound to a ClusterRole by a ClusterRoleBinding."""
    return {
        (s.get("namespace"), s.get("name"))
        for e in entries
        if e["inputs"].get("kind") == "ClusterRoleBinding"
        for s in e["inputs"].get("subjects") or []
        if s.get("kind") == "ServiceAccount"
    }


def _why_privileged(pod: Mapping[str, Any], c: Mapping[str, Any], bound: bool) -> list[str]:
    sc = c.get("securityContext") or {}
    mounts = {m["name"] for m in c.get("volumeMounts") or []}
    host_paths = {v["name"] for v in pod.get("volumes") or [] if "hostPath" in v}
    reasons = [k for k in ("hostNetwork", "hostPID", "hostIPC") if pod.get(k)]
    reasons += ["privileged"] if sc.get("privileged") else []
    reasons += ["capabilities"] if (sc.get("capabilities") or {}).get("add") else []
    reasons += ["root"] if 0 in (sc.get("runAsUser"), (pod.get("securityContext") or {}).get("runAsUser")) else []
    reasons += ["hostPath"] if mounts & host_paths else []
    reasons += ["cluster-wide ServiceAccount"] if bound else []
    return reasons


def _privileged_in(tree: Path) -> set[tuple[str, str, str]]:
    """(kind, name, container) of every container of the tree with host or cluster-wide power."""
    entries = resources(tree)
    bound = _cluster_bound(entries)
    found: set[tuple[str, str, str]] = set()
    for e in entries:
        inputs = e["inputs"]
        if e["type"].startswith("kubernetes:helm.sh/"):
            # Containers gpufleet adds to a chart's pod (the chart's own containers run the chart's images).
            for c in (inputs.get("values") or {}).get("extraContainers") or []:
                found.add(("HelmRelease", inputs["name"], c["name"]))
            continue
        for _, pod, c in _pod_containers(inputs):
            namespace = inputs["metadata"].get("namespace")
            account = (namespace, pod.get("serviceAccountName", "default"))
            if _why_privileged(pod, c, account in bound):
                found.add((inputs["kind"], inputs["metadata"]["name"], c["name"]))
    return found


@pytest.mark.parametrize("tree", GOLDEN, ids=lambda p: str(p.relative_to(ROOT / "tests" / "golden" / "trees")))
def test_every_privileged_container_of_a_golden_tree_is_in_the_table(tree: Path) -> None:
    missing = {
        found
        for found in _privileged_in(tree)
        if not any(e.container == found[2] and matches(e, found[0], found[1]) for e in PRIVILEGED)
    }
    assert missing == set(), "add them to gpufleet/facts/images.py PRIVILEGED, with the reason"


def test_the_golden_trees_hold_every_table_entry() -> None:
    # The detector above sees each entry somewhere (a table entry nothing renders would be a stale row).
    seen = set().union(*(_privileged_in(t) for t in GOLDEN))
    for entry in PRIVILEGED:
        assert any(entry.container == c and matches(entry, k, n) for k, n, c in seen), entry


def _images_of(tree: Path) -> dict[str, str]:
    """container name -> image of the table's containers in a tree."""
    out: dict[str, str] = {}
    for e in resources(tree):
        inputs = e["inputs"]
        if e["type"].startswith("kubernetes:helm.sh/"):
            for c in (inputs.get("values") or {}).get("extraContainers") or []:
                out[c["name"]] = c["image"]
        else:
            for _, _, c in _pod_containers(inputs):
                out[c["name"]] = c["image"]
    return out


@pytest.fixture(scope="module")
def pinned_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = tmp_path_factory.mktemp("spec") / "fleet.yaml"
    spec.write_text(_with_images(EXAMPLE, {"python": f"{PYTHON_IMAGE}@{FAKE}", "dcgm": f"{DCGM_TAG}@{FAKE_2}"}))
    out = tmp_path_factory.mktemp("synth") / "prod"
    write_tree(tree_of(spec, "prod"), str(out))
    return out


def test_digests_render_as_tag_and_digest(pinned_tree: Path) -> None:
    images = _images_of(pinned_tree)
    assert images["remediator"] == images["verify"] == f"python:3.13.5-slim-bookworm@{FAKE}"
    assert images["inject"] == images["dcgm-health"] == f"{DCGM_TAG}@{FAKE_2}"


def test_multus_renders_with_its_digest(tmp_path: Path) -> None:
    spec = tmp_path / "fleet.yaml"
    spec.write_text(_with_images(RDMA_CASE.read_text(), {"multus": f"{MULTUS_TAG}@{FAKE}"}))
    out = tmp_path / "prod"
    env = next(iter(yaml.safe_load(RDMA_CASE.read_text())["environments"]))
    write_tree(tree_of(spec, env), str(out))
    images = _images_of(out)
    assert images["install-multus-binary"] == images["kube-multus"] == f"{MULTUS_TAG}@{FAKE}"


def test_without_digests_the_tags_render_as_before() -> None:
    tree = ROOT / "tests" / "golden" / "trees" / "example" / "prod"
    images = _images_of(tree)
    assert images["remediator"] == PYTHON_IMAGE and images["dcgm-health"] == DCGM_TAG


def _errors(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_fleet_text(text)
    return [f"{'.'.join(map(str, i.path))}: {i.message} | {i.hint}" for i in info.value.issues]


@pytest.mark.parametrize(
    "value",
    [
        f"{PYTHON_IMAGE}@sha256:{'a' * 63}",  # 63 hex digits
        f"{PYTHON_IMAGE}@sha256:{'A' * 64}",  # upper case
        f"python@{FAKE}",  # no tag: the tag is what validate compares
        FAKE,  # a digest alone
        f"{PYTHON_IMAGE}@sha512:{'a' * 128}",
        PYTHON_IMAGE,  # a tag alone
    ],
)
def test_a_digest_of_the_wrong_shape_is_a_positioned_schema_error(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "fleet.yaml"
    spec.write_text(_with_images(EXAMPLE, {"python": value}))
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err.splitlines()
    line = spec.read_text().splitlines().index(f"  python: {yaml.safe_dump(value).splitlines()[0]}") + 1
    assert err[0] == (
        f'{spec}:{line}:11: images.python: "{value}" is not an image reference with its digest,'
        " name:tag@sha256:<64 lowercase hex digits>"
    )
    assert err[3] == (
        "hint: keep the tag and append the digest it resolves to: `crane digest <name:tag>` or `docker buildx"
        " imagetools inspect <name:tag>` prints it (sha256: and 64 hex digits)"
    )
    assert err[-1] == f"{spec}: 1 error(s)"


def test_a_digest_for_another_tag_is_refused() -> None:
    old = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
    assert _errors(_with_images(EXAMPLE, {"dcgm": f"{old}@{FAKE}"})) == [
        f'images.dcgm: "{old}@{FAKE}" is a digest of {old}, but this fleet runs {DCGM_TAG}: the runtime would pull'
        " the digest and run the other image"
        f" | take the digest of {DCGM_TAG} (`crane digest {DCGM_TAG}` or `docker buildx imagetools inspect"
        f' {DCGM_TAG}`) and write images.dcgm: "{DCGM_TAG}@sha256:<digest>"'
    ]


def test_a_digest_of_an_image_the_fleet_does_not_render_is_a_warning() -> None:
    validated = load_fleet_text(_with_images(EXAMPLE, {"multus": f"{MULTUS_TAG}@{FAKE}"}))
    assert [(i.path, i.severity, i.message) for i in validated.warnings if i.path[0] == "images"] == [
        (
            ("images", "multus"),
            "warning",
            "set, but no environment renders a container that runs the Multus CNI image: it is not used",
        )
    ]


def test_require_digests_refuses_each_tag_only_image() -> None:
    text = _with_images(EXAMPLE, {"requireDigests": True, "python": f"{PYTHON_IMAGE}@{FAKE}"})
    assert _errors(text) == [
        f'images.requireDigests: true, but the DCGM image "{DCGM_TAG}" (planted-fault'
        " injector, DCGM health sidecar) is pinned by tag only"
        f' | write images.dcgm: "{DCGM_TAG}@sha256:<digest>", the digest from `crane digest {DCGM_TAG}` or'
        f" `docker buildx imagetools inspect {DCGM_TAG}`"
    ]
    full = _with_images(
        EXAMPLE, {"requireDigests": True, "python": f"{PYTHON_IMAGE}@{FAKE}", "dcgm": f"{DCGM_TAG}@{FAKE}"}
    )
    assert load_fleet_text(full).base.images.require_digests is True


def test_require_digests_for_one_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "fleet.yaml"
    spec.write_text(EXAMPLE + "    overrides:\n      images: {requireDigests: true}\n")
    assert yaml.safe_load(spec.read_text())["environments"]["prod"]["overrides"] == {"images": {"requireDigests": True}}
    assert main(["validate", str(spec)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith(str(spec))]
    line = len(spec.read_text().splitlines())
    assert [e.split(": ", 2)[:2] for e in err[:-1]] == [[f"{spec}:{line}:32", "images.requireDigests"]] * 2
    assert ["pinned by tag only" in e and "(environment prod)" in e for e in err[:-1]] == [True, True]


def test_before_you_deploy_lists_each_tag_only_image() -> None:
    fleet = load_fleet_text(EXAMPLE).environments["prod"]
    items = [i for i in before_you_deploy(build_plan(fleet, "prod")) if "pinned by tag only" in i]
    assert items == [
        "The Python image `python:3.13.5-slim-bookworm` (remediation controller, planted-fault checker) runs"
        " privileged and is pinned by tag only: read the digest the tag resolves to now (`crane digest"
        " python:3.13.5-slim-bookworm` or `docker buildx imagetools inspect python:3.13.5-slim-bookworm`), check it"
        ' is the image you expect, and pin it: `images.python: "python:3.13.5-slim-bookworm@sha256:<digest>"`'
        ' (docs/tenancy-and-access.md, "Privileged images").',
        f"The DCGM image `{DCGM_TAG}` (planted-fault injector, DCGM health sidecar) runs privileged and is pinned by"
        f" tag only: read the digest the tag resolves to now (`crane digest {DCGM_TAG}` or `docker buildx imagetools"
        f" inspect {DCGM_TAG}`), check it is the image you expect, and pin it:"
        f' `images.dcgm: "{DCGM_TAG}@sha256:<digest>"` (docs/tenancy-and-access.md, "Privileged images").',
    ]
    pinned = load_fleet_text(_with_images(EXAMPLE, {"python": f"{PYTHON_IMAGE}@{FAKE}"})).environments["prod"]
    items = [i for i in before_you_deploy(build_plan(pinned, "prod")) if "pinned by tag only" in i]
    assert [i.split("`")[1] for i in items] == [DCGM_TAG]


def test_an_environment_without_the_health_stage_lists_none() -> None:
    fleet = load_fleet_text(EXAMPLE).environments["dev"]
    plan = build_plan(fleet, "dev")
    assert plan.through != "health"
    assert not [i for i in before_you_deploy(plan) if "pinned by tag only" in i]


def test_check_reports_an_advisory_finding_per_tag_only_image(pinned_tree: Path) -> None:
    tree = ROOT / "tests" / "golden" / "trees" / "example" / "prod"
    findings = RULES_BY_NAME["privileged-image-digest"].run(resources(tree))
    assert [(f.severity, f.resource, f.message.split('"')[1]) for f in findings] == [
        ("advisory", "deployment-gpufleet-health-gpufleet-remediator", PYTHON_IMAGE),
        ("advisory", "helm-node-problem-detector", DCGM_TAG),
    ]
    assert findings[0].hint == (
        f'set images.python: "{PYTHON_IMAGE}@sha256:<digest>" in the spec, the digest from `crane digest'
        f" {PYTHON_IMAGE}` or `docker buildx imagetools inspect {PYTHON_IMAGE}`"
    )
    code, text = report(resources(tree), str(tree))
    assert code == 0 and text.splitlines()[-1].endswith("0 mandatory violations, 2 advisory findings")
    # With both digests given, nothing is left to report.
    assert RULES_BY_NAME["privileged-image-digest"].run(resources(pinned_tree)) == []


def test_check_reports_a_gate_image_without_a_digest() -> None:
    tree = ROOT / "tests" / "golden" / "trees" / "network-efa"
    entries = resources(next(tree.glob("*")))
    job = next(
        e
        for e in entries
        if e["inputs"].get("kind") == "Job" and e["inputs"]["metadata"]["name"].startswith("nccl-gate-")
    )
    job["inputs"]["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/nccl-tests:v1"
    findings = [f for f in RULES_BY_NAME["privileged-image-digest"].run(entries) if "nccl-tests" in f.message]
    assert [(f.resource, f.hint.split(":", 1)[0]) for f in findings] == [(job["id"], "set network.bandwidthGate.image")]


def test_the_table_names_a_reason_and_a_known_image_for_every_container() -> None:
    assert all(e.why and (e.image in IMAGES or e.image == "network.bandwidthGate.image") for e in PRIVILEGED)
