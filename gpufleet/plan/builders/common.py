"""Conventions every stage builder shares: provider and cluster ids, and the constructors for Kubernetes objects
and Helm releases as plan `Resource`s (labels, taints and namespaces are in gpufleet.spec.names)."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from gpufleet.facts.versions import COMPONENTS
from gpufleet.plan.parts import Resource
from gpufleet.spec.fleet import Fleet
from gpufleet.spec.names import LABEL_MANAGED_BY

# Ids of resources created by the foundation stage that later stages reference.
AWS_PROVIDER = "aws-provider"
K8S_PROVIDER = "k8s-provider"
CLUSTER = "cluster"  # the aws.eks.Cluster (mode Create) or the getCluster lookup (mode Existing)

# Built-in Kubernetes API groups and their Pulumi module; any other apiVersion is a custom resource whose
# token is `kubernetes:<group>/<version>:<Kind>`.
CORE_GROUPS: Mapping[str, str] = {
    "v1": "core/v1",
    "apps/v1": "apps/v1",
    "batch/v1": "batch/v1",
    "scheduling.k8s.io/v1": "scheduling.k8s.io/v1",
    "admissionregistration.k8s.io/v1": "admissionregistration.k8s.io/v1",
    "rbac.authorization.k8s.io/v1": "rbac.authorization.k8s.io/v1",
    "networking.k8s.io/v1": "networking.k8s.io/v1",
    "policy/v1": "policy/v1",
    "storage.k8s.io/v1": "storage.k8s.io/v1",
}


def kubernetes_token(api_version: str, kind: str) -> str:
    """The Pulumi type token of a Kubernetes object (what inventory.json shows)."""
    return f"kubernetes:{CORE_GROUPS.get(api_version, api_version)}:{kind}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def k8s(obj: Mapping[str, Any], *, depends_on: tuple[str, ...] = (), id: str | None = None) -> Resource:
    """A whole Kubernetes object as a plan resource, on the fleet's Kubernetes provider."""
    meta = obj["metadata"]
    rid = id or _slug(f"{obj['kind']}-{meta.get('namespace', 'cluster')}-{meta['name']}")
    return Resource(
        id=rid,
        type=kubernetes_token(obj["apiVersion"], obj["kind"]),
        args={"object": obj},
        provider=K8S_PROVIDER,
        depends_on=depends_on,
    )


def overlaid(values: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`overlay` merged over `values` as Helm merges a values file over another: maps key by key, anything else
    (lists, scalars, null) replaces what was there.

    Why: docs/architecture.md, "Design notes", common.overlaid."""
    out = dict(values)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = overlaid(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def helm(
    component: str,
    version: str,
    *,
    fleet: Fleet,
    release: str,
    namespace: str,
    values: Mapping[str, Any],
    depends_on: tuple[str, ...] = (),
    crds: bool = False,
    skip_crds: bool = False,
) -> Resource:
    """A Helm release (helm.v3.Release: a real release with hooks; see README "Deploy"), its values
    gpufleet's with the spec's overlay for the chart (`helm.<component>.values`, checked by the rule helm-values)
    merged last, so the tree, diff and the behavioural model all see what Helm is given.

    Why: docs/architecture.md, "Design notes", common.helm."""
    comp = COMPONENTS[component]
    chart = comp.crd_chart if crds else comp.chart
    assert chart is not None, component
    values = values if crds else overlaid(values, fleet.helm_values.get(component) or {})
    # compat "true": what pulumi-kubernetes's SDK always sends for a helm.v3.Release (sdk/python/pulumi_kubernetes/
    # helm/v3/Release.py sets it whatever is given), so the plan holds every input.
    args: dict[str, Any] = {
        "name": release,
        "version": version,
        "namespace": namespace,
        "createNamespace": True,
        "compat": "true",
        "values": dict(values),
    }
    if skip_crds:
        args["skipCrds"] = True
    if comp.repository.startswith("oci://"):
        args["chart"] = f"{comp.repository}/{chart}"
    else:
        args["chart"] = chart
        args["repositoryOpts"] = {"repo": comp.repository}
    return Resource(
        id=f"helm-{release}",
        type="kubernetes:helm.sh/v3:Release",
        args=args,
        provider=K8S_PROVIDER,
        depends_on=depends_on,
    )


def namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {**LABEL_MANAGED_BY, **(labels or {})}},
    }
