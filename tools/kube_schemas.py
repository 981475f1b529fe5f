"""Derive gpufleet/data/kube-schemas/: the schemas `gpufleet explain` and the synth tree reader check Kubernetes
objects against before anything reads them (gpufleet.spec.object_shapes).

    python tools/fetch_upstream.py --kube-schemas

Two sources. The built-in kinds: the OpenAPI definitions of each Kubernetes minor gpufleet supports, as
kubernetes-validate (the test extra, pinned in pyproject.toml) ships them converted to JSON Schema from
kubernetes/kubernetes api/openapi-spec/swagger.json at the minor's .0 tag; a minor it does not ship takes the newest
one it does (kubernetes-validate's own rule, kubernetes_validate/utils.py `validate`). The custom kinds: the
openAPIV3Schema of the pinned CRDs (tools/upstream_files.json), read from the upstream cache.

Only what the API server checks of a value's shape is kept: types, required fields, enums, the CRDs' bounds (numbers,
lengths, counts) and int32/int64 ranges. Descriptions, defaults, patterns, CEL rules (x-kubernetes-validations) and
list-map markers are dropped (they judge a value, not its shape, and a synth tree holds deploy-time references
where an AWS id's pattern applies), and only the definitions the listed kinds reach are kept. Each file names its
sources with their sha256.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubernetes_validate.version
import yaml

from gpufleet.facts.versions import KUBERNETES_VERSIONS

DERIVED_BY = "python tools/fetch_upstream.py --kube-schemas"
TARGET = Path(__file__).resolve().parents[1] / "gpufleet" / "data" / "kube-schemas"
# kubernetes-validate's package as installed (pyproject.toml's test extra pins it)
VALIDATE_PACKAGE = f"kubernetes-validate=={kubernetes_validate.version.__version__}"

# (apiVersion, kind) of every built-in kind explain models or the tree reader checks: explain's workload kinds
# (gpufleet.simulate.api_server.BUILT_IN) and every built-in kind synth writes into a tree.
BUILT_IN_KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "Pod"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("v1", "ConfigMap"),
    ("v1", "Namespace"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "ResourceQuota"),
    # DRA (resource.k8s.io/v1 since Kubernetes 1.34): a minor without the API has no schema of the kind
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
)
# The pinned CRD files (paths in the upstream cache) and the served versions of each kind that explain models (the
# versions gpufleet.simulate.api_server.CHART_KINDS serves) or synth writes.
CRD_VERSIONS: Mapping[str, tuple[str, ...]] = {
    "crds/jobset.x-k8s.io_jobsets.yaml": ("v1alpha2",),
    "crds/trainer.kubeflow.org_trainjobs.yaml": ("v1alpha1",),
    "crds/trainer.kubeflow.org_trainingruntimes.yaml": ("v1alpha1",),
    "crds/trainer.kubeflow.org_clustertrainingruntimes.yaml": ("v1alpha1",),
    "crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml": ("v1",),
    "crds/karpenter.sh_nodepools.yaml": ("v1",),
    "crds/karpenter.k8s.aws_ec2nodeclasses.yaml": ("v1",),
    "crds/kueue.x-k8s.io_clusterqueues.yaml": ("v1beta2",),
    "crds/kueue.x-k8s.io_cohorts.yaml": ("v1beta2",),
    "crds/kueue.x-k8s.io_localqueues.yaml": ("v1beta2",),
    "crds/kueue.x-k8s.io_resourceflavors.yaml": ("v1beta2",),
    "crds/kueue.x-k8s.io_topologies.yaml": ("v1beta2",),
    "crds/kueue.x-k8s.io_workloadpriorityclasses.yaml": ("v1beta2",),
    "crds/monitoring.coreos.com_podmonitors.yaml": ("v1",),
    "crds/monitoring.coreos.com_servicemonitors.yaml": ("v1",),
    "crds/monitoring.coreos.com_prometheusrules.yaml": ("v1",),
    "crds/mellanox.com_nicclusterpolicies.yaml": ("v1alpha1",),
    "crds/k8s.cni.cncf.io_network-attachment-definitions.yaml": ("v1",),
}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Keywords the API server validates a value's shape with; every other one (description, default, format but
# int32/int64, x-kubernetes-*) is dropped.
_KEPT = {
    "type", "properties", "additionalProperties", "items", "required", "enum", "anyOf", "oneOf", "allOf", "$ref",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "minLength", "maxLength",
    "minProperties", "maxProperties",
}  # fmt: skip


def trimmed(schema: Any) -> Any:
    """`schema` with only the shape keywords; "null" leaves the type lists (the API server's decoders read a null as
    the field's zero value wherever it is: gpufleet.spec.object_shapes accepts it everywhere)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties",):
            out[key] = {name: trimmed(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = trimmed(value)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [trimmed(sub) for sub in value]
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "format" and value in ("int32", "int64"):
            out[key] = value
        elif key in _KEPT:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    # kubernetes-validate writes int-or-string and quantities as oneOf two nullable types, which a null matches
    # twice: one list of types says the same.
    for key in ("oneOf", "anyOf"):
        branches = out.get(key)
        if branches and all(set(b) == {"type"} for b in branches):
            del out[key]
            out["type"] = [t for b in branches for t in ([b["type"]] if isinstance(b["type"], str) else b["type"])]
    return out


def _refs(schema: Any) -> set[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[-1])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _definition_of(definitions: Mapping[str, Any], api_version: str, kind: str) -> str | None:
    """The name of the definition of `kind` at `api_version`, None where the minor does not serve it."""
    group, _, version = api_version.rpartition("/")
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            if (gvk["group"], gvk["version"], gvk["kind"]) == (group, version, kind):
                return name
    return None


def built_in(definitions_file: Path, minor: str, source: str) -> dict[str, Any]:
    """The document of one Kubernetes minor: each listed kind's definition and every definition it reaches."""
    raw = definitions_file.read_bytes()
    definitions = json.loads(raw)["$defs"]
    kinds = {f"{a} {k}": name for a, k in BUILT_IN_KINDS if (name := _definition_of(definitions, a, k))}
    keep: set[str] = set()
    todo = [*kinds.values(), OBJECT_META]
    while todo:
        name = todo.pop()
        if name not in keep:
            keep.add(name)
            todo.extend(_refs(definitions[name]))
    return {
        "derivedBy": DERIVED_BY,
        "kubernetes": minor,
        "sources": [{"package": VALIDATE_PACKAGE, "path": source, "sha256": hashlib.sha256(raw).hexdigest()}],
        "kinds": {key: {"$ref": f"#/$defs/{name}"} for key, name in kinds.items()},
        "$defs": {name: trimmed(definitions[name]) for name in sorted(keep)},
    }


def crds(directory: Path, listed: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The document of the pinned CRDs: each listed kind's schema at each listed version, its metadata an
    ObjectMeta (the API server validates a custom object's metadata as a built-in one's)."""
    kinds: dict[str, Any] = {}
    sources = []
    for path, versions in CRD_VERSIONS.items():
        raw = (directory / path).read_bytes()
        sources.append({"path": path, "url": listed[path]["url"], "sha256": listed[path]["sha256"]})
        crd = next(
            d for d in yaml.load_all(raw, Loader=yaml.CSafeLoader) if d and d.get("kind") == "CustomResourceDefinition"
        )
        spec = crd["spec"]
        for version in spec["versions"]:
            if version["name"] in versions:
                schema = trimmed(version["schema"]["openAPIV3Schema"])
                schema.setdefault("properties", {})["metadata"] = {"$ref": f"#/$defs/{OBJECT_META}"}
                kinds[f"{spec['group']}/{version['name']} {spec['names']['kind']}"] = schema
    return {"derivedBy": DERIVED_BY, "sources": sources, "kinds": dict(sorted(kinds.items()))}


SCHEMAS = Path(kubernetes_validate.__file__).with_name("kubernetes-json-schema")


def minors() -> list[str]:
    """The Kubernetes minors gpufleet supports that kubernetes-validate has definitions of."""
    return [m for m in KUBERNETES_VERSIONS if (SCHEMAS / f"v{m}.0-local" / "_definitions.json").is_file()]


def documents(directory: Path, listed: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The text of each file of gpufleet/data/kube-schemas by name."""
    texts = {}
    for minor in minors():
        name = f"v{minor}.0-local/_definitions.json"
        document = built_in(SCHEMAS / name, minor, f"kubernetes_validate/kubernetes-json-schema/{name}")
        texts[f"kubernetes-{minor}.json"] = written(document)
    texts["crds.json"] = written(crds(directory, listed))
    return texts


def written(document: Mapping[str, Any]) -> str:
    """A document as JSON with one schema (a kind's, a definition's) a line: a change of an upstream pin shows in the
    diff as the lines of the schemas it changes, and the file stays a third of its indented size."""
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    parts = []
    for key, value in document.items():
        if key in ("kinds", "$defs"):
            rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, **compact)}" for k, v in value.items())
            parts.append(f" {json.dumps(key)}: {{\n{rows}\n }}")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, indent=1).replace(chr(10), chr(10) + ' ')}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
