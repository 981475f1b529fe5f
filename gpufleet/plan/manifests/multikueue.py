"""The MultiKueue manager's objects (kueue.x-k8s.io/v1beta2) and its controller settings, as plain dicts.

Field names are those of kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_admissionchecks.yaml,
_multikueueconfigs.yaml and _multikueueclusters.yaml, and apis/config/v1beta2/configuration_types.go (MultiKueue,
IncrementalDispatcherConfig) @ v0.19.2; the example they follow is site/static/examples/multikueue/
multikueue-setup.yaml there.
"""

from __future__ import annotations

from typing import Any

from gpufleet.spec.names import LABEL_MANAGED_BY

API = "kueue.x-k8s.io/v1beta2"
# The controller that processes a MultiKueue AdmissionCheck (pkg/controller/admissionchecks/multikueue, ControllerName).
CONTROLLER = "kueue.x-k8s.io/multikueue"
ADMISSION_CHECK = "multikueue"
CONFIG = "workers"
# apis/config/v1beta2 MultiKueueDispatcherModeIncremental.
INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
# The key of the Secret the MultiKueueCluster reads (setup_multikueue.md: `--from-file=kubeconfig=...`).
KUBECONFIG_KEY = "kubeconfig"
# pkg/features/kube_features.go @ v0.19.2: MultiKueue beta and on since 0.9; the Incremental dispatcher's stepSize
# (MultiKueueIncrementalDispatcherConfig) and its following MultiKueueConfig's order (...RespectConfigOrder) beta and
# on since 0.19. Named anyway, so an upgrade that changes a default does not change the dispatch.
FEATURE_GATES = (
    "MultiKueue",
    "MultiKueueIncrementalDispatcherConfig",
    "MultiKueueIncrementalDispatcherRespectConfigOrder",
)


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(LABEL_MANAGED_BY)}


def admission_check() -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "AdmissionCheck",
        "metadata": _meta(ADMISSION_CHECK),
        "spec": {
            "controllerName": CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG},
        },
    }


def config(workers: list[str]) -> dict[str, Any]:
    """The workers, most preferred first: the Incremental dispatcher nominates them in this order."""
    return {"apiVersion": API, "kind": "MultiKueueConfig", "metadata": _meta(CONFIG), "spec": {"clusters": workers}}


def secret_name(worker: str) -> str:
    return f"multikueue-{worker}"


def cluster(worker: str) -> dict[str, Any]:
    """One worker, connected with the kubeconfig in the Secret `secret_name(worker)` of Kueue's namespace."""
    return {
        "apiVersion": API,
        "kind": "MultiKueueCluster",
        "metadata": _meta(worker),
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name(worker)}}},
    }


def configuration(step_size: int) -> dict[str, Any]:
    """The `multiKueue` block of the manager's controller Configuration."""
    return {
        "multiKueue": {
            "dispatcherName": INCREMENTAL_DISPATCHER,
            "incrementalDispatcherConfig": {"stepSize": step_size},
        }
    }


def feature_gates() -> list[dict[str, Any]]:
    """The kueue chart's controllerManager.featureGates (a list of {name, enabled}: charts/kueue/values.yaml)."""
    return [{"name": gate, "enabled": True} for gate in FEATURE_GATES]
