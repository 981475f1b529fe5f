"""The API server's first word on a workload: is its kind served at all?

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/api_server.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.plan.parts import RolloutPlan

# The workload kinds every Kubernetes API server of the supported versions serves, at their GA versions
# (batch/v1 Job since 1.21's CronJob GA left batch/v1 the only Job version; apps/v1 since 1.16; core v1).
BUILT_IN: Mapping[str, tuple[str, ...]] = {
    "Job": ("batch/v1",),
    "Deployment": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
    "DaemonSet": ("apps/v1",),
    "Pod": ("v1",),
}
# The custom workload kinds each Helm chart installs the CRD of (chart name -> kind -> served apiVersions), from each
# CRD's spec.versions[].served at the pinned release (the CRD files of tools/upstream_files.json: jobset v0.12.0,
# kubeflow/trainer v2.3.0 manifests/base/crds, lws v0.10.0; tests/model/test_api_server.py holds them equal).
CHART_KINDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "jobset": {"JobSet": ("jobset.x-k8s.io/v1alpha2",)},
    "kubeflow-trainer": {
        "TrainJob": ("trainer.kubeflow.org/v1alpha1",),
        "TrainingRuntime": ("trainer.kubeflow.org/v1alpha1",),
        "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1",),
    },
    "lws": {"LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",)},
}
# The spec field that installs a custom kind, for the fix.
INSTALLED_BY: Mapping[str, str] = {
    "JobSet": "workloads.jobSet",
    "TrainJob": "workloads.trainer",
    "TrainingRuntime": "workloads.trainer",
    "ClusterTrainingRuntime": "workloads.trainer",
    "LeaderWorkerSet": "workloads.leaderWorkerSet",
}

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def served_kinds(plan: RolloutPlan) -> dict[str, tuple[str, ...]]:
    """kind -> the apiVersions this environment's API server serves it at: the built-in kinds, the kinds of the
    charts its included stages install, and of the CustomResourceDefinitions it applies itself."""
    served = dict(BUILT_IN)
    for stage in plan.included():
        for res in stage.content.resources:
            if res.type == HELM_RELEASE:
                chart = str(res.args.get("chart")).rsplit("/", 1)[-1]  # an OCI chart is named by its reference
                for kind, versions in CHART_KINDS.get(chart, {}).items():
                    served[kind] = tuple(dict.fromkeys(served.get(kind, ()) + versions))
            obj: Any = res.args.get("object")
            if isinstance(obj, Mapping) and obj.get("kind") == "CustomResourceDefinition":
                spec = obj.get("spec") or {}
                kind = str((spec.get("names") or {}).get("kind"))
                versions = tuple(
                    f"{spec.get('group')}/{v['name']}" for v in spec.get("versions") or [] if v.get("served")
                )
                served[kind] = tuple(dict.fromkeys(served.get(kind, ()) + versions))
    return served


def not_served(served: Mapping[str, tuple[str, ...]], kind: str, api_version: str) -> tuple[str, str] | None:
    """(message, fix) when the API server serves no `kind` at `api_version`; None when it does."""
    versions = served.get(kind, ())
    if api_version in versions:
        return None
    message = f'no matches for kind "{kind}" in version "{api_version}"'
    if versions:
        return (
            f"{message}: this fleet serves {kind} at {', '.join(versions)}",
            f"set apiVersion: {versions[0]}",
        )
    field = INSTALLED_BY.get(kind)
    fix = (
        f"install it with {field} in the fleet spec"
        if field
        else f"the fleet installs no {kind} CRD or controller: submit the work as a kind it serves"
        f" ({', '.join(sorted(served))})"
    )
    return f"{message}: the fleet installs no {kind} API (kubectl apply fails before Kueue sees it)", fix
