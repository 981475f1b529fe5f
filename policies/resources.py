"""Reading resources as the policy predicates see them: plain dicts, no Pulumi import.

A resource is one `inventory.json` entry of a synth tree (docs/architecture.md section 6):
`{"id", "type", "inputs", "protect", "retainOnDelete", "ignoreChanges", ...}` with engine camelCase inputs. The
CrossGuard adapter (`policies/__main__.py`) builds the same shape from `args.props` and the resource options.

Values that are unknown before deployment are strings containing `<ref:` (synth prints a deploy-time reference
as `<ref:resource.attribute>`; the adapter turns CrossGuard's unknown sentinels into `<ref:resource.?>`). A
predicate never reports a violation on an unknown value: it cannot be judged at preview time.
"""

from __future__ import annotations

import base64
import binascii
import email
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

from gpufleet.spec.names import LABEL_WORKLOAD_CLASS
from gpufleet.tree.entries import LAUNCH_TEMPLATE, inputs, labels

Resource = Mapping[str, Any]

HELM_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")
BUCKET_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")


_REF = re.compile(r"<ref:([a-z0-9][a-z0-9-]*)[.>]")


def is_unknown(value: Any) -> bool:
    """True for a value only known at deploy time (a synth `<ref:...>` or an adapter-marked unknown)."""
    return isinstance(value, str) and "<ref:" in value


def ref_target(value: Any) -> str | None:
    """The resource id a `<ref:id.attr>` value points at, or None."""
    if not isinstance(value, str):
        return None
    match = _REF.search(value)
    return match.group(1) if match else None


def get(data: Any, path: str, default: Any = None) -> Any:
    """`get(obj, "spec.template.spec")`: a dotted path through nested mappings, or default."""
    node = data
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def truthy(value: Any) -> bool:
    """A boolean input; some pulumi-aws booleans are strings on the wire (e.g. launch template `encrypted`)."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def by_type(resources: Sequence[Resource], *types: str) -> list[Resource]:
    return [r for r in resources if r.get("type") in types]


def by_kind(resources: Sequence[Resource], kind: str) -> list[Resource]:
    """Kubernetes objects of a kind (any API group or version)."""
    return [r for r in resources if str(r.get("type", "")).startswith("kubernetes:") and inputs(r).get("kind") == kind]


def workload_class(resource: Resource) -> str | None:
    value = labels(resource).get(LABEL_WORKLOAD_CLASS)
    return value if isinstance(value, str) else None


def taints(resource: Resource) -> list[Mapping[str, Any]]:
    value = inputs(resource).get("taints")
    return [t for t in value if isinstance(t, Mapping)] if isinstance(value, list) else []


def find(
    resources: Sequence[Resource], value: Any, *types: str, match_inputs: Sequence[str] = ()
) -> Resource | None | str:
    """The resource `value` refers to: by `<ref:id...>`, or by equality with one of its `match_inputs`.

    Returns the string "unknown" when `value` is unknown and points at nothing we can see."""
    target = ref_target(value)
    for r in resources:
        if types and r.get("type") not in types:
            continue
        if target is not None and r.get("id") == target:
            return r
        if target is None and value is not None and any(inputs(r).get(k) == value for k in match_inputs):
            return r
    return "unknown" if is_unknown(value) else None


def launch_template_of(resources: Sequence[Resource], node_group: Resource) -> Resource | None | str:
    """The launch template a node group uses; None without one; "unknown" when it cannot be resolved yet."""
    spec = inputs(node_group).get("launchTemplate")
    if not isinstance(spec, Mapping):
        return None
    ref = spec.get("id") if spec.get("id") is not None else spec.get("name")
    found = find(resources, ref, LAUNCH_TEMPLATE, match_inputs=("id", "name"))
    return found if found is not None else "unknown"


# ---------------------------------------------------------------------------------------------------------------
# Launch template user data: MIME multipart with nodeadm NodeConfig parts (AL2023), or Bottlerocket TOML.


def user_data_text(template: Resource) -> str | None:
    """The decoded user data of a launch template (inputs hold it base64-encoded); None if unknown or absent."""
    raw = inputs(template).get("userData")
    if not isinstance(raw, str) or is_unknown(raw):
        return None
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return raw  # already text


def mime_parts(text: str) -> list[tuple[str, str]]:
    """(content type, body) of each part of a MIME multipart document; [] if it is not one."""
    if "multipart/" not in text.split("\n\n", 1)[0].lower():
        return []
    message = email.message_from_string(text)
    out = []
    for part in message.walk():
        if part.is_multipart():
            continue
        body = part.get_payload(decode=True)
        payload = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(part.get_payload())
        out.append((part.get_content_type(), payload))
    return out


def node_configs(text: str) -> list[Mapping[str, Any]]:
    """nodeadm NodeConfig documents in user data, in the order nodeadm merges them (later parts win)."""
    parts = mime_parts(text)
    bodies = [body for ctype, body in parts if ctype == "application/node.eks.aws"] if parts else [text]
    out = []
    for body in bodies:
        try:
            docs = list(yaml.safe_load_all(body))
        except yaml.YAMLError:
            continue
        out += [d for d in docs if isinstance(d, Mapping) and d.get("kind") == "NodeConfig"]
    return out


def bottlerocket_settings(text: str) -> Mapping[str, Any] | None:
    """The `settings` table of Bottlerocket TOML user data, or None if the text is not TOML settings."""
    if mime_parts(text):
        return None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    settings = data.get("settings")
    return settings if isinstance(settings, Mapping) else None


def topology_manager_policy(text: str) -> str | None:
    """The kubelet topologyManagerPolicy the user data sets (nodeadm or Bottlerocket); None if it sets none."""
    settings = bottlerocket_settings(text)
    if settings is not None:
        value = get(settings, "kubernetes.topology-manager-policy")
        return value if isinstance(value, str) else None
    policy = None
    for config in node_configs(text):
        value = get(config, "spec.kubelet.config.topologyManagerPolicy")
        if isinstance(value, str):
            policy = value
    return policy


def shell_parts(text: str) -> list[str]:
    return [body for ctype, body in mime_parts(text) if ctype == "text/x-shellscript"]


# ---------------------------------------------------------------------------------------------------------------
# Kubernetes label selectors (namespaceSelector of ClusterQueues and admission policy bindings).


def selector_matches(selector: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: matchLabels and every matchExpression must hold."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if namespace_labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in namespace_labels
        if op == "In" and not (present and namespace_labels[key] in values):
            return False
        if op == "NotIn" and present and namespace_labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace


def selector_is_open(selector: Any) -> bool:
    """True when a selector admits every namespace that does not opt out: no matchLabels and no positive
    expression (`In`, or `Exists` on a key other than the name label every namespace has)."""
    if not isinstance(selector, Mapping):
        return False
    if selector.get("matchLabels"):
        return False
    for expr in selector.get("matchExpressions") or []:
        if expr.get("operator") == "In" or (expr.get("operator") == "Exists" and expr.get("key") != NAME_LABEL):
            return False
    return True


def env_list(values: Any) -> dict[str, str]:
    """A Kubernetes-style env list `[{name, value}]` as a dict (unknown or malformed entries dropped)."""
    out: dict[str, str] = {}
    if isinstance(values, list):
        for item in values:
            if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                out[item["name"]] = str(item.get("value", ""))
    return out


def walk_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from walk_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk_strings(v)
