"""Every Kubernetes object and Helm values file in every golden tree checked against the pinned upstream."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpufleet.versions import COMPONENTS
from tests.upstream import chart_values, require_shared, unknown_value_keys, validate_object

TREES = Path(__file__).resolve().parent / "trees"
K8S_FILES = sorted(TREES.glob("*/*/*/k8s/*.yaml"))
HELM_FILES = sorted(TREES.glob("*/*/*/helm/*.yaml"))
# Value paths whose content is free-form by the chart's design even where the default is not empty.
FREE_FORM: dict[str, tuple[str, ...]] = {}


def _id(path: Path) -> str:
    return str(path.relative_to(TREES))


@pytest.mark.parametrize("path", K8S_FILES, ids=_id)
def test_object_is_valid_upstream(path: Path) -> None:
    require_shared()
    obj = yaml.safe_load(path.read_text())
    assert validate_object(obj) == []


@pytest.mark.parametrize("path", HELM_FILES, ids=_id)
def test_helm_values_exist_in_pinned_chart(path: Path) -> None:
    require_shared()
    release = yaml.safe_load(path.read_text())
    chart = release["chart"].rsplit("/", 1)[-1]
    known = {c.chart for c in COMPONENTS.values()}
    assert chart in known
    defaults = chart_values(chart, release["version"])
    assert list(unknown_value_keys(release["values"], defaults, free_form=FREE_FORM.get(chart, ()))) == []
