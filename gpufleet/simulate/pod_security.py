"""Pod Security Admission: the level a namespace enforces and the checks a pod of it must pass.

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/pod_security.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpufleet.plan.parts import RolloutPlan

LEVELS = ("privileged", "baseline", "restricted")
ENFORCE, ENFORCE_VERSION = "pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/enforce-version"
# check_capabilities_baseline.go capabilities_allowed_1_0
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# check_restrictedVolumes.go: the volume sources restricted allows
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)

Spec = Mapping[str, Any]
Result = tuple[str, str] | None  # (ForbiddenReason, ForbiddenDetail)


def namespace_levels(plan: RolloutPlan) -> dict[str, tuple[str, str]]:
    """namespace -> (level, version) of every Namespace the plan applies with an enforce label."""
    out = {}
    for stage in plan.included():
        for res in stage.content.resources:
            obj: Any = res.args.get("object")
            if isinstance(obj, Mapping) and obj.get("kind") == "Namespace":
                labels = (obj.get("metadata") or {}).get("labels") or {}
                if labels.get(ENFORCE) in LEVELS:
                    out[str(obj["metadata"]["name"])] = (labels[ENFORCE], labels.get(ENFORCE_VERSION) or "latest")
    return out


def _quote(items: list[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def _containers(spec: Spec) -> Iterator[Mapping[str, Any]]:
    """visitor.go visitContainers: containers, initContainers, ephemeralContainers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, Mapping):
                yield c


def _sc(c: Mapping[str, Any]) -> Mapping[str, Any]:
    return c.get("securityContext") or {}


def _named(names: list[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_quote(names)}"


def _host_namespaces(spec: Spec) -> Result:
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return ("host namespaces", ", ".join(used)) if used else None


def _privileged(spec: Spec) -> Result:
    bad = [str(c.get("name")) for c in _containers(spec) if _sc(c).get("privileged") is True]
    return ("privileged", f"{_named(bad)} must not set securityContext.privileged=true") if bad else None


def _capabilities_baseline(spec: Spec) -> Result:
    bad: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        added = [str(a) for a in (_sc(c).get("capabilities") or {}).get("add") or [] if a not in BASELINE_CAPABILITIES]
        if added:
            bad.append(str(c.get("name")))
            caps.update(added)
    if not bad:
        return None
    detail = f"{_named(bad)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add"
    return "non-default capabilities", detail


def _host_path(spec: Spec) -> Result:
    bad = [str(v.get("name")) for v in spec.get("volumes") or [] if isinstance(v, Mapping) and "hostPath" in v]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)}") if bad else None


def _host_ports(spec: Spec) -> Result:
    bad: list[str] = []
    ports: set[str] = set()
    for c in _containers(spec):
        used = [int(p["hostPort"]) for p in c.get("ports") or [] if isinstance(p, Mapping) and p.get("hostPort")]
        if used:
            bad.append(str(c.get("name")))
            ports.update(str(p) for p in used)
    if not bad:
        return None
    listed = ", ".join(sorted(ports))
    detail = f"{_named(bad)} {_plural('uses', 'use', len(bad))} {_plural('hostPort', 'hostPorts', len(ports))} {listed}"
    return "hostPort", detail


def _seccomp_type(sc: Mapping[str, Any]) -> str | None:
    profile = sc.get("seccompProfile")
    return str(profile.get("type")) if isinstance(profile, Mapping) else None


def _seccomp_baseline(spec: Spec) -> Result:
    """check_seccompProfile_baseline.go 1.19+: a type set explicitly must be RuntimeDefault or Localhost."""
    valid = ("RuntimeDefault", "Localhost")
    pod_type = _seccomp_type(spec.get("securityContext") or {})
    setters, values = [], set()
    if pod_type is not None and pod_type not in valid:
        setters.append("pod")
        values.add(pod_type)
    bad = []
    for c in _containers(spec):
        t = _seccomp_type(_sc(c))
        if t is not None and t not in valid:
            bad.append(str(c.get("name")))
            values.add(t)
    if bad:
        setters.append(_named(bad))
    if not setters:
        return None
    detail = f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}"
    return "seccompProfile", detail


def _proc_mount(spec: Spec) -> Result:
    """check_procMount.go: only the Default procMount."""
    bad: list[str] = []
    kinds: set[str] = set()
    for c in _containers(spec):
        mount = _sc(c).get("procMount")
        if mount is not None and mount != "Default":
            bad.append(str(c.get("name")))
            kinds.add(str(mount))
    if not bad:
        return None
    return "procMount", f"{_named(bad)} must not set securityContext.procMount to {_quote(sorted(kinds))}"


SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})


def _se_linux_options(spec: Spec) -> Result:
    """check_seLinuxOptions.go: type among the container types, no user, no role."""
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(options: Any) -> bool:
        if not isinstance(options, Mapping):
            return True
        ok = True
        if str(options.get("type") or "") not in SELINUX_TYPES:
            ok = False
            bad_types.add(str(options.get("type")))
        for key in ("user", "role"):
            if options.get(key):
                ok = False
                flags[key] = True
        return ok

    setters = [] if valid((spec.get("securityContext") or {}).get("seLinuxOptions")) else ["pod"]
    bad = [str(c.get("name")) for c in _containers(spec) if not valid(_sc(c).get("seLinuxOptions"))]
    if bad:
        setters.append(_named(bad))
    if not setters:
        return None
    data = []
    if bad_types:  # upstream lists user and role only beside a bad type
        data.append(f"{_plural('type', 'types', len(bad_types))} {_quote(sorted(bad_types))}")
        data += [f"{key} may not be set" for key in ("user", "role") if flags[key]]
    return "seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}"


def _allow_privilege_escalation(spec: Spec) -> Result:
    bad = [str(c.get("name")) for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return "allowPrivilegeEscalation != false", f"{_named(bad)} must set securityContext.allowPrivilegeEscalation=false"


def _capabilities_restricted(spec: Spec) -> Result:
    missing: list[str] = []
    adding: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if not isinstance(capabilities, Mapping):
            missing.append(str(c.get("name")))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            missing.append(str(c.get("name")))
        added = [str(a) for a in capabilities.get("add") or [] if a != "NET_BIND_SERVICE"]
        if added:
            adding.append(str(c.get("name")))
            caps.update(added)
    details = []
    if missing:
        details.append(f'{_named(missing)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_named(adding)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def _restricted_volumes(spec: Spec) -> Result:
    bad: list[str] = []
    kinds: set[str] = set()
    for v in spec.get("volumes") or []:
        if not isinstance(v, Mapping):
            continue
        sources = [k for k in v if k != "name"]
        wrong = [k for k in sources if k not in RESTRICTED_VOLUMES]
        if wrong:
            bad.append(str(v.get("name")))
            kinds.update(wrong)
    if not bad:
        return None
    detail = (
        f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)} {_plural('uses', 'use', len(bad))}"
        f" {_plural('restricted volume type', 'restricted volume types', len(kinds))} {_quote(sorted(kinds))}"
    )
    return "restricted volume types", detail


def _run_as_non_root(spec: Spec) -> Result:
    pod = (spec.get("securityContext") or {}).get("runAsNonRoot")
    setters = ["pod"] if pod is False else []
    explicit = [str(c.get("name")) for c in _containers(spec) if _sc(c).get("runAsNonRoot") is False]
    implicit = [str(c.get("name")) for c in _containers(spec) if _sc(c).get("runAsNonRoot") is None and pod is not True]
    if explicit:
        setters.append(_named(explicit))
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if implicit:
        return "runAsNonRoot != true", f"pod or {_named(implicit)} must set securityContext.runAsNonRoot=true"
    return None


def _run_as_user(spec: Spec) -> Result:
    setters = ["pod"] if (spec.get("securityContext") or {}).get("runAsUser") == 0 else []
    bad = [str(c.get("name")) for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if bad:
        setters.append(_named(bad))
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def _seccomp_restricted(spec: Spec) -> Result:
    valid = ("RuntimeDefault", "Localhost")
    pod_type = _seccomp_type(spec.get("securityContext") or {})
    setters, values = [], set()
    if pod_type is not None and pod_type not in valid:
        setters.append("pod")
        values.add(pod_type)
    explicit, implicit = [], []
    for c in _containers(spec):
        t = _seccomp_type(_sc(c))
        if t is not None and t not in valid:
            explicit.append(str(c.get("name")))
            values.add(t)
        elif t is None and pod_type not in valid:
            implicit.append(str(c.get("name")))
    if explicit:
        setters.append(_named(explicit))
    if setters:
        detail = f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}"
        return "seccompProfile", detail
    if implicit:
        return (
            "seccompProfile",
            f"pod or {_named(implicit)} must set securityContext.seccompProfile.type to"
            ' "RuntimeDefault" or "Localhost"',
        )
    return None


# (check ID, level, check, overlap) in the order the registry runs them: each check registers from its file's init()
# (Go runs a package's files in file-name order), and EvaluatePod runs the baseline checks that do not overlap, then
# at baseline the overlapping ones (capabilities_baseline, hostPathVolumes, seccompProfile_baseline), at restricted
# the restricted ones instead (registry.go populate, EvaluatePod).
CHECKS: tuple[tuple[str, str, Callable[[Spec], Result], bool], ...] = (
    ("allowPrivilegeEscalation", "restricted", _allow_privilege_escalation, False),
    ("capabilities_baseline", "baseline", _capabilities_baseline, True),
    ("capabilities_restricted", "restricted", _capabilities_restricted, False),
    ("hostNamespaces", "baseline", _host_namespaces, False),
    ("hostPathVolumes", "baseline", _host_path, True),
    ("hostPorts", "baseline", _host_ports, False),
    ("privileged", "baseline", _privileged, False),
    ("procMount", "baseline", _proc_mount, False),
    ("restrictedVolumes", "restricted", _restricted_volumes, False),
    ("runAsNonRoot", "restricted", _run_as_non_root, False),
    ("runAsUser", "restricted", _run_as_user, False),
    ("seLinuxOptions", "baseline", _se_linux_options, False),
    ("seccompProfile_baseline", "baseline", _seccomp_baseline, True),
    ("seccompProfile_restricted", "restricted", _seccomp_restricted, False),
)


def violations(level: str, spec: Spec) -> list[tuple[str, str]]:
    """The (reason, detail) of every check of `level` the pod spec fails, in the order PSA reports them."""
    if level not in ("baseline", "restricted"):
        return []
    checks = [c for c in CHECKS if c[1] == "baseline" and not c[3]]
    if level == "baseline":
        checks += [c for c in CHECKS if c[1] == "baseline" and c[3]]
    else:
        checks += [c for c in CHECKS if c[1] == "restricted"]
    return [result for _, _, check, _ in checks if (result := check(spec))]


def forbidden(level: str, version: str, spec: Spec) -> str | None:
    """`violates PodSecurity "baseline:v1.33": ...`, or None when the pod passes."""
    found = violations(level, spec)
    if not found:
        return None
    detail = ", ".join(f"{reason} ({d})" if d else reason for reason, d in found)
    return f'violates PodSecurity "{level}:{version}": {detail}'
