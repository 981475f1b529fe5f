"""Rules on versions: the components a fleet deploys and the versions it pins, EKS add-ons, Kubernetes itself and
the images of the image sets and of gpufleet's privileged containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gpufleet.base.errors import Issue, closest
from gpufleet.facts import addons, ami_releases
from gpufleet.facts.images import IMAGES, PrivilegedContainer, digest_commands
from gpufleet.facts.versions import (
    COMPONENTS,
    NODE_MONITORING_AGENT_XIDS,
    default_release,
    image_is_pinned,
    is_pinned,
    node_monitoring_agent_release,
)
from gpufleet.facts.versions import (
    KUBERNETES_VERSIONS as KUBERNETES_SUPPORTED,
)
from gpufleet.rules import helm_values
from gpufleet.rules.registry import rule
from gpufleet.spec import images
from gpufleet.spec.deployed import component_versions, deployed_components, stage_used
from gpufleet.spec.efa import efa_only_interfaces
from gpufleet.spec.fleet import Fleet


def _pinned_releases(fleet: Fleet) -> list[str]:
    releases = [g.ami_release_version for g in fleet.node_groups]
    return releases + ([fleet.cluster.system_nodes.release_version] if fleet.cluster.system_nodes else [])


@rule("versions")
def _versions(fleet: Fleet) -> Iterator[Issue]:
    v = fleet.versions
    for key, version in component_versions(fleet).items():
        component = COMPONENTS[key]
        field = component.pin_field
        supported = ", ".join(component.supported)
        if key in v.defaulted:
            continue
        path = ("versions", key, field)
        if not is_pinned(version):
            yield Issue(
                path=path, message=f'"{version}" is not a pinned version', hint=f"pin one exact version: {supported}"
            )
        elif version not in component.supported:
            yield Issue(
                path=path,
                message=f"{component.title} {version} is not a version gpufleet supports (supported: {supported})",
                hint=(
                    f"pin one of them, e.g. {closest(version, component.supported) or component.supported[-1]} (Helm"
                    " values are rendered for the keys of these exact versions)"
                ),
            )
    if v.driver_source == "Operator" and v.driver_version is None:
        yield Issue(
            path=("versions", "driver"),
            at_key=True,
            message="driver source Operator needs version: the exact driver the operator installs",
            hint='add version, e.g. version: "595.91.07"',
        )
    if v.driver_source == "Preinstalled" and (v.driver_version or v.toolkit_version):
        field = "version" if v.driver_version else "toolkitVersion"
        yield Issue(
            path=("versions", "driver", field),
            at_key=True,
            message=f"{field} is ignored with source Preinstalled: the AMI's driver and toolkit are used",
            hint="remove it, or set source: Operator",
        )
    for field, value in (("version", v.driver_version), ("toolkitVersion", v.toolkit_version)):
        if value is not None and not is_pinned(value):
            yield Issue(
                path=("versions", "driver", field),
                message=f'"{value}" is not a pinned version',
                hint="pin one exact version, e.g. 595.91.07",
            )
    agent = v.addons.get("nodeMonitoringAgent")
    if agent is not None and node_monitoring_agent_release(agent) not in NODE_MONITORING_AGENT_XIDS:
        known = ", ".join(NODE_MONITORING_AGENT_XIDS)
        yield Issue(
            path=("versions", "addons", "nodeMonitoringAgent"),
            message=(
                f"EKS node monitoring agent {agent} is not a version gpufleet knows (known: {known}): its repair"
                " overrides follow the agent's list of fatal XIDs"
            ),
            hint=f"pin {sorted(NODE_MONITORING_AGENT_XIDS)[-1]}-eksbuild.1",
        )
    if fleet.cluster.kubernetes_version not in KUBERNETES_SUPPORTED:
        # Suggest the version the pinned AMI releases are for: any other one makes every release a mismatch.
        minors = {m for m in map(ami_releases.kubernetes_minor, _pinned_releases(fleet)) if m is not None}
        suggested = (
            minors.pop() if len(minors) == 1 and minors <= set(KUBERNETES_SUPPORTED) else KUBERNETES_SUPPORTED[-1]
        )
        yield Issue(
            path=("cluster", "kubernetesVersion"),
            message=(
                f"Kubernetes {fleet.cluster.kubernetes_version} is not a version gpufleet supports (supported:"
                f" {', '.join(KUBERNETES_SUPPORTED)})"
            ),
            hint=f'pin one of them, quoted, e.g. kubernetesVersion: "{suggested}"',
        )
    for i, image_set in enumerate(fleet.image_sets):
        for j, image in enumerate(image_set.images):
            if not image_is_pinned(image):
                yield Issue(
                    path=("imageSets", i, "images", j),
                    message=f'image "{image}" is not pinned to a tag or digest',
                    hint="add an exact tag (not latest) or @sha256:... so every node pulls the same bits",
                )


@rule("explicit-pins")
def _explicit_pins(fleet: Fleet) -> Iterator[Issue]:
    """versions.pinning Explicit (the whole fleet, or one environment through its overrides): every component the
    fleet deploys is pinned in the spec, so a gpufleet upgrade cannot change a deployed version by itself."""
    if fleet.versions.pinning != "Explicit":
        return
    for key in sorted(deployed_components(fleet) & fleet.versions.defaulted):
        field = "tag" if key == "multus" else "chart"
        yield Issue(
            path=("versions", "pinning"),
            message=f"pinning is Explicit, but {COMPONENTS[key].title} is not pinned",
            hint=f"pin it: versions.{key}.{field}: {default_release(key)} (the release this gpufleet is tested with)",
        )


@rule("addon-versions")
def _addon_versions(fleet: Fleet) -> Iterator[Issue]:
    """Each pinned EKS add-on against the cluster's Kubernetes minor and what the fleet's nodes need, from the dated
    offline catalog gpufleet.facts.addons (preflight asks EKS itself). Add-ons are managed in mode Create only."""
    if fleet.cluster.mode != "Create":
        return
    efa_only = any(efa_only_interfaces(g) for g in fleet.node_groups)
    for key, version in fleet.versions.addons.items():
        found = addons.check(key, version, fleet.cluster.kubernetes_version, efa_only=efa_only)
        if found is not None:
            yield Issue(
                path=("versions", "addons", key), severity=found.severity, message=found.message, hint=found.hint
            )


def _containers(entries: Iterable[PrivilegedContainer]) -> str:
    return ", ".join(dict.fromkeys(e.component for e in entries))


@rule("images")
def _images(fleet: Fleet) -> Iterator[Issue]:
    # The privileged images gpufleet renders itself (gpufleet.facts.images): a digest given must be for the tag this
    # fleet runs, since a runtime pulls a tagged and digested reference by its digest alone (gpufleet.spec.images).
    used = images.rendered(fleet, lambda stage: stage_used(fleet, stage))
    for key, given in fleet.images.digests.items():
        tagged = images.tag_reference(fleet, key)
        if key not in used:
            yield Issue(
                path=("images", key),
                severity="warning",
                message=(
                    f"set, but no environment renders a container that runs the {IMAGES[key].title} image: it is"
                    " not used"
                ),
                hint=(
                    f"the {IMAGES[key].title} image runs only where docs/tenancy-and-access.md says; remove"
                    f" images.{key}"
                ),
            )
        elif tagged is not None and images.without_digest(given) != tagged:
            yield Issue(
                path=("images", key),
                message=(
                    f'"{given}" is a digest of {images.without_digest(given)}, but this fleet runs {tagged}: the'
                    " runtime would pull the digest and run the other image"
                ),
                hint=(
                    f"take the digest of {tagged} ({digest_commands(tagged)}) and write images.{key}:"
                    f' "{tagged}@sha256:<digest>"'
                ),
            )
    if fleet.images.require_digests:
        for key, tagged, entries in images.tag_only(fleet, lambda stage: stage_used(fleet, stage)):
            yield Issue(
                path=("images", "requireDigests"),
                message=(
                    f'true, but the {IMAGES[key].title} image "{tagged}" ({_containers(entries)}) is pinned by tag only'
                ),
                hint=f'write images.{key}: "{tagged}@sha256:<digest>", the digest from {digest_commands(tagged)}',
            )


@rule("helm-values")
def _helm_values(fleet: Fleet) -> Iterator[Issue]:
    """helm.<component>.values: every key a value of the pinned chart, none a value gpufleet guarantees
    (gpufleet.rules.helm_values), and only for a chart the fleet installs."""
    if not fleet.helm_values:
        return
    versions = component_versions(fleet)
    deployed = deployed_components(fleet)
    checked: dict[str, Mapping[str, Any]] = {}
    for key, overlay in fleet.helm_values.items():
        if key in helm_values.HELM_COMPONENTS and key not in deployed:
            yield Issue(
                path=("helm", key),
                at_key=True,
                message=f"no environment of the fleet installs {COMPONENTS[key].title}, so its values have no release",
                hint=f"remove helm.{key}",
            )
        elif key not in helm_values.HELM_COMPONENTS or versions[key] in COMPONENTS[key].releases:
            checked[key] = overlay  # an unsupported version is the versions rule's to report
    yield from helm_values.issues(checked, versions)
