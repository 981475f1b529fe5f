"""PersistentVolumeClaims as the model sees them: the claims and volumes the plan renders, which CSI node plugin
serves a volume on a node, and who may use a pod-level-credential volume.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/volumes.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpufleet.plan.manifests.mountpoint import RELEASE as MOUNTPOINT_RELEASE
from gpufleet.plan.manifests.prefetch import DRIVER_ANNOTATION
from gpufleet.plan.parts import RolloutPlan
from gpufleet.simulate.operands import operands
from gpufleet.simulate.scheduling import matches_term, untolerated

# CSI driver -> the operand (gpufleet.simulate.operands) that is its node plugin.
NODE_PLUGINS = {"s3.csi.aws.com": "s3-csi-node", "fsx.csi.aws.com": "fsx-csi-node"}
# CSI driver -> the spec field that installs it.
INSTALLED_BY = {"s3.csi.aws.com": "checkpoints.mountpoint", "fsx.csi.aws.com": "fsxLustre"}
_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"


@dataclass(frozen=True, slots=True, kw_only=True)
class Volumes:
    claims: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)  # (namespace, name) -> PVC
    later: Mapping[tuple[str, str], str] = field(default_factory=dict)  # claims of stages not deployed -> stage
    volumes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # PV name -> PV
    plugins: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)  # driver -> tolerations
    identities: frozenset[tuple[str, str]] = frozenset()  # (namespace, service account) with a Pod Identity role
    # (namespace, claim) -> (DaemonSet name, its pods' spec, the driver version its pods' Mountpoint Pods were made by,
    # "" where its template does not say): pods that hold the claim's Mountpoint Pod on every node
    keepers: Mapping[tuple[str, str], tuple[str, Mapping[str, Any], str]] = field(default_factory=dict)
    driver_version: str = ""  # the Mountpoint CSI driver the plan installs (its Helm release's chart version)


def from_plan(plan: RolloutPlan) -> Volumes:
    claims: dict[tuple[str, str], Mapping[str, Any]] = {}
    later: dict[tuple[str, str], str] = {}
    pvs: dict[str, Mapping[str, Any]] = {}
    identities: set[tuple[str, str]] = set()
    keepers: dict[tuple[str, str], tuple[str, Mapping[str, Any], str]] = {}
    driver = ""
    for stage in plan.stages:
        for res in stage.content.resources:
            obj = res.args.get("object") or {}
            if obj.get("kind") == "DaemonSet" and stage.included:
                template = (obj.get("spec") or {}).get("template") or {}
                pod = template.get("spec") or {}
                made_by = str(((template.get("metadata") or {}).get("annotations") or {}).get(DRIVER_ANNOTATION) or "")
                namespace = str(obj["metadata"].get("namespace") or "default")
                for name in claim_names(pod):
                    keepers[(namespace, name)] = (str(obj["metadata"]["name"]), pod, made_by)
            if res.id == f"helm-{MOUNTPOINT_RELEASE}" and stage.included:
                driver = str(res.args.get("version") or "")
            if obj.get("kind") == "PersistentVolumeClaim":
                key = (str(obj["metadata"].get("namespace") or "default"), str(obj["metadata"]["name"]))
                if stage.included:
                    claims[key] = obj
                else:
                    later.setdefault(key, stage.name)
            elif obj.get("kind") == "PersistentVolume" and stage.included:
                pvs[str(obj["metadata"]["name"])] = obj
            elif res.type == _ASSOCIATION and stage.included:
                identities.add((str(res.args.get("namespace")), str(res.args.get("serviceAccount"))))
    by_name = {w.name: w for w in operands(plan)}
    plugins = {
        driver: tuple(by_name[name].pod_sets[0].pod.tolerations)
        for driver, name in NODE_PLUGINS.items()
        if name in by_name
    }
    return Volumes(
        claims=claims,
        later=later,
        volumes=pvs,
        plugins=plugins,
        identities=frozenset(identities),
        keepers=keepers,
        driver_version=driver,
    )


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    """The claims a pod spec (as written) mounts."""
    out = []
    for v in pod.get("volumes") or []:
        if isinstance(v, Mapping) and isinstance(v.get("persistentVolumeClaim"), Mapping):
            out.append(str(v["persistentVolumeClaim"].get("claimName")))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    """What a pod's claims mean for where it may run: a refusal, or the bound volumes (with their node affinity)."""

    refusal: tuple[str, str] | None = None  # (message, fix)
    volumes: tuple[Mapping[str, Any], ...] = ()

    def terms(self) -> list[Sequence[Mapping[str, Any]]]:
        """Each volume's required nodeSelectorTerms (a node must match one term of every volume)."""
        out = []
        for pv in self.volumes:
            terms = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
            if terms:
                out.append(terms)
        return out

    def allows(self, labels: Mapping[str, str]) -> bool:
        return all(any(matches_term(t, labels) for t in terms) for terms in self.terms())


def bind(vols: Volumes, namespace: str, pod: Mapping[str, Any], environment: str = "<env>") -> Binding:
    bound: list[Mapping[str, Any]] = []
    for name in claim_names(pod):
        claim = vols.claims.get((namespace, name))
        if claim is None:
            stage = vols.later.get((namespace, name))
            known = sorted(n for ns, n in vols.claims if ns == namespace)
            fix = (
                f"roll out through {stage} (environments.{environment}.rollout.through), where the claim is created"
                if stage
                else f"name a claim of namespace {namespace}: {', '.join(known)}"
                if known
                else f"create the PersistentVolumeClaim in {namespace} first (checkpoints.mountpoint gives each team"
                " one per node group)"
            )
            where = f" (the {stage} stage creates it; this environment does not deploy it)" if stage else ""
            return Binding(refusal=(f'persistentvolumeclaim "{name}" not found{where}', fix))
        volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
        pv = vols.volumes.get(volume_name)
        if pv is None:
            return Binding(
                refusal=(
                    f'pod has unbound immediate PersistentVolumeClaims: "{name}" names volume "{volume_name}", which'
                    " the fleet does not have",
                    "bind the claim to an existing PersistentVolume",
                )
            )
        bound.append(pv)
    return Binding(volumes=tuple(bound))


def mount_error(
    vols: Volumes, binding: Binding, namespace: str, pod: Mapping[str, Any], group: str, taints: Sequence[Any]
) -> tuple[str, str] | None:
    """kubelet's mount of each bound CSI volume on a node of `group`: its node plugin must run there, and a
    pod-level-credential volume needs the pod's service account to have a Pod Identity role."""
    for pv in binding.volumes:
        csi = (pv.get("spec") or {}).get("csi") or {}
        driver = str(csi.get("driver") or "")
        name = str(pv["metadata"]["name"])
        if not driver:
            continue
        tolerations = vols.plugins.get(driver)
        if tolerations is None or untolerated(taints, tolerations):
            return (
                f'MountVolume.SetUp failed for volume "{name}" on node group {group}: driver name {driver} not found'
                " in the list of registered CSI drivers (its node plugin does not run there)",
                f"install the {driver} driver ({INSTALLED_BY.get(driver, 'its CSI driver')}) and let its node plugin"
                " tolerate the group",
            )
        if (csi.get("volumeAttributes") or {}).get("authenticationSource") == "pod":
            account = str(pod.get("serviceAccountName") or "default")
            if (namespace, account) not in vols.identities:
                with_role = sorted(sa for ns, sa in vols.identities if ns == namespace)
                return (
                    f'MountVolume.SetUp failed for volume "{name}": authenticationSource pod, and service account'
                    f" {namespace}/{account} has no EKS Pod Identity association, so Mountpoint gets no credentials",
                    f"set serviceAccountName: {with_role[0] if with_role else '<an account with a Pod Identity role>'}",
                )
    return None


def sharing_key(pv: Mapping[str, Any], namespace: str, pod: Mapping[str, Any], *, driver: str) -> tuple[str, ...]:
    """reconciler.go buildFieldFilters, for one node: the workload's side of the key beside the PV's; then the driver
    version that made the Mountpoint Pod (shouldAssignNewWorkloadToMountpointPod), `driver`: the pod's, as the
    caller knows it."""
    spec = pv.get("spec") or {}
    csi = spec.get("csi") or {}
    source = str((csi.get("volumeAttributes") or {}).get("authenticationSource") or "driver")
    fs_group = (pod.get("securityContext") or {}).get("fsGroup")
    key: tuple[str, ...] = (
        str(pv["metadata"]["name"]),
        str(csi.get("volumeHandle") or ""),
        ",".join(spec.get("mountOptions") or []),
        "" if fs_group is None else str(fs_group),
        source,
        driver,
    )
    if source == "pod":
        key += (namespace, str(pod.get("serviceAccountName") or "default"))
    return key


def cache_notes(vols: Volumes, namespace: str, pod: Mapping[str, Any], daemonset: str | None = None) -> list[str]:
    """For each claim the pod mounts that a DaemonSet keeps warm on every node: whether the pod shares that cache.

    Why: docs/explain-model.md, "Design notes", volumes.cache_notes."""
    notes = []
    for name in claim_names(pod):
        keeper = vols.keepers.get((namespace, name))
        claim = vols.claims.get((namespace, name))
        pv = vols.volumes.get(str(((claim or {}).get("spec") or {}).get("volumeName") or ""))
        if keeper is None or pv is None or keeper[0] == daemonset:
            continue
        ours = sharing_key(pv, namespace, pod, driver=vols.driver_version)
        theirs = sharing_key(pv, namespace, keeper[1], driver=keeper[2])
        if ours == theirs:
            notes.append(
                f"claim {name}: its pods share each node's Mountpoint Pod with DaemonSet {namespace}/{keeper[0]},"
                " which keeps the cache warm"
            )
            continue
        differs = []
        if ours[3] != theirs[3]:
            differs.append(f"fsGroup {ours[3] or 'unset'} (the DaemonSet's: {theirs[3] or 'unset'})")
        if ours[6:] != theirs[6:]:
            differs.append(f"service account {ours[7]} (the DaemonSet's: {theirs[7]})")
        if ours[5] != theirs[5]:
            made_by = f"CSI driver {theirs[5]}" if theirs[5] else "a CSI driver its pod template does not name"
            differs.append(
                f"the CSI driver is {ours[5]} and the DaemonSet's Mountpoint Pods were made by {made_by} (the driver"
                " gives a new pod no Mountpoint Pod another driver version created: roll the DaemonSet with the"
                " driver)"
            )
        notes.append(
            f"claim {name}: its pods get a Mountpoint Pod of their own, with an empty cache, not the one DaemonSet"
            f" {namespace}/{keeper[0]} keeps warm: {' and '.join(differs)}"
            + (
                " (the CSI driver shares a Mountpoint Pod only between pods with the same fsGroup and service account)"
                if ours[3] != theirs[3] or ours[6:] != theirs[6:]
                else ""
            )
        )
    return notes
