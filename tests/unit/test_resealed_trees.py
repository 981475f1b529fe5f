"""A tree edited by hand and sealed again (each file's sha256 and the digest recomputed) passes the digest and the
hashes: the digest proves the files agree, not who wrote them. Each entry and file is checked against the shape its
type needs before use, within the spec loader's bounds (issue 26 item 5): each reproducer below made check or diff
exit 3, and the alias bomb made diff run for minutes while check said clean. Now: exit 2 with the reason."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpufleet.cli import main
from tests.trees import Damage, damaged_copy, edit_entry, minimal_tree, reading_argv, reseal

AWS = "01-foundation/aws/cluster.yaml"
HELM = "01-foundation/helm/gpu-operator.yaml"
K8S = "01-foundation/k8s/Namespace-cluster-gpu-operator.yaml"
NODE_GROUP = "01-foundation/aws/l4-node-group.yaml"
# 279 bytes that expand to 9^5 * 5 values wherever a consumer walks them
ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e]\n"
)


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return minimal_tree(tmp_path_factory)


def _write(rel: str, text: str) -> Damage:
    return lambda root: (root / rel).write_text(text, encoding="utf-8")


def _swap(a: str, b: str) -> Damage:
    def apply(root: Path) -> None:
        text_a, text_b = (root / a).read_text(), (root / b).read_text()
        (root / a).write_text(text_b)
        (root / b).write_text(text_a)

    return apply


def _yaml_edit(rel: str, old: str, new: str) -> Damage:
    def apply(root: Path) -> None:
        text = (root / rel).read_text()
        assert old in text
        (root / rel).write_text(text.replace(old, new, 1))

    return apply


RESEALED: list[tuple[str, Damage, str]] = [
    ("null-document", _write(AWS, "~\n"), f"{AWS} does not hold a mapping"),
    (
        "helm-and-k8s-swapped",
        _swap(HELM, K8S),
        f"{HELM} is not a Helm release's file (chart, namespace, repository, values, version)",
    ),
    (
        "entry-without-id",
        edit_entry("cluster", lambda e: e.pop("id")),
        "inventory.json: entry [10] has no id",
    ),
    (
        "entry-stage-number",
        edit_entry("cluster", lambda e: e.update(stage=1)),
        'inventory.json: entry "cluster" stage is 1, not the str synth writes',
    ),
    (
        "entry-unknown-key",
        edit_entry("cluster", lambda e: e.update(extra=True)),
        'inventory.json: entry "cluster" has "extra", which synth does not write',
    ),
    (
        "entry-file-moved",
        edit_entry("cluster", lambda e: e.update(stage="telemetry")),
        f'inventory.json: the entry "cluster" is not where synth puts it (02-telemetry/aws/cluster.yaml, not {AWS})',
    ),
    (
        "multi-document",
        _write(AWS, "type: a\n---\ntype: b\n"),
        f"{AWS}: not the YAML synth writes: expected a single document in the stream, but found another document",
    ),
    ("binary-tag", _write(AWS, "!!binary aGk=\n"), f"{AWS}: holds a bytes, which synth never writes"),
    (
        "custom-tag",
        _write(AWS, "!custom {a: 1}\n"),
        f"{AWS}: not the YAML synth writes: could not determine a constructor for the tag '!custom'",
    ),
    (
        "deep-nesting",
        _write(AWS, "[" * 1000 + "]" * 1000 + "\n"),
        f"{AWS}: 1:65: the document nests deeper than 64 levels",
    ),
    (
        "deep-nesting-past-libyaml",  # LibYAML's own limit is 1,000 flow levels: the bounds still say where
        _write(AWS, "[" * 3000 + "]" * 3000 + "\n"),
        f"{AWS}: 1:65: the document nests deeper than 64 levels",
    ),
    (
        "alias-bomb",
        _write(AWS, ALIAS_BOMB),
        f"{AWS}: 5:28: the document expands to more than 50000 values (YAML aliases are expanded where they are used)",
    ),
    (
        "aws-file-names-another",
        _yaml_edit(AWS, "name: cluster\n", "name: other\n"),
        f"{AWS} names another resource than its inventory entry",
    ),
    (
        "scaling-as-text",
        _yaml_edit(NODE_GROUP, "    maxSize: 4\n", "    maxSize: four\n"),
        f'{NODE_GROUP}: inputs.scalingConfig.maxSize must be a number (resource "l4-node-group"), as synth writes it',
    ),
]


@pytest.mark.parametrize(("edit", "reason"), [(e, r) for _, e, r in RESEALED], ids=[i for i, _, _ in RESEALED])
@pytest.mark.parametrize("command", ["check", "diff"])
def test_a_tree_edited_and_sealed_again_is_not_a_synth_tree(
    mini: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    edit: Damage,
    reason: str,
) -> None:
    tree = damaged_copy(mini, tmp_path / "tree", edit)
    reseal(tree)
    start = time.monotonic()
    assert main(reading_argv(command, mini, tree)) == 2
    assert time.monotonic() - start < 5  # the alias bomb ran diff for minutes
    assert capsys.readouterr() == ("", f"gpufleet {command}: error: {tree} is not a synth tree: {reason}\n")


KARPENTER = Path(__file__).resolve().parents[1] / "golden" / "trees" / "karpenter-mixed" / "prod"
NODE_POOL = "01-foundation/k8s/NodePool-cluster-l40s.yaml"


@pytest.mark.parametrize("limit", ["²48", "48①", "٤٨"])
def test_a_count_in_another_scripts_digits_is_no_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    """Issue 47 item 9: str.isdigit() holds for "²" (which int() refuses: diff exited 3) and for Arabic-Indic digits
    (which int() reads: "٤٨" counted as 48 GPUs that Kubernetes would refuse as a quantity). A count is ASCII digits."""
    tree = damaged_copy(
        KARPENTER, tmp_path / "tree", _yaml_edit(NODE_POOL, "nvidia.com/gpu: '48'", f"nvidia.com/gpu: '{limit}'")
    )
    reseal(tree)
    assert main(["diff", str(KARPENTER), str(tree)]) in (0, 1)
    out = capsys.readouterr().out
    assert "l40s" in out and "Traceback" not in out


def _node_pool_edit(old: str, new: str) -> Damage:
    return _yaml_edit(NODE_POOL, old, new)


# Issue 47 item 4: each made diff exit 3 (AttributeError in the review of Karpenter's drift) where check said clean.
NODE_POOL_TEMPLATE_LABELS = (
    "    metadata:\n      labels:\n        gpufleet.io/device-manager: DevicePlugin\n        gpufleet.io/fabric: None\n        gpufleet.io/gpu-model: L40S\n"
    "        gpufleet.io/node-group: l40s\n        gpufleet.io/sharing: Exclusive\n"
    "        gpufleet.io/workload-class: Inference\n"
)
NODE_POOLS_RESEALED: list[tuple[str, Damage, str]] = [
    (
        "node-pool-spec-a-number",
        lambda root: (root / NODE_POOL).write_text(
            (root / NODE_POOL).read_text().split("spec:\n")[0] + "spec: 3\n", encoding="utf-8"
        ),
        f"{NODE_POOL}: spec: expected mapping, got integer 3, which the API server refuses of a NodePool",
    ),
    (
        "node-pool-template-metadata-text",
        _node_pool_edit(NODE_POOL_TEMPLATE_LABELS, "    metadata: x\n"),
        f'{NODE_POOL}: spec.template.metadata: expected mapping, got string "x", which the API server refuses of a'
        " NodePool",
    ),
    (
        "node-pool-limits-a-list",
        _node_pool_edit("  limits:\n    nvidia.com/gpu: '48'\n", "  limits: [48]\n"),
        f"{NODE_POOL}: spec.limits: expected mapping, got list [48], which the API server refuses of a NodePool",
    ),
]


@pytest.mark.parametrize(
    ("edit", "reason"), [(e, r) for _, e, r in NODE_POOLS_RESEALED], ids=[i for i, _, _ in NODE_POOLS_RESEALED]
)
@pytest.mark.parametrize("command", ["check", "diff"])
def test_a_kubernetes_object_of_the_wrong_shape_is_refused_by_check_and_diff_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, edit: Damage, reason: str
) -> None:
    tree = damaged_copy(KARPENTER, tmp_path / "tree", edit)
    reseal(tree)
    assert main(reading_argv(command, KARPENTER, tree)) == 2
    assert capsys.readouterr() == ("", f"gpufleet {command}: error: {tree} is not a synth tree: {reason}\n")


def test_a_null_in_a_kubernetes_object_is_read_as_the_api_server_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The decoders read a null as the zero value: the review meets no null (it did: a null NodePool template
    made diff exit 3 too)."""
    tree = damaged_copy(
        KARPENTER, tmp_path / "tree", _node_pool_edit(NODE_POOL_TEMPLATE_LABELS, "    metadata: null\n")
    )
    reseal(tree)
    assert main(["check", str(tree)]) in (0, 1)
    assert main(["diff", str(KARPENTER), str(tree)]) == 0
    assert "NodePool l40s" in capsys.readouterr().out
