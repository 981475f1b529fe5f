"""Every supported version has every fact, and each fact matches its upstream source (../shared/charts)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.facts.versions import (
    CHART_CONTROLLERS,
    CLUSTER_AUTOSCALER_IMAGES,
    COMPONENTS,
    GPU_OPERATOR,
    KUBERNETES_VERSIONS,
    KUEUE,
    NETWORK_OPERATOR,
    Release,
)
from gpufleet.plan.manifests import health
from gpufleet.rules.pipeline import load_fleet
from tests.upstream import chart_dir, chart_values

EXAMPLE = Path(__file__).resolve().parents[2] / "fleet.yaml"
# Components that are an image, not a Helm chart (no chart files upstream).
IMAGES = {"multus"}


@pytest.mark.parametrize("key", sorted(COMPONENTS))
def test_every_release_of_a_component_carries_the_same_facts(key: str) -> None:
    releases = COMPONENTS[key].releases
    assert releases, f"{key} has no supported release"
    assert len({type(r) for r in releases.values()}) == 1
    for release in releases.values():
        assert isinstance(release, Release) and release.notes
        assert all(getattr(release, f.name) for f in dataclasses.fields(release)), f"{key}: an empty fact"


@pytest.mark.parametrize(
    ("key", "version"), [(k, v) for k, c in sorted(COMPONENTS.items()) if k not in IMAGES for v in c.supported]
)
def test_every_supported_chart_version_has_its_upstream_chart(key: str, version: str) -> None:
    chart = chart_dir(COMPONENTS[key].chart, version)
    assert (chart / "values.yaml").is_file(), f"add the chart files of {key} {version} to ../shared/charts"


def test_every_kubernetes_minor_has_an_autoscaler_image() -> None:
    assert tuple(CLUSTER_AUTOSCALER_IMAGES) == KUBERNETES_VERSIONS


@pytest.mark.parametrize("version", GPU_OPERATOR)
def test_dcgm_image_is_the_operators_own(version: str) -> None:
    dcgm = chart_values("gpu-operator", version)["dcgm"]
    assert GPU_OPERATOR[version].dcgm_image == f"{dcgm['repository']}/{dcgm['image']}:{dcgm['version']}"


@pytest.mark.parametrize("version", GPU_OPERATOR)
def test_the_health_sidecar_runs_the_pinned_operators_dcgm(version: str) -> None:
    fleet = load_fleet(str(EXAMPLE), "prod").environments["prod"]
    fleet = dataclasses.replace(fleet, versions=dataclasses.replace(fleet.versions, gpu_operator=version))
    (sidecar,) = health.npd_values(fleet)["extraContainers"]
    assert sidecar["image"] == GPU_OPERATOR[version].dcgm_image


@pytest.mark.parametrize("version", KUEUE)
def test_kueue_chart_configuration_is_the_charts_own(version: str) -> None:
    document = yaml.safe_load(chart_values("kueue", version)["managerConfig"]["controllerManagerConfigYaml"])
    # gpufleet chooses the integrations itself (gpufleet.plan.manifests.kueue.FRAMEWORKS)
    assert {k: v for k, v in document.items() if k not in ("apiVersion", "kind", "integrations")} == KUEUE[
        version
    ].chart_configuration


@pytest.mark.parametrize("version", NETWORK_OPERATOR)
def test_network_operator_operands_are_released_with_it(version: str) -> None:
    images = NETWORK_OPERATOR[version].operand_images
    assert set(images) == {"rdmaSharedDevicePlugin", "cniPlugins", "ipoib", "nvIpam"}
    assert all(tag == f"network-operator-v{version}" for _, _, tag in images.values())


def _at(values: Any, key: str) -> Any:
    for part in key.split("."):
        values = values.get(part) if isinstance(values, dict) else None
    return values


@pytest.mark.parametrize(
    ("chart", "version"), [(c, v) for c, releases in sorted(CHART_CONTROLLERS.items()) for v in releases]
)
def test_controller_placement_is_the_charts_own(chart: str, version: str) -> None:
    values = chart_values(chart, version)
    for c in CHART_CONTROLLERS[chart][version]:
        assert (_at(values, c.node_selector_key) or {}) == c.node_selector, f"{chart} {version} {c.node_selector_key}"
        assert (_at(values, c.tolerations_key) or []) == [dict(t) for t in c.tolerations], (
            f"{chart} {version} {c.tolerations_key}"
        )
        assert c.enabled_key is None or _at(values, c.enabled_key) is True


def test_every_pinned_controller_chart_is_supported() -> None:
    charts = {c.chart: set(c.supported) for c in COMPONENTS.values()}
    assert all(set(releases) == charts[chart] for chart, releases in CHART_CONTROLLERS.items())
