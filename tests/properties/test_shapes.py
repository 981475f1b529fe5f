"""Properties of the shape check (issue 47 items 2 and 4): a value of another type at any path of a valid workload
manifest, or of a Kubernetes object of a synth tree sealed again, never makes explain (with --running, with --as),
check or diff exit 3: the schema the API server reads the object with refuses it first, or the readers cope."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.simulate.workload import KINDS
from tests.properties.cli import run, scratch
from tests.properties.mutations import _walk
from tests.properties.test_trees import TREES, check_and_diff
from tests.trees import reseal

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = [
    doc
    for path in sorted((ROOT / "docs/examples").glob("*.yaml"))
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict) and doc.get("kind") in KINDS
]
MEMBER = "arn:aws:iam::111122223333:role/vision-researchers"
# One value of each JSON type, a few shapes of each: what a fuzzer (or a hand) puts where another type belongs. A
# null passes the schema anywhere (the decoders read it as the zero value): the model reads it.
OF_EACH_TYPE: list[Any] = [
    None,
    3,
    -1,
    2**40,
    1.5,
    "x",
    "",
    True,
    False,
    [],
    ["x", 3],
    [{"a": 1}],
    {},
    {"a": 1},
    {"x": []},
]


def _kind(value: Any) -> str:
    return "int" if isinstance(value, int) and not isinstance(value, bool) else type(value).__name__


def _set(root: Any, path: tuple[str | int, ...], value: Any) -> None:
    for part in path[:-1]:
        root = root[part]
    root[path[-1]] = value


@st.composite
def wrong_typed(draw: st.DrawFn, data: dict[str, Any], keep: tuple[str, ...] = ("apiVersion", "kind")) -> Any:
    """`data` (copied) with one to three values, at paths drawn from all of its own, replaced by a value of another
    type. Its apiVersion and kind stay: the edit meets that kind's schema."""
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _walk(data) if p and p[0] not in keep]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        old: Any = data
        for part in path:
            old = old[part]
        other = draw(st.sampled_from([v for v in OF_EACH_TYPE if _kind(v) != _kind(old)]))
        _set(data, path, copy.deepcopy(other))
    return data


@settings(max_examples=max(4, settings.default.max_examples // 2))
@given(st.data(), st.sampled_from(["manifest", "running", "as"]))
def test_explain_of_a_wrong_typed_manifest_never_crashes(data: st.DataObject, how: str) -> None:
    doc = data.draw(wrong_typed(data.draw(st.sampled_from(WORKLOADS))))
    with scratch() as root:
        shutil.copy(ROOT / "fleet.yaml", root / "fleet.yaml")
        (root / "bad.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
        (root / "good.yaml").write_text(yaml.safe_dump(WORKLOADS[0]), encoding="utf-8")
        argv = {
            "manifest": ["bad.yaml"],
            "running": ["--running", "bad.yaml", "good.yaml"],
            "as": ["bad.yaml", "--as", MEMBER],
        }
        result = run(["explain", "fleet.yaml", "--env", "prod", *argv[how]], root)
        assert result.code == 0 or (result.stdout + result.stderr).strip()


KARPENTER = TREES / "karpenter-mixed" / "prod"  # a golden tree with NodePools and EC2NodeClasses, which diff reads
OBJECTS = sorted(p.relative_to(KARPENTER).as_posix() for p in KARPENTER.glob("*/k8s/*.yaml"))


@st.composite
def resealed_objects(draw: st.DrawFn, tree: Path) -> None:
    """One or two Kubernetes objects of the tree at `tree` with values of another type at paths drawn from their
    own, the tree sealed again (every hash and the digest match, as a forger would leave it)."""
    for rel in draw(st.lists(st.sampled_from(OBJECTS), min_size=1, max_size=2, unique=True)):
        obj = yaml.safe_load((tree / rel).read_text(encoding="utf-8"))
        (tree / rel).write_text(yaml.safe_dump(draw(wrong_typed(obj))), encoding="utf-8")
    reseal(tree)


@settings(max_examples=max(4, settings.default.max_examples // 2))
@given(st.data())
def test_check_and_diff_of_wrong_typed_tree_objects_never_crash(data: st.DataObject) -> None:
    """Issue 47 item 4: a NodePool whose spec is a number made diff exit 3 where check said clean; both read the
    tree through the same shape check now, and refuse it alike."""
    check_and_diff(data, resealed_objects(Path("damaged")), KARPENTER)
