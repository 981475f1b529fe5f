"""The reference each privileged image gpufleet renders runs under (gpufleet.facts.images): the tag this fleet's
versions name, with the digest `images.<key>` gives for it.

Why, with sources: docs/cold-start.md, "Design notes", gpufleet/spec/images.py.
"""

from __future__ import annotations

from collections.abc import Callable

from gpufleet.facts.images import IMAGES, PRIVILEGED, PYTHON_IMAGE, PrivilegedContainer
from gpufleet.facts.stages import StageName
from gpufleet.facts.versions import COMPONENTS, GPU_OPERATOR
from gpufleet.spec.fleet import Fabric, Fleet


def tag_reference(fleet: Fleet, key: str) -> str | None:
    """`name:tag` of image `key` as this fleet renders it by tag; None for a DCGM image of a GPU Operator release
    gpufleet does not know (a rule reports the release)."""
    if key == "python":
        return PYTHON_IMAGE
    if key == "dcgm":
        release = GPU_OPERATOR.get(fleet.versions.gpu_operator)
        return None if release is None else release.dcgm_image
    if key == "multus":
        # The release workflow pushes `<tag>-thick` for every release tag (k8snetworkplumbingwg/multus-cni
        # .github/workflows/image-push-release.yml).
        return f"{COMPONENTS['multus'].repository}:{fleet.versions.multus}-thick"
    raise KeyError(key)


def without_digest(reference: str) -> str:
    """`name:tag` of `name:tag@sha256:...`."""
    return reference.split("@", 1)[0]


def reference(fleet: Fleet, key: str) -> str:
    """What the manifests write: the spec's `name:tag@sha256:<digest>` when it is for the tag this fleet runs, else
    the tag alone (a digest for another tag is a validation error, so it never reaches a manifest of a valid fleet)."""
    tagged = tag_reference(fleet, key)
    given = fleet.images.digests.get(key)
    if given is not None and without_digest(given) == tagged:
        return given
    if tagged is None:
        raise KeyError(f"no image known for {key} at GPU Operator {fleet.versions.gpu_operator}")
    return tagged


def _renders(fleet: Fleet, entry: PrivilegedContainer) -> bool:
    if entry.container == "remediator":
        return fleet.health.remediation != "None"  # gpufleet.plan.stages.health
    if entry.container == "renew":
        return fleet.multikueue is not None and fleet.multikueue.role == "Manager"  # plan.builders.cluster_roles
    if entry.image == "multus":
        return any(g.fabric is Fabric.RDMA for g in fleet.node_groups)  # gpufleet.plan.stages.network
    return True


def rendered(fleet: Fleet, includes: Callable[[StageName], bool]) -> dict[str, tuple[PrivilegedContainer, ...]]:
    """The privileged image keys this fleet renders in the stages `includes` admits, each with its containers (the
    gate's image, always digest-pinned by a rule, is left out)."""
    used: dict[str, list[PrivilegedContainer]] = {}
    for entry in PRIVILEGED:
        if entry.image in IMAGES and includes(entry.stage) and _renders(fleet, entry):
            used.setdefault(entry.image, []).append(entry)
    return {key: tuple(entries) for key, entries in used.items()}


def tag_only(
    fleet: Fleet, includes: Callable[[StageName], bool]
) -> list[tuple[str, str, tuple[PrivilegedContainer, ...]]]:
    """(key, name:tag, containers) of each privileged image rendered without a digest."""
    found = []
    for key, entries in rendered(fleet, includes).items():
        ref = tag_reference(fleet, key)
        if ref is not None and key not in fleet.images.digests:
            found.append((key, ref, entries))
    return found
