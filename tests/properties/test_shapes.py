"""Properties of the shape check (issue 47 items 2 and 4): a value of another type at any path of a valid workload
manifest, or of a Kubernetes object of a synth tree sealed again, never makes explain (with --running, with --as),
check or diff exit 3: the schema the API server reads the object with refuses it first, or the readers cope."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import example, given, settings
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


Edit = tuple[tuple[str | int, ...], Any]  # a path and the value put there


@st.composite
def wrong_typed(draw: st.DrawFn, data: dict[str, Any], keep: tuple[str, ...] = ("apiVersion", "kind")) -> list[Edit]:
    """One to three edits of `data`, each replacing the value at a path drawn from its own (as the earlier edits left
    it) by a value of another type. Its apiVersion and kind stay: the edits meet that kind's schema."""
    data = copy.deepcopy(data)
    edits: list[Edit] = []
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _walk(data) if p and p[0] not in keep]
        if not paths:
            break
        # a depth first, then a path of that depth: the few mappings and lists near the root (spec, its template,
        # the pod spec), which every reader walks through, are drawn as often as the many leaves
        depth = draw(st.sampled_from(sorted({len(p) for p in paths})))
        path = draw(st.sampled_from([p for p in paths if len(p) == depth]))
        old: Any = data
        for part in path:
            old = old[part]
        edit = (path, draw(st.sampled_from([v for v in OF_EACH_TYPE if _kind(v) != _kind(old)])))
        data = edited(data, [edit])
        edits.append(edit)
    return edits


def edited(data: Any, edits: list[Edit]) -> Any:
    """A copy of `data` with each edit's value at its path (a key added where the mapping has none)."""
    data = copy.deepcopy(data)
    for path, value in edits:
        _set(data, path, copy.deepcopy(value))
    return data


NOTEBOOK = next(i for i, doc in enumerate(WORKLOADS) if doc["metadata"]["name"] == "notebook-alice")
FINETUNE = next(i for i, doc in enumerate(WORKLOADS) if doc["kind"] == "TrainJob")
# Issue 47 item 2's reproducers, each of which exited 3: the property's explicit examples.
REPRODUCERS: list[tuple[int, list[Edit]]] = [
    (NOTEBOOK, [(("spec", "tolerations"), "x")]),
    (NOTEBOOK, [(("spec", "volumes"), 3)]),
    (NOTEBOOK, [(("metadata", "ownerReferences"), 3)]),
    (NOTEBOOK, [(("spec", "securityContext"), 1.5)]),
    (NOTEBOOK, [(("spec", "containers", 0, "securityContext"), "x")]),
    (FINETUNE, [(("spec", "runtimeRef"), 3)]),
    (FINETUNE, [(("spec", "trainer", "env"), ["x", 3])]),
]


@st.composite
def edited_workload(draw: st.DrawFn) -> tuple[int, list[Edit]]:
    index = draw(st.integers(0, len(WORKLOADS) - 1))
    return index, draw(wrong_typed(WORKLOADS[index]))


def _with_reproducers(test: Any) -> Any:
    for case in REPRODUCERS:
        test = example(case, "manifest")(test)
    return example(REPRODUCERS[0], "running")(example(REPRODUCERS[0], "as")(test))


@settings(max_examples=max(4, settings.default.max_examples // 2))
@given(edited_workload(), st.sampled_from(["manifest", "running", "as"]))
@_with_reproducers
def test_explain_of_a_wrong_typed_manifest_never_crashes(case: tuple[int, list[Edit]], how: str) -> None:
    doc = edited(WORKLOADS[case[0]], case[1])
    with scratch() as root:
        shutil.copy(ROOT / "fleet.yaml", root / "fleet.yaml")
        (root / "bad.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
        (root / "good.yaml").write_text(yaml.safe_dump(WORKLOADS[NOTEBOOK]), encoding="utf-8")
        argv = {
            "manifest": ["bad.yaml"],
            "running": ["--running", "bad.yaml", "good.yaml"],
            "as": ["bad.yaml", "--as", MEMBER],
        }
        result = run(["explain", "fleet.yaml", "--env", "prod", *argv[how]], root)
        assert result.code == 0 or (result.stdout + result.stderr).strip()


KARPENTER = TREES / "karpenter-mixed" / "prod"  # a golden tree with NodePools and EC2NodeClasses, which diff reads
OBJECTS = sorted(p.relative_to(KARPENTER).as_posix() for p in KARPENTER.glob("*/k8s/*.yaml"))
# The objects whose content the review reads beyond their metadata (Karpenter's drift, quotas, access): drawn as
# often as all the others together.
REVIEWED = [o for o in OBJECTS if o.split("/")[-1].split("-")[0] in ("NodePool", "EC2NodeClass", "ClusterQueue")]


@st.composite
def object_edits(draw: st.DrawFn) -> list[tuple[str, list[Edit]]]:
    """Wrong-typed edits of one or two Kubernetes objects of the tree, by file."""
    rels = draw(st.lists(st.sampled_from(REVIEWED) | st.sampled_from(OBJECTS), min_size=1, max_size=2, unique=True))
    return [(rel, draw(wrong_typed(yaml.safe_load((KARPENTER / rel).read_text(encoding="utf-8"))))) for rel in rels]


NODE_POOL = "01-foundation/k8s/NodePool-cluster-l40s.yaml"


@settings(max_examples=max(4, settings.default.max_examples // 2))
@given(object_edits())
@example([(NODE_POOL, [(("spec",), 3)])])  # issue 47 item 4's reproducers: diff exited 3, check said clean
@example([(NODE_POOL, [(("spec", "template", "metadata"), "x")])])
def test_check_and_diff_of_wrong_typed_tree_objects_never_crash(edits: list[tuple[str, list[Edit]]]) -> None:
    """Issue 47 item 4: check and diff read a tree sealed again through the same shape check, and refuse it alike."""

    def damage(tree: Path) -> None:
        for rel, changes in edits:
            obj = yaml.safe_load((tree / rel).read_text(encoding="utf-8"))
            (tree / rel).write_text(yaml.safe_dump(edited(obj, changes)), encoding="utf-8")
        reseal(tree)

    check_and_diff(damage, KARPENTER)
