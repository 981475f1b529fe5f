"""Properties of check and diff over damaged synth trees (issue 14 item 7): a tree with files deleted, truncated,
replaced, added or edited gets exit 0, 1 or 2 with a message, never 3, never a traceback, and neither command
writes anything."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.tree import output
from tests.properties.cli import run, scratch, snapshot
from tests.properties.digits import translated
from tests.properties.mutations import _walk, deep_yaml, mutate, text, values
from tests.trees import reseal

TREES = Path(__file__).resolve().parents[1] / "golden" / "trees"
TREE = TREES / "observability-existing" / "prod"  # the smallest golden tree
OTHER = TREES / "teams-without-cohort" / "prod"  # another fleet: a real diff, with the warning
FILES = sorted(p.relative_to(TREE).as_posix() for p in TREE.rglob("*") if p.is_file())
JSON_FILES = ["plan.json", "inventory.json"]


FILE_OPS = ("delete", "truncate", "garbage", "bytes", "add", "directory", "symlink", "edit-json", "edit-json")


@st.composite
def damage(draw: st.DrawFn, tree: Path) -> None:
    """Damage the tree at `tree` in place with one to three changes."""
    for _ in range(draw(st.integers(1, 3))):
        files = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) or FILES
        rel = draw(st.sampled_from(files))
        path = tree / rel
        op = draw(st.sampled_from(FILE_OPS))
        if op == "delete" and path.exists():
            path.unlink()
        elif op == "truncate" and path.exists():
            data = path.read_bytes()
            path.write_bytes(data[: draw(st.integers(0, len(data)))])
        elif op == "garbage":
            path.write_text(draw(text), encoding="utf-8")
        elif op == "bytes":
            path.write_bytes(draw(st.binary(max_size=64)))
        elif op == "add":
            name = draw(
                st.sampled_from(
                    ["01-foundation/k8s/x.yaml", "99-extra/aws/y.yaml", "notes.txt", ".hidden", "01-foundation/z"]
                )
            )
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(draw(text), encoding="utf-8")
        elif op == "directory" and path.exists():
            path.unlink()
            path.mkdir()
        elif op == "symlink" and path.exists():
            path.unlink()
            path.symlink_to(draw(st.sampled_from(["/etc/hostname", "plan.md", "missing"])))
        elif op == "edit-json":
            target = tree / draw(st.sampled_from(JSON_FILES))
            if target.is_dir():  # an earlier "directory" change made it one
                continue
            try:
                data = json.loads(target.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = draw(values)
            target.write_text(json.dumps(mutate(draw, data, draw(st.integers(1, 3)))), encoding="utf-8")


_TREES = settings(max_examples=max(4, settings.default.max_examples // 3))


@_TREES
@given(st.data())
def test_check_and_diff_of_a_damaged_tree_never_crash(data: st.DataObject) -> None:
    check_and_diff(lambda tree: data.draw(damage(tree)))


def check_and_diff(damage: Callable[[Path], None], tree: Path = TREE) -> None:
    """check and diff (as the old tree and as the new) of a copy of `tree` that `damage` damages: never exit 3,
    and check reads what diff reads."""
    with scratch() as root:
        shutil.copytree(tree, root / "damaged", symlinks=True)
        damage(Path("damaged"))
        check = run(["check", "damaged"], root)
        old = run(["diff", "damaged", str(OTHER)], root)
        new = run(["diff", str(OTHER), "damaged", "--format", "markdown"], root)
        assert check.code == 2 or old.code == new.code == 0 or (check.code in (0, 1) and old.code == new.code)
        for result in (check, old, new):
            assert result.code == 0 or (result.stderr + result.stdout).strip(), "a non-zero exit says why"


@_TREES
@given(st.data())
def test_synth_replaces_a_damaged_tree_only_when_check_reads_it(data: st.DataObject) -> None:
    """`synth --out` over an earlier tree, damaged: replaced only when it is still exactly the tree synth wrote
    (check reads it), else refused with nothing touched (issue 26 item 1: a file of the user's is never lost)."""
    with scratch() as root:
        shutil.copytree(TREE, root / "damaged", symlinks=True)
        data.draw(damage(Path("damaged")))
        check = run(["check", "damaged"], root)
        before = snapshot(root)
        try:
            staging = output.prepare("damaged")
        except output.TargetRefused as exc:
            assert check.code == 2, f"refused a tree check reads: {exc}"
            assert snapshot(root) == before
            return
        staging.discard()
        assert check.code in (0, 1), f"would replace a tree check refuses: {check.stderr}"


# What a hand edit sealed again may put in a resource file (issue 26 item 5): each made check or diff exit 3, or (the
# alias bomb, 279 bytes) run diff for minutes while check said clean.
HOSTILE_YAML = [
    "~\n",
    "",
    "[]\n",
    "x\n",
    "a: 1\n---\nb: 2\n",
    "!!binary aGk=\n",
    "when: !!timestamp 2025-01-01\n",
    "x: !!int abc\n",
    "!custom {a: 1}\n",
    "? [a]\n: b\n",
    "[" * 1000 + "]" * 1000 + "\n",
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e]\n",
]
YAML_FILES = [f for f in FILES if f.endswith(".yaml")]


@st.composite
def resealed(draw: st.DrawFn, tree: Path) -> None:
    """Edit the tree at `tree` by hand in one to three ways, then seal it again (hashes and digest match)."""
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["hostile", "deep", "digits", "swap", "edit-yaml", "edit-json", "edit-entry"]))
        rel = draw(st.sampled_from(YAML_FILES))
        if op == "hostile":
            (tree / rel).write_text(draw(st.sampled_from(HOSTILE_YAML)), encoding="utf-8")
        elif op == "deep":  # nesting past the bounds and LibYAML's limit (issue 47 item 8)
            (tree / rel).write_text(draw(deep_yaml()), encoding="utf-8")
        elif op == "digits":  # a count or tag in another script's digits (issue 47 item 9: "²48" GPUs, exit 3)
            _translate_digits(draw, tree / rel)
        elif op == "swap":
            other = draw(st.sampled_from(YAML_FILES))
            a, b = (tree / rel).read_text(encoding="utf-8"), (tree / other).read_text(encoding="utf-8")
            (tree / rel).write_text(b, encoding="utf-8")
            (tree / other).write_text(a, encoding="utf-8")
        elif op == "edit-yaml":
            try:
                data = yaml.safe_load((tree / rel).read_text(encoding="utf-8"))
            except (yaml.YAMLError, ValueError, TypeError, RecursionError):
                continue  # a hostile text already
            (tree / rel).write_text(yaml.safe_dump(mutate(draw, data, draw(st.integers(1, 3)))), encoding="utf-8")
        elif op == "edit-json":
            target = tree / draw(st.sampled_from(JSON_FILES))
            data = json.loads(target.read_text(encoding="utf-8"))
            target.write_text(json.dumps(mutate(draw, data, draw(st.integers(1, 3)))), encoding="utf-8")
        else:
            inventory = json.loads((tree / "inventory.json").read_text(encoding="utf-8"))
            if isinstance(inventory, list) and inventory:
                i = draw(st.integers(0, len(inventory) - 1))
                inventory[i] = mutate(draw, inventory[i], draw(st.integers(1, 2)))
                (tree / "inventory.json").write_text(json.dumps(inventory), encoding="utf-8")
    reseal(tree)


def _translate_digits(draw: st.DrawFn, path: Path) -> None:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return  # a hostile text already
    found = [(p, v) for p, v in _walk(data) if p and isinstance(v, str) and any(c in "0123456789" for c in v)]
    if not found:
        return
    where, value = draw(st.sampled_from(found))
    parent = data
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = draw(translated(value))
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


@_TREES
@given(st.data())
def test_check_and_diff_of_a_resealed_tree_never_crash(data: st.DataObject) -> None:
    """A tree edited and sealed again passes the digest and the hashes: every entry and file is checked against the
    shape its type needs before use (issue 26 item 5)."""
    check_and_diff(lambda tree: data.draw(resealed(tree)))
