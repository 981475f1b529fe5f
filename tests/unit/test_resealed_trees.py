"""A tree edited by hand and sealed again (each file's sha256 and the digest recomputed) passes the digest and the
hashes: the digest proves the files agree, not who wrote them. Each entry and file is checked against the shape its
type needs before use, within the spec loader's bounds (issue 26 item 5): each reproducer below made check or diff
exit 3, and the alias bomb made diff run for minutes while check said clean. Now: exit 2 with the reason."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.tree.output import write_tree
from tests.synthesized import tree_of
from tests.trees import reseal

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "tests/specs/valid/minimal.yaml"
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
    out = tmp_path_factory.mktemp("mini") / "dev"
    write_tree(tree_of(MINIMAL, "dev"), str(out))
    return out


def _write(rel: str, text: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).write_text(text, encoding="utf-8")


def _swap(a: str, b: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        text_a, text_b = (root / a).read_text(), (root / b).read_text()
        (root / a).write_text(text_b)
        (root / b).write_text(text_a)

    return apply


def _entry(rid: str, edit: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        inventory = json.loads((root / "inventory.json").read_text())
        edit(next(e for e in inventory if e["id"] == rid))
        (root / "inventory.json").write_text(json.dumps(inventory))

    return apply


def _yaml_edit(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        text = (root / rel).read_text()
        assert old in text
        (root / rel).write_text(text.replace(old, new, 1))

    return apply


RESEALED: list[tuple[str, Callable[[Path], None], str]] = [
    ("null-document", _write(AWS, "~\n"), f"{AWS} does not hold a mapping"),
    (
        "helm-and-k8s-swapped",
        _swap(HELM, K8S),
        f"{HELM} is not a Helm release's file (chart, namespace, repository, values, version)",
    ),
    (
        "entry-without-id",
        _entry("cluster", lambda e: e.pop("id")),
        "inventory.json: entry [10] has no id",
    ),
    (
        "entry-stage-number",
        _entry("cluster", lambda e: e.update(stage=1)),
        'inventory.json: entry "cluster" stage is 1, not the str synth writes',
    ),
    (
        "entry-unknown-key",
        _entry("cluster", lambda e: e.update(extra=True)),
        'inventory.json: entry "cluster" has "extra", which synth does not write',
    ),
    (
        "entry-file-moved",
        _entry("cluster", lambda e: e.update(stage="telemetry")),
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
    edit: Callable[[Path], None],
    reason: str,
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(mini, tree)
    edit(tree)
    reseal(tree)
    argv = [command, str(tree)] if command == "check" else [command, str(mini), str(tree)]
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 5  # the alias bomb ran diff for minutes
    assert capsys.readouterr() == ("", f"gpufleet {command}: error: {tree} is not a synth tree: {reason}\n")
