"""Predicates over the in-cluster stack and storage: GPU Operator, container escape, checkpoint bucket, Kueue
admission, GPU sharing (registered as rules in `gpufleet.policies.rules`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

from gpufleet.facts.images import PRIVILEGED, PrivilegedContainer, digest_commands, digest_field, matches
from gpufleet.facts.versions import image_has_digest
from gpufleet.policies import checks_karpenter
from gpufleet.policies.resources import (
    BUCKET_TYPES,
    HELM_TYPES,
    NAME_LABEL,
    Resource,
    bottlerocket_settings,
    by_kind,
    by_type,
    env_list,
    find,
    get,
    is_unknown,
    launch_template_of,
    mime_parts,
    selector_is_open,
    selector_matches,
    shell_parts,
    truthy,
    user_data_text,
    walk_strings,
    workload_class,
)
from gpufleet.spec.names import LABEL_SHARING
from gpufleet.tree.entries import NODE_GROUP, group_name, inputs, is_gpu_node_group, labels

# The minimum GPU Operator chart and container toolkit with the container-escape CVE fixes:
# - CVE-2025-23266 "NVIDIAScape" (CVSS 9.0; with CVE-2025-23267): toolkit <= 1.17.7 and GPU Operator <= 25.3.0
#   affected (CVE record: CVEProject/cvelistV5 cves/2025/23xxx/CVE-2025-23266.json). The fix is toolkit 1.17.8,
#   first shipped by GPU Operator 25.3.1 ("Added support for ... NVIDIA Container Toolkit version v1.17.8":
#   NVIDIA/cloud-native-docs gpu-operator/release-notes.rst, 25.3.1).
# - CVE-2024-0132 (TOCTOU, host filesystem access): toolkit <= 1.16.1 / GPU Operator <= 24.6.1 affected, fixed in
#   1.16.2 / 24.6.2 (NVIDIA/cloud-native-docs gpu-operator/security.rst, CVE table).
# The later fix covers the earlier one and every other entry of that table (the newest there is 24.9.2 / 1.17.4).
MIN_GPU_OPERATOR = (25, 3, 1)
MIN_CONTAINER_TOOLKIT = (1, 17, 8)
_EXACT_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.-]+)?$")


def version_tuple(version: Any) -> tuple[int, int, int] | None:
    """(major, minor, patch) of an exact version such as `v25.3.1` or `v1.17.8-ubuntu20.04`; None for a range."""
    match = _EXACT_VERSION.match(version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def dotted(version: tuple[int, ...]) -> str:
    return "v" + ".".join(str(p) for p in version)


def is_gpu_operator(resource: Resource) -> bool:
    chart = inputs(resource).get("chart")
    return (
        resource.get("type") in HELM_TYPES
        and isinstance(chart, str)
        and chart.rstrip("/").rsplit("/", 1)[-1] == "gpu-operator"
    )


def _values(resource: Resource) -> Mapping[str, Any]:
    values = inputs(resource).get("values")
    return values if isinstance(values, Mapping) else {}


def _toolkit_managed(values: Mapping[str, Any]) -> bool:
    """The operator runs the container toolkit unless `toolkit.enabled` is false (the chart default is true)."""
    enabled = get(values, "toolkit.enabled", True)
    return enabled is True or (isinstance(enabled, str) and enabled.lower() == "true")


def gpu_operator_cve_fixed(resource: Resource) -> Iterator[str]:
    if not is_gpu_operator(resource):
        return
    version = inputs(resource).get("version")
    if is_unknown(version):
        return
    parsed = version_tuple(version)
    if parsed is None:
        yield f"GPU Operator chart version {version!r} is not an exact version: a deploy may pick any chart"
    elif parsed < MIN_GPU_OPERATOR:
        yield (
            f"GPU Operator chart {version} predates {dotted(MIN_GPU_OPERATOR)}: its container toolkit has the"
            " container-escape CVEs (CVE-2025-23266, CVE-2024-0132)"
        )
    values = _values(resource)
    toolkit = get(values, "toolkit.version")
    if _toolkit_managed(values) and toolkit is not None and not is_unknown(toolkit):
        parsed_toolkit = version_tuple(toolkit)
        if parsed_toolkit is None or parsed_toolkit < MIN_CONTAINER_TOOLKIT:
            yield (
                f"container toolkit {toolkit!r} is not an exact version >= {dotted(MIN_CONTAINER_TOOLKIT)}"
                " (CVE-2025-23266)"
            )


def gpu_operator_escape_closed(resource: Resource) -> Iterator[str]:
    if not is_gpu_operator(resource):
        return
    values = _values(resource)
    if get(values, "devicePlugin.enabled", True) is not False:
        strategy = env_list(get(values, "devicePlugin.env")).get("DEVICE_LIST_STRATEGY")
        if strategy is None or not is_unknown(strategy):
            parts = [p.strip() for p in (strategy or "").split(",") if p.strip()]
            if "volume-mounts" not in parts or "envvar" in parts:
                yield (
                    f"devicePlugin DEVICE_LIST_STRATEGY is {strategy or 'unset (envvar)'}: device lists must be volume"
                    " mounts so the runtime can ignore NVIDIA_VISIBLE_DEVICES"
                )
    if _toolkit_managed(values):
        env = env_list(get(values, "toolkit.env"))
        expected = {
            "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED": "false",
            "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS": "true",
        }
        wrong = []
        for key, want in expected.items():
            actual = env.get(key)
            if actual is None:
                wrong.append(f"{key} unset")
            elif not is_unknown(actual) and actual.lower() != want:
                wrong.append(f"{key}={actual}")
        if wrong:
            yield (
                "the operator-managed toolkit accepts NVIDIA_VISIBLE_DEVICES from unprivileged pods"
                f" ({', '.join(wrong)}): any pod can see every GPU of its node"
            )


_HOST_ESCAPE = re.compile(r"accept-nvidia-visible-devices-envvar-when-unprivileged\s*=\s*false")


def host_toolkit_escape_closed(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    operators = [r for r in resources if is_gpu_operator(r)]
    if any(_toolkit_managed(_values(r)) for r in operators):
        return  # the operator's toolkit owns the runtime config; gpu-operator-escape-closed checks it
    for group in by_type(resources, NODE_GROUP):
        if not is_gpu_node_group(group):
            continue
        name = group_name(group)
        template = launch_template_of(resources, group)
        if isinstance(template, str):
            continue
        text = user_data_text(template) if template is not None else None
        if template is not None and text is None and is_unknown(inputs(template).get("userData")):
            continue
        if text is not None and not mime_parts(text):
            settings = bottlerocket_settings(text)
            if settings is not None:
                # Bottlerocket's default is already false (settings.nvidia-container-runtime).
                if template is not None and truthy(
                    get(settings, "nvidia-container-runtime.visible-devices-envvar-when-unprivileged")
                ):
                    yield (
                        template,
                        f"Bottlerocket settings of group {name!r} accept NVIDIA_VISIBLE_DEVICES from unprivileged pods",
                    )
                continue
        if text is None or not any(_HOST_ESCAPE.search(script) for script in shell_parts(text)):
            yield (
                (group if template is None else template),
                (
                    f"GPU group {name!r} uses the node's container toolkit, and its user data does not set"
                    " accept-nvidia-visible-devices-envvar-when-unprivileged = false: any pod can see every GPU of its"
                    " node"
                ),
            )
    yield from _node_class_escape(resources)


def _node_class_escape(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    """The same for the EC2NodeClass of every GPU Karpenter pool: its userData (merged by Karpenter with its own,
    which never touches the toolkit's config) closes the escape, or Bottlerocket leaves it at its default."""
    seen: set[str] = set()
    for node_class, pool in checks_karpenter.gpu_node_classes(resources):
        if str(node_class.get("id")) in seen:
            continue
        seen.add(str(node_class.get("id")))
        text = checks_karpenter.user_data(node_class)
        if text is None and is_unknown(get(inputs(node_class), "spec.userData")):
            continue
        if text is not None and not mime_parts(text):
            settings = bottlerocket_settings(text)
            if settings is not None:
                if truthy(get(settings, "nvidia-container-runtime.visible-devices-envvar-when-unprivileged")):
                    yield (
                        node_class,
                        f"Bottlerocket settings of NodePool {pool!r} accept NVIDIA_VISIBLE_DEVICES from unprivileged"
                        " pods",
                    )
                continue
        if text is None or not any(_HOST_ESCAPE.search(script) for script in shell_parts(text)):
            yield (
                node_class,
                (
                    f"GPU NodePool {pool!r} uses the node's container toolkit, and its EC2NodeClass's userData does not"
                    " set accept-nvidia-visible-devices-envvar-when-unprivileged = false: any pod can see every GPU of"
                    " its node"
                ),
            )


# ---------------------------------------------------------------------------------------------------------------
# Checkpoint bucket (storage stage).

_SSE_TYPES = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
_PAB_TYPE = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
_ACL_TYPES = ("aws:s3/bucketAcl:BucketAcl", "aws:s3/bucketAclV2:BucketAclV2")
_PUBLIC_ACLS = ("public-read", "public-read-write", "authenticated-read")
_PAB_FIELDS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def _attached(resources: Sequence[Resource], bucket: Resource, types: tuple[str, ...]) -> list[Resource]:
    """Resources of `types` whose `bucket` input is this bucket (a ref to it, or its name)."""
    out = []
    for r in by_type(resources, *types):
        if find([bucket], inputs(r).get("bucket"), match_inputs=("bucket", "id")) is bucket:
            out.append(r)
    return out


def _has_sse_rule(config: Any) -> bool:
    rules = config.get("rules") or config.get("rule") if isinstance(config, Mapping) else None
    rules = rules if isinstance(rules, list) else [rules] if isinstance(rules, Mapping) else []
    return any(
        get(rule, "applyServerSideEncryptionByDefault.sseAlgorithm") for rule in rules if isinstance(rule, Mapping)
    )


def bucket_protected(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    for bucket in by_type(resources, *BUCKET_TYPES):
        args = inputs(bucket)
        name = args.get("bucket") or bucket.get("id")
        if not bucket.get("protect"):
            yield bucket, f"bucket {name} is not protected: `pulumi destroy` or a rename deletes the checkpoints"
        # CrossGuard does not pass retainOnDelete (None): judged by `gpufleet check` only.
        if bucket.get("retainOnDelete") is False:
            yield bucket, f"bucket {name} is not retained on delete: removing it from the program deletes it in AWS"
        if truthy(args.get("forceDestroy")):
            yield bucket, f"bucket {name} has forceDestroy: a delete empties it first"
        inline = args.get("serverSideEncryptionConfiguration") or args.get("serverSideEncryptionConfigurations")
        inline_list = inline if isinstance(inline, list) else [inline]
        encrypted = any(_has_sse_rule(c) for c in inline_list) or any(
            _has_sse_rule(inputs(r)) for r in _attached(resources, bucket, _SSE_TYPES)
        )
        if not encrypted:
            yield bucket, f"bucket {name} has no server-side encryption configuration"
        blocks = _attached(resources, bucket, (_PAB_TYPE,))
        if not any(all(truthy(inputs(b).get(f)) for f in _PAB_FIELDS) for b in blocks):
            yield bucket, f"bucket {name} has no public access block with {', '.join(_PAB_FIELDS)} all true"
        acls = [args.get("acl")] + [inputs(r).get("acl") for r in _attached(resources, bucket, _ACL_TYPES)]
        if any(acl in _PUBLIC_ACLS for acl in acls):
            yield bucket, f"bucket {name} has a public ACL"


# ---------------------------------------------------------------------------------------------------------------
# Kueue admission (admission stage).

TEAM_LABEL_PREFIX = "gpufleet.io/team"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


def _meta(resource: Resource, key: str) -> Any:
    return get(inputs(resource), f"metadata.{key}")


def cluster_queue_selector(resource: Resource) -> Iterator[str]:
    if (
        not str(resource.get("type", "")).startswith("kubernetes:kueue.x-k8s.io/")
        or inputs(resource).get("kind") != "ClusterQueue"
    ):
        return
    name = _meta(resource, "name")
    selector = get(inputs(resource), "spec.namespaceSelector")
    if selector is None:
        # Kueue reads a missing selector as "no namespaces", but an explicit selector is what reviewers can check.
        yield f"ClusterQueue {name} has no namespaceSelector: set one that selects the team's namespace explicitly"
    elif selector_is_open(selector):
        yield (
            f"ClusterQueue {name} has namespaceSelector {dict(selector)!r}, which admits workloads from every namespace"
        )


def _namespace_labels(resources: Sequence[Resource]) -> dict[str, dict[str, str]]:
    out = {}
    for ns in by_kind(resources, "Namespace"):
        name = _meta(ns, "name")
        if isinstance(name, str):
            out[name] = {**(_meta(ns, "labels") or {}), NAME_LABEL: name}
    return out


def _queue_name_policies(resources: Sequence[Resource]) -> set[str]:
    """ValidatingAdmissionPolicies whose validations (or the variables they use) read the queue-name label."""
    out = set()
    for policy in by_kind(resources, "ValidatingAdmissionPolicy"):
        spec = get(inputs(policy), "spec") or {}
        if get(spec, "validations") and any(
            QUEUE_NAME_LABEL in s for s in walk_strings([get(spec, "validations"), get(spec, "variables")])
        ):
            out.add(str(_meta(policy, "name")))
    return out


def team_namespace_queued(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str, str]]:
    namespaces = _namespace_labels(resources)
    queues = by_kind(resources, "ClusterQueue")
    local = by_kind(resources, "LocalQueue")
    teams: dict[str, Resource] = {}
    objects = {_meta(ns, "name"): ns for ns in by_kind(resources, "Namespace")}
    for name, ns_labels in namespaces.items():
        if any(k.startswith(TEAM_LABEL_PREFIX) for k in ns_labels):
            teams[name] = objects[name]
    for lq in local:
        ns = _meta(lq, "namespace")
        if isinstance(ns, str):
            teams.setdefault(ns, objects.get(ns, lq))
    for cq in queues:
        selector = get(inputs(cq), "spec.namespaceSelector")
        if isinstance(selector, Mapping) and not selector_is_open(selector):
            for name, ns_labels in namespaces.items():
                if selector_matches(selector, ns_labels):
                    teams.setdefault(name, objects[name])
    if not teams:
        return
    queue_by_name = {_meta(cq, "name"): cq for cq in queues}
    policies = _queue_name_policies(resources)
    bindings = [
        b
        for b in by_kind(resources, "ValidatingAdmissionPolicyBinding")
        if get(inputs(b), "spec.policyName") in policies and "Deny" in (get(inputs(b), "spec.validationActions") or [])
    ]
    policy_objects = {_meta(p, "name"): p for p in by_kind(resources, "ValidatingAdmissionPolicy")}
    for ns, resource in sorted(teams.items()):
        where = resource
        ns_labels = namespaces.get(ns, {NAME_LABEL: ns})
        bound = False
        for lq in (q for q in local if _meta(q, "namespace") == ns):
            queue = queue_by_name.get(get(inputs(lq), "spec.clusterQueue"))
            selector = get(inputs(queue), "spec.namespaceSelector") if queue is not None else None
            if isinstance(selector, Mapping) and selector_matches(selector, ns_labels):
                bound = True
        if not bound:
            yield (
                where,
                (
                    f"team namespace {ns} has no LocalQueue bound to a ClusterQueue that admits the namespace: its jobs"
                    " can never be admitted"
                ),
                (
                    f"create a LocalQueue in {ns} whose spec.clusterQueue is the team's ClusterQueue, and let that"
                    f" queue's namespaceSelector select {ns}"
                ),
            )
        covered = False
        for binding in bindings:
            policy = policy_objects.get(get(inputs(binding), "spec.policyName")) or {}
            selectors = [
                get(inputs(binding), "spec.matchResources.namespaceSelector"),
                get(inputs(policy), "spec.matchConstraints.namespaceSelector"),
            ]
            if all(s is None or (isinstance(s, Mapping) and selector_matches(s, ns_labels)) for s in selectors):
                covered = True
        if not covered:
            yield (
                where,
                (
                    f"team namespace {ns} is not covered by a denying queue-name ValidatingAdmissionPolicy: jobs"
                    f" without {QUEUE_NAME_LABEL} bypass Kueue quotas"
                ),
                (
                    f"add {ns} to the namespaceSelector of the queue-name ValidatingAdmissionPolicyBinding, with"
                    " validationActions [Deny]"
                ),
            )


# ---------------------------------------------------------------------------------------------------------------
# GPU sharing (sharing stage).

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
TIME_SLICING_CLASSES = ("Interactive", "Batch")


def _time_slicing_entries(resources: Sequence[Resource], configmap: str | None) -> set[str]:
    """Names of device-plugin config entries (ConfigMap data keys) that configure time-slicing."""
    out = set()
    for cm in by_kind(resources, "ConfigMap"):
        if configmap is not None and _meta(cm, "name") != configmap:
            continue
        for key, text in (inputs(cm).get("data") or {}).items():
            try:
                config = yaml.safe_load(text) if isinstance(text, str) else None
            except yaml.YAMLError:
                continue
            if isinstance(config, Mapping) and get(config, "sharing.timeSlicing"):
                out.add(key)
    return out


def time_slicing_class(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    operators = [r for r in resources if is_gpu_operator(r)]
    configmap = next(
        (get(_values(r), "devicePlugin.config.name") for r in operators if get(_values(r), "devicePlugin.config.name")),
        None,
    )
    default = next(
        (
            get(_values(r), "devicePlugin.config.default")
            for r in operators
            if get(_values(r), "devicePlugin.config.default")
        ),
        None,
    )
    sliced = _time_slicing_entries(resources, configmap)
    for group in by_type(resources, NODE_GROUP):
        cls = workload_class(group)
        if not is_gpu_node_group(group) or cls is None or cls in TIME_SLICING_CLASSES:
            continue
        group_labels = labels(group)
        entry = group_labels.get(DEVICE_PLUGIN_CONFIG_LABEL, default)
        uses = group_labels.get(LABEL_SHARING) == "TimeSlicing" or entry in sliced
        template = launch_template_of(resources, group)
        text = user_data_text(template) if isinstance(template, Mapping) else None
        settings = bottlerocket_settings(text) if text is not None else None
        if (
            settings is not None
            and get(settings, "kubelet-device-plugins.nvidia.device-sharing-strategy") == "time-slicing"
        ):
            uses = True
        if uses:
            yield (
                group,
                (
                    f"{cls} group {group_name(group)!r} time-slices its GPUs: pods share memory and faults with no"
                    " isolation"
                ),
            )


def _containers_of(resource: Resource) -> list[tuple[PrivilegedContainer, Any]]:
    """(table entry, image) of each privileged container (gpufleet.facts.images) the resource holds."""
    body = inputs(resource)
    kind: Any
    name: Any
    containers: Any
    if resource.get("type") in HELM_TYPES:
        kind, name, containers = "HelmRelease", body.get("name"), get(body, "values.extraContainers")
    else:
        pod = get(body, "spec.template.spec", {})
        kind, name = body.get("kind"), get(body, "metadata.name")
        containers = [
            c for key in ("initContainers", "containers") if isinstance(pod, Mapping) for c in pod.get(key) or []
        ]
    if not isinstance(kind, str) or not isinstance(name, str) or not isinstance(containers, list):
        return []
    found = []
    for entry in PRIVILEGED:
        if matches(entry, kind, name):
            found += [
                (entry, c.get("image"))
                for c in containers
                if isinstance(c, Mapping) and c.get("name") == entry.container
            ]
    return found


def privileged_image_digest(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str, str]]:
    """One finding per image of a privileged container gpufleet renders (gpufleet.facts.images) that is pinned by
    tag only, on the first resource that runs it."""
    by_image: dict[str, tuple[Resource, list[PrivilegedContainer]]] = {}
    for resource in resources:
        for entry, image in _containers_of(resource):
            if not isinstance(image, str) or is_unknown(image) or image_has_digest(image):
                continue
            by_image.setdefault(image, (resource, []))[1].append(entry)
    for image, (resource, entries) in by_image.items():
        components = ", ".join(dict.fromkeys(e.component for e in entries))
        reasons = "; ".join(dict.fromkeys(f"{e.component}: {e.why}" for e in entries))
        yield (
            resource,
            f'image "{image}" ({components}) is pinned by tag only, and it runs privileged ({reasons})',
            f'set {digest_field(entries[0].image)}: "{image}@sha256:<digest>" in the spec, the digest from'
            f" {digest_commands(image)}",
        )
