"""Every Kubernetes object and Helm values file in every golden tree checked against the pinned upstream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.facts.versions import COMPONENTS
from tests import fastyaml
from tests.upstream import chart_values, require_shared, unknown_value_keys, validate_object

TREES = Path(__file__).resolve().parent / "trees"
K8S_FILES = sorted(TREES.glob("*/*/*/k8s/*.yaml"))
HELM_FILES = sorted(TREES.glob("*/*/*/helm/*.yaml"))
# Value paths whose content is free-form by the chart's design even where the default is not empty.
FREE_FORM: dict[str, tuple[str, ...]] = {
    # The deployment template ranges over extraArgs and renders each as `--key=value`: its keys are the autoscaler's
    # flags (checked in tests/foundation/test_autoscaler.py), not chart keys
    # (kubernetes/autoscaler charts/cluster-autoscaler/templates/deployment.yaml).
    "cluster-autoscaler": ("extraArgs",),
    # A label map the deployment template renders whole (aws/karpenter-provider-aws charts/karpenter/templates/
    # deployment.yaml `nodeSelector`); the chart's default holds kubernetes.io/os only.
    "karpenter": ("nodeSelector",),
}
# Keys a chart reads although its vendored values.yaml does not list them (with the upstream place that reads them).
# They are merged into the defaults, so every key beside or below them is still checked.
UNLISTED: dict[str, dict] = {
    # Commented out in values.yaml of v26.3.3 and v26.7.0; templates/clusterpolicy.yaml renders
    # dcgmExporter.config.name (NVIDIA/gpu-operator deployments/gpu-operator/templates/clusterpolicy.yaml).
    "gpu-operator": {"dcgmExporter": {"config": {"name": ""}}},
    # The grafana subchart's own value (not vendored; kube-prometheus-stack's values.yaml sets no grafana.rbac):
    # grafana/helm-charts charts/grafana/values.yaml rbac.namespaced, read by templates/clusterrole.yaml and role.yaml.
    "kube-prometheus-stack": {"grafana": {"rbac": {"namespaced": False}}},
}


def _with_unlisted(defaults: Any, extra: Any) -> Any:
    if not isinstance(defaults, dict) or not isinstance(extra, dict):
        return defaults if defaults is not None else extra
    out = dict(defaults)
    for key, value in extra.items():
        out[key] = _with_unlisted(out.get(key), value) if key in out else value
    return out


def _id(path: Path) -> str:
    return str(path.relative_to(TREES))


# Deploy-time values (`<ref:resource.attribute>` in the tree) where a CRD pattern checks an AWS id's shape, as AWS
# spells them: the EC2NodeClass's security groups are the cluster's and the EFA group's ids.
DEPLOYED_IDS = {
    "<ref:cluster.vpcConfig.clusterSecurityGroupId>": "sg-0123456789abcdef0",
    "<ref:efa-security-group.id>": "sg-0fedcba9876543210",
}


def _deployed(value: Any) -> Any:
    if isinstance(value, str):
        return DEPLOYED_IDS.get(value, value)
    if isinstance(value, dict):
        return {k: _deployed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deployed(v) for v in value]
    return value


@pytest.mark.parametrize("path", K8S_FILES, ids=_id)
def test_object_is_valid_upstream(path: Path) -> None:
    require_shared()
    obj = _deployed(fastyaml.load(path.read_text()))
    assert validate_object(obj) == []


@pytest.mark.parametrize("path", HELM_FILES, ids=_id)
def test_helm_values_exist_in_pinned_chart(path: Path) -> None:
    require_shared()
    release = fastyaml.load(path.read_text())
    chart = release["chart"].rsplit("/", 1)[-1]
    known = {c.chart for c in COMPONENTS.values()} | {c.crd_chart for c in COMPONENTS.values() if c.crd_chart}
    assert chart in known
    defaults = _with_unlisted(chart_values(chart, release["version"]), UNLISTED.get(chart, {}))
    assert list(unknown_value_keys(release["values"], defaults, free_form=FREE_FORM.get(chart, ()))) == []
