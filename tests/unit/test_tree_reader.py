"""`check` and `diff` trust a tree only as synth wrote it (issue 14 item 4): every incomplete, damaged or edited
tree is "not a synth tree" with exit 2 and the reason, and `diff` warns when the trees are of different fleets."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.tree.read import read_tree
from gpufleet.tree.write import HELM_RELEASE, decode_user_data, digest, inventory_entries
from tests.synthesized import registrations_of
from tests.trees import Damage, damaged_copy, edit_entry, edit_json, minimal_tree, reading_argv, rewrite

ROOT = Path(__file__).resolve().parents[2]
YAML_FILE = "01-foundation/aws/cluster.yaml"


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return minimal_tree(tmp_path_factory)


def _plan_edit(edit: Callable[[dict[str, object]], None]) -> Damage:
    return edit_json("plan.json", edit)


def _forged(edit: Callable[[dict[str, object]], None]) -> Damage:
    """plan.json edited and sealed again with a matching digest: the digest proves consistency, not authorship."""

    def apply(root: Path) -> None:
        plan = json.loads((root / "plan.json").read_text())
        edit(plan)
        plan.pop("digest")
        inventory = json.loads((root / "inventory.json").read_text())
        plan["digest"] = digest(plan, inventory, (root / "plan.md").read_text())
        (root / "plan.json").write_text(json.dumps(plan))

    return apply


def _nested(root: Path) -> None:
    (root / "plan.json").write_text("[" * 100_000 + "]" * 100_000)


DIGEST = (
    "plan.json, plan.md or inventory.json differ from what synth wrote (the digest in plan.json does not match);"
    " synthesise it again"
)
CHANGED = (
    f"{YAML_FILE} differs from what synth wrote (its sha256 in inventory.json does not match); synthesise it again"
)

DAMAGE: list[tuple[str, Damage, str]] = [
    (
        "only-inventory",
        lambda r: (
            [p.unlink() if p.is_file() and p.name != "inventory.json" else None for p in r.iterdir()]
            and shutil.rmtree(r / "01-foundation")
        ),
        "no plan.json",
    ),
    ("empty-inventory", lambda r: (r / "inventory.json").write_text("[]\n"), DIGEST),
    ("inventory-garbage", lambda r: (r / "inventory.json").write_text("[{garbage"), DIGEST),
    ("inventory-entry-edited", edit_entry("cluster", lambda e: e.update(protect=False)), DIGEST),
    ("yaml-garbage", lambda r: (r / YAML_FILE).write_text("\x00: [garbage\n"), CHANGED),
    ("yaml-edited", lambda r: (r / YAML_FILE).write_text((r / YAML_FILE).read_text() + "extra: 1\n"), CHANGED),
    ("yaml-removed", lambda r: (r / YAML_FILE).unlink(), f"no {YAML_FILE} (inventory.json lists it)"),
    (
        "yaml-added",
        lambda r: (r / "01-foundation/aws/extra.yaml").write_text("a: 1\n"),
        "01-foundation/aws/extra.yaml is the file of no resource in inventory.json",
    ),
    ("plan-md-edited", lambda r: (r / "plan.md").write_text((r / "plan.md").read_text() + "\n"), DIGEST),
    ("inventory-removed", lambda r: (r / "inventory.json").unlink(), "no inventory.json"),
    ("plan-md-removed", lambda r: (r / "plan.md").unlink(), "no plan.md"),
    (
        "plan-json-garbage",
        lambda r: (r / "plan.json").write_text("{garbage"),
        "plan.json is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ),
    (
        "plan-json-nested",
        _nested,
        (
            "plan.json is not valid JSON: maximum recursion depth exceeded while decoding a JSON array from a unicode"
            " string"
        ),
    ),
    (
        "plan-json-list",
        lambda r: (r / "plan.json").write_text("[]"),
        'plan.json does not say format "gpufleet synth tree"',
    ),
    ("no-format", _plan_edit(lambda p: p.pop("format")), 'plan.json does not say format "gpufleet synth tree"'),
    (
        "newer-format",
        _plan_edit(lambda p: p.update(formatVersion=3)),
        "plan.json: format version 3: written by a newer gpufleet; upgrade it (this gpufleet reads version 2)",
    ),
    (
        "older-format",
        _plan_edit(lambda p: p.update(formatVersion=1)),
        (
            "plan.json: format version 1: written by an older gpufleet; synthesise it again (this gpufleet reads"
            " version 2)"
        ),
    ),
    (
        "string-format",
        _plan_edit(lambda p: p.update(formatVersion="2")),
        'plan.json: format version "2": not a version gpufleet writes (this gpufleet reads version 2)',
    ),
    ("no-digest", _plan_edit(lambda p: p.pop("digest")), "plan.json has no digest"),
    ("plan-edited", _plan_edit(lambda p: p.update(environment="prod")), DIGEST),
    (
        "forged-no-fleet-name",
        _forged(lambda p: p["fleet"].pop("name")),
        "plan.json: fleet must name the fleet, its cluster and region",
    ),
    (
        "forged-fleet-list",
        _forged(lambda p: p.update(fleet=[])),
        "plan.json: fleet must name the fleet, its cluster and region",
    ),
    ("forged-environment", _forged(lambda p: p.update(environment=None)), "plan.json: environment must be a name"),
    (
        "forged-stages",
        _forged(lambda p: p.update(stages=[{"index": 1}])),
        "plan.json: stages must be a list of named stages",
    ),
    ("foreign-file", lambda r: (r / "notes.txt").write_text("mine\n"), "notes.txt is not part of a synth tree"),
    (
        "symlink",
        lambda r: (r / "01-foundation/aws/link.yaml").symlink_to(r / YAML_FILE),
        "01-foundation/aws/link.yaml is a symbolic link",
    ),
    ("not-utf8", lambda r: (r / YAML_FILE).write_bytes(b"\xff\xfe"), f"{YAML_FILE} is not UTF-8 text"),
]


@pytest.mark.parametrize(("damage", "reason"), [(d, r) for _, d, r in DAMAGE], ids=[i for i, _, _ in DAMAGE])
@pytest.mark.parametrize("command", ["check", "diff"])
def test_a_damaged_tree_is_not_a_synth_tree(
    mini: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    damage: Damage,
    reason: str,
) -> None:
    tree = damaged_copy(mini, tmp_path / "tree", damage)
    assert main(reading_argv(command, mini, tree)) == 2
    assert capsys.readouterr() == ("", f"gpufleet {command}: error: {tree} is not a synth tree: {reason}\n")


@pytest.mark.parametrize(("path", "reason"), [("missing", "no such directory"), ("file", "not a directory")])
def test_a_path_that_is_no_directory_is_not_a_synth_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str, reason: str
) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["check", str(tmp_path / path)]) == 2
    assert capsys.readouterr().err == f"gpufleet check: error: {tmp_path / path} is not a synth tree: {reason}\n"


def test_an_intact_tree_is_read(mini: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(mini)]) == 1  # read and checked: the minimal fleet leaves its API endpoint open
    assert main(["diff", str(mini), str(mini)]) == 0
    assert capsys.readouterr().err == ""


def test_diff_warns_when_the_trees_are_of_different_fleets(
    mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shutil.copytree(mini, other)
    plan = json.loads((other / "plan.json").read_text())
    plan["fleet"] = {"name": "mini", "cluster": "mini", "region": "eu-west-1"}
    rewrite(other, plan=plan)
    assert main(["diff", str(mini), str(other)]) == 0
    out, err = capsys.readouterr()
    assert (
        err == f"gpufleet diff: warning: the trees are of different fleets: {mini} of fleet mini (cluster mini in"
        " us-east-1), "
        f"{other} of fleet mini (cluster mini in eu-west-1)\n"
    )
    assert "no changes" in out


def test_the_reader_gives_back_every_registration_with_its_inputs() -> None:
    """Each input is stored once (in the resource's file, or inventory.json for what no file holds), and the reader
    joins them back into exactly the entries synth recorded; only launch template user data stays decoded text."""
    expected = json.loads(json.dumps(inventory_entries(list(registrations_of(ROOT / "fleet.yaml", "prod")))))
    for entry in expected:
        if "userData" in entry["inputs"]:
            entry["inputs"]["userData"] = decode_user_data(entry["inputs"]["userData"])
    assert (
        sum(e["type"] == HELM_RELEASE for e in expected) >= 5 and sum("userData" in e["inputs"] for e in expected) >= 4
    )
    assert read_tree(ROOT / "tests/golden/trees/example/prod").resources == expected
