"""Releases (issue 35 item 1): an OSI license, `gpufleet --version`, and a CHANGELOG whose section for the current
version records the tree format version and the pins this gpufleet is tested with, so that a bump of either
without its changelog entry fails here."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from gpufleet import __version__
from gpufleet.cli import main
from gpufleet.facts import versions
from gpufleet.tree.write import TREE_FORMAT_VERSION

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    """The CHANGELOG section of the current version: from its `## [X.Y.Z]` heading to the next release heading."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = re.search(rf"^## \[{re.escape(__version__)}\].*$", text, re.M)
    assert heading, f"CHANGELOG.md has no section ## [{__version__}]"
    rest = text[heading.end() :]
    following = re.search(r"^## \[", rest, re.M)
    return rest[: following.start()] if following else rest


def test_the_version_is_semantic_and_one_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    # The installed distribution's metadata is read from the same attribute (pyproject.toml [tool.setuptools.dynamic]).
    assert metadata.version("gpufleet") == __version__
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"gpufleet {__version__}\n"


def test_the_license_is_apache_2_and_declared() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (project["license"], project["license-files"]) == ("Apache-2.0", ["LICENSE"])


def test_the_changelog_records_the_tree_format_version() -> None:
    tree = re.search(r"^### Tree format\n\n- Version (\d+)\b", _section(), re.M)
    assert tree and int(tree.group(1)) == TREE_FORMAT_VERSION


def test_the_changelog_records_the_tested_component_pins() -> None:
    rows = dict(re.findall(r"^\| (\w+) \| (\S+) \|$", _section(), re.M))
    rows.pop("component", None)  # the table's header
    assert rows == {key: versions.default_release(key) for key in versions.COMPONENTS}


def test_the_changelog_records_the_kubernetes_minors_and_python_pins() -> None:
    section = _section()
    kubernetes = re.search(r"^Kubernetes: (.+)\.$", section, re.M)
    assert kubernetes and tuple(kubernetes.group(1).split(", ")) == versions.KUBERNETES_VERSIONS
    packages = re.search(r"^Python packages: (.+?)\.$", section, re.M | re.S)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert packages and re.split(r",\s+", packages.group(1)) == project["dependencies"]
