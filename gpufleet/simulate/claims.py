"""Dynamic Resource Allocation as the model sees it: the devices a pod's ResourceClaims ask for, how Kueue counts
them, and whether one node of a group can allocate them.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/claims.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpufleet.facts import pcie
from gpufleet.plan.manifests.dra import PCIE_ROOT
from gpufleet.plan.parts import RolloutPlan
from gpufleet.spec.devices import EFA_DEVICE_CLASS, GPU_DEVICE_CLASS, device_managing, quota_resource
from gpufleet.spec.fleet import Fabric

# Kueue's refusal of a pod naming a ResourceClaim (workload_controller.go).
SHARED_CLAIM = "KueueDRAIntegration feature does not support use of resource claims"
# resource.k8s.io/v1 ExactDeviceRequest defaults (pkg/apis/resource/v1/defaults.go): allocationMode ExactCount,
# count 1 under ExactCount.
DEFAULT_MODE = "ExactCount"


@dataclass(frozen=True, slots=True, kw_only=True)
class PodClaims:
    """What one pod's claims ask for, read from their templates."""

    # device class -> devices one pod's claims hold
    devices: Mapping[str, int] = field(default_factory=dict)
    # per claim constrained to one PCIe root: (pod claim name, device class -> devices on that root)
    aligned: tuple[tuple[str, Mapping[str, int]], ...] = ()
    # pod claims naming a ResourceClaim, not a template
    shared: tuple[str, ...] = ()
    # (index in resourceClaims, template name) the namespace does not hold
    missing: tuple[tuple[int, str], ...] = ()
    # Kueue's refusal of a template's shape or class, in Kueue's words; None when it counts them
    kueue_error: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.devices or self.shared or self.missing or self.kueue_error)


def templates(plan: RolloutPlan) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(namespace, name) -> the ResourceClaimSpec of each ResourceClaimTemplate the plan renders."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for stage in plan.included():
        for res in stage.content.resources:
            obj = res.args.get("object") or {}
            if obj.get("kind") == "ResourceClaimTemplate":
                add_template(out, obj)
    return out


def is_template(obj: Any) -> bool:
    return isinstance(obj, Mapping) and obj.get("kind") == "ResourceClaimTemplate"


def add_template(into: dict[tuple[str, str], Mapping[str, Any]], obj: Mapping[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    spec = (obj.get("spec") or {}).get("spec") or {}
    into[(str(meta.get("namespace") or "default"), str(meta.get("name")))] = spec


def device_classes(plan: RolloutPlan) -> dict[str, tuple[str, bool]]:
    """DeviceClass name -> (the rollout stage whose DRA driver chart creates it, whether this environment deploys
    it).

    Why: docs/explain-model.md, "Design notes", claims.device_classes."""
    included = {s.name for s in plan.included()}
    dra = [g for g in plan.fleet.node_groups if device_managing(g).claims]
    out: dict[str, tuple[str, bool]] = {}
    if dra:
        out[GPU_DEVICE_CLASS] = ("foundation", "foundation" in included)
    if any(g.fabric is Fabric.EFA for g in dra):
        out[EFA_DEVICE_CLASS] = ("network", "network" in included)
    return out


def _field_error(path: str, kind: str, value: str | None, detail: str) -> str:
    """apimachinery field.Error.Error(): `<field>: <type>: <value>: <detail>` (a nil value prints "null")."""
    shown = f'"{value}"' if value is not None else '"null"'
    return f"{path}: {kind}: {shown}: {detail}"


def _count_devices(
    spec: Mapping[str, Any], base: str, template: str
) -> tuple[dict[str, int], list[tuple[str, Mapping[str, int]]], str | None, list[str]]:
    """countDevicesPerClass over one claim spec: (class -> count, the requests constrained to one PCIe root as
    class -> count, Kueue's refusal, notes)."""
    devices: dict[str, int] = {}
    by_request: dict[str, tuple[str, int]] = {}
    notes: list[str] = []
    requests = list((spec.get("devices") or {}).get("requests") or [])
    for k, req in enumerate(requests):
        path = f"{base}.devices.requests[{k}]"
        if req.get("firstAvailable") is not None:
            return (
                {},
                [],
                _field_error(
                    path,
                    "Invalid value",
                    None,
                    f"ResourceClaimTemplate {template}: FirstAvailable device selection is not supported",
                ),
                notes,
            )
        exactly = req.get("exactly")
        if exactly is None:
            return (
                {},
                [],
                _field_error(
                    path,
                    "Invalid value",
                    None,
                    f"ResourceClaimTemplate {template}: Exactly must be set if FirstAvailable is nil",
                ),
                notes,
            )
        if exactly.get("selectors"):
            notes.append(
                f"ResourceClaimTemplate {template} request {req.get('name')} has selectors: Kueue checks them against"
                " the cluster's ResourceSlices (enough matching devices, or the workload waits), and the model counts"
                " the request without evaluating them"
            )
        mode = exactly.get("allocationMode") or DEFAULT_MODE
        if exactly.get("adminAccess") is True:
            return {}, [], _field_error(
                f"{path}.exactly.adminAccess", "Invalid value", None,
                f"ResourceClaimTemplate {template}: AdminAccess is not supported",
            ), notes  # fmt: skip
        if mode == "All":
            return {}, [], _field_error(
                f"{path}.exactly.allocationMode", "Invalid value", "All",
                f"ResourceClaimTemplate {template}: AllocationMode 'All' is not supported",
            ), notes  # fmt: skip
        if mode != "ExactCount":
            return {}, [], _field_error(
                f"{path}.exactly.allocationMode", "Invalid value", str(mode),
                f"ResourceClaimTemplate {template}: unsupported allocation mode: {mode}",
            ), notes  # fmt: skip
        device_class = str(exactly.get("deviceClassName") or "")
        count = int(exactly.get("count", 1))
        by_request[str(req.get("name"))] = (device_class, count)
        if device_class:
            devices[device_class] = devices.get(device_class, 0) + count
    aligned: list[tuple[str, Mapping[str, int]]] = []
    for constraint in (spec.get("devices") or {}).get("constraints") or []:
        attribute = constraint.get("matchAttribute")
        names = constraint.get("requests") or list(by_request)
        if attribute != PCIE_ROOT:
            notes.append(
                f"ResourceClaimTemplate {template} constrains its devices to one {attribute}, which the model does"
                " not judge (Kueue does not read constraints)"
            )
            continue
        on_root: dict[str, int] = {}
        for name in names:
            if name in by_request:
                device_class, count = by_request[name]
                on_root[device_class] = on_root.get(device_class, 0) + count
        aligned.append((template, on_root))
    return devices, aligned, None, notes


def read(
    templates: Mapping[tuple[str, str], Mapping[str, Any]],
    namespace: str,
    pod: Mapping[str, Any],
    *,
    pod_set: int,
    pod_set_name: str,
    mappings: Mapping[str, str] | None,
) -> PodClaims:
    """The claims of one pod (its spec as written) of pod set `pod_set` (its index in Kueue's Workload), and with
    `mappings` (Kueue's deviceClassMappings: class -> the resource it counts as) Kueue's refusal, in the order
    GetResourceRequestsForResourceClaimTemplates meets them."""
    devices: dict[str, int] = {}
    aligned: list[tuple[str, Mapping[str, int]]] = []
    shared: list[str] = []
    missing: list[tuple[int, str]] = []
    notes: list[str] = []
    kueue_error: str | None = None
    for j, claim in enumerate(pod.get("resourceClaims") or []):
        if not isinstance(claim, Mapping):
            continue
        base = f"spec.podSets[{pod_set}].template.spec.resourceClaims[{j}]"
        template = claim.get("resourceClaimTemplateName")
        if template is None:
            if claim.get("resourceClaimName") is not None:
                shared.append(str(claim.get("name")))
            continue
        spec = templates.get((namespace, str(template)))
        if spec is None:
            missing.append((j, str(template)))
            kueue_error = kueue_error or (
                f"{base}: Internal error: failed to get claim spec for ResourceClaimTemplate {template} in podset"
                f' {pod_set_name}: resourceclaimtemplates.resource.k8s.io "{template}" not found'
            )
            continue
        counted, constrained, refused, said = _count_devices(spec, base, str(template))
        notes += [n for n in said if n not in notes]
        if refused:
            kueue_error = kueue_error or refused
            continue
        if mappings is not None and kueue_error is None:
            unmapped = next((dc for dc in counted if dc not in mappings), None)
            if unmapped is not None:
                kueue_error = (
                    f'{base}.resourceClaimTemplateName: Not found: "DeviceClass {unmapped} is not mapped in DRA'
                    f' configuration for podset {pod_set_name}"'
                )
        for device_class, n in counted.items():
            devices[device_class] = devices.get(device_class, 0) + n
        aligned += [(str(claim.get("name")), on_root) for _, on_root in constrained]
    return PodClaims(
        devices=devices,
        aligned=tuple(aligned),
        shared=tuple(shared),
        missing=tuple(missing),
        kueue_error=kueue_error,
        notes=tuple(notes),
    )


def requested(claims: PodClaims) -> dict[str, int]:
    """The devices as the model counts them, for Kueue's quota and a node's fit: `<class>.deviceclass.resource.k8s.io
    /devices`, the name gpufleet's deviceClassMappings and ResourceQuotas count a class under."""
    return {quota_resource(dc): n for dc, n in claims.devices.items()}


_SUFFIX = ".deviceclass.resource.k8s.io/devices"


def class_of(resource: str) -> str | None:
    """The DeviceClass a requested() name counts, None for any other resource."""
    return resource[: -len(_SUFFIX)] if resource.endswith(_SUFFIX) else None


def published(gpus: int, efa: int, *, efa_driver: bool) -> dict[str, int]:
    """What one DRA node's drivers publish, as requested() names it: its GPUs, and once the EFA DRA driver runs, its
    EFA interfaces."""
    out = {quota_resource(GPU_DEVICE_CLASS): gpus}
    if efa_driver and efa:
        out[quota_resource(EFA_DEVICE_CLASS)] = efa
    return out


_ROOT_CLASS = {GPU_DEVICE_CLASS: "gpus", EFA_DEVICE_CLASS: "efa"}


def misaligned(instance_type: str, aligned: tuple[tuple[str, Mapping[str, int]], ...]) -> str | None:
    """Why one node of `instance_type` cannot put each constrained claim's devices on one PCIe root, all claims of
    the pod at once (each claim takes devices of one root; roots are filled first fit, largest claim first); None when
    it can or the layout is unknown."""
    layout = pcie.roots(instance_type)
    if not aligned or layout is None:
        return None
    free = [{"gpus": r.gpus, "efa": r.efa} for r in layout]
    wanted = sorted(aligned, key=lambda a: -sum(a[1].values()))
    for name, on_root in wanted:
        need = {_ROOT_CLASS[dc]: n for dc, n in on_root.items() if dc in _ROOT_CLASS}
        root = next((r for r in free if all(r[k] >= v for k, v in need.items())), None)
        if root is None:
            shape = ", ".join(f"{r.gpus} GPU(s) and {r.efa} EFA interface(s)" for r in layout[:1])
            asked = " and ".join(f"{n} {dc}" for dc, n in sorted(on_root.items()))
            return (
                f"claim {name} asks for {asked} on one PCIe root ({PCIE_ROOT}); {instance_type} has {len(layout)}"
                f" roots of {shape} each, and the pod's claims take {len(aligned)} of them"
                if len(aligned) > len(layout)
                else f"claim {name} asks for {asked} on one PCIe root ({PCIE_ROOT}); {instance_type} has"
                f" {len(layout)} roots of {shape} each"
            )
        for k, v in need.items():
            root[k] -= v
    return None


def layout_unknown(instance_type: str, aligned: tuple[tuple[str, Mapping[str, int]], ...]) -> str | None:
    if not aligned or pcie.roots(instance_type) is not None:
        return None
    return (
        f"the PCIe layout of {instance_type} is not in gpufleet's table (gpufleet.facts.pcie): whether the claims"
        f" constrained to one {PCIE_ROOT} fit one node is not judged"
    )
