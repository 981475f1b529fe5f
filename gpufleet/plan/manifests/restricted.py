"""Security contexts of the Pod Security "restricted" profile, for the pods gpufleet renders that need nothing of
the node (the image prepuller, the headroom placeholders): nobody's uid, no privilege escalation, no capabilities,
a read-only root filesystem and the runtime's default seccomp profile
(https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted)."""

from __future__ import annotations

NOBODY = 65534
POD = {
    "runAsNonRoot": True,
    "runAsUser": NOBODY,
    "runAsGroup": NOBODY,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": NOBODY,
    "capabilities": {"drop": ["ALL"]},
}
