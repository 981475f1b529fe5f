"""Predicates over Karpenter NodePools and EC2NodeClasses (karpenter.sh/v1, karpenter.k8s.aws/v1; registered as
rules in `gpufleet.policies.rules`). Each returns nothing for resources it does not concern, and an unknown value
(`<ref:...>`) is never a violation.

Defaults that make an omitted field safe are Karpenter's own, at the pinned v1.14.1: an omitted `metadataOptions` is
IMDSv2 only with a hop limit of 1 (the EC2NodeClass CRD's `default`, pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses
.yaml); omitted `blockDeviceMappings` are Karpenter's, encrypted (pkg/providers/amifamily/resolver.go `DefaultEBS`,
`Encrypted: true`, for AL2023 and Bottlerocket alike). An omitted `expireAfter` is 720h and an omitted
`consolidationPolicy` WhenEmptyOrUnderutilized (website/content/en/v1.14/concepts/disruption.md): both unsafe for
GPU work.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gpufleet.policies.resources import Resource, get, is_unknown, truthy
from gpufleet.spec.names import LABEL_NODE_GROUP, LABEL_WORKLOAD_CLASS, SYSTEM_GROUP
from gpufleet.tree.entries import inputs

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT_KEY = "nvidia.com/gpu"
# Classes whose pods lose work when evicted: no node of their pools may go for reason Drifted while it runs them
# (gpufleet.plan.manifests.karpenter.NO_DRIFT_WHILE_BUSY).
NO_DRIFT_CLASSES = ("Training", "Interactive")


def name(resource: Resource) -> str:
    return str(get(inputs(resource), "metadata.name") or resource.get("id"))


def _spec(resource: Resource) -> Mapping[str, Any]:
    value = inputs(resource).get("spec")
    return value if isinstance(value, Mapping) else {}


def pool_labels(pool: Resource) -> Mapping[str, Any]:
    value = get(_spec(pool), "template.metadata.labels")
    return value if isinstance(value, Mapping) else {}


def pool_taints(pool: Resource) -> list[Mapping[str, Any]]:
    value = get(_spec(pool), "template.spec.taints")
    return [t for t in value if isinstance(t, Mapping)] if isinstance(value, list) else []


def is_gpu_pool(resource: Resource) -> bool:
    """A NodePool of GPU nodes: gpufleet's node-group label other than `system`, a GPU limit, or the GPU taint."""
    if resource.get("type") != NODE_POOL:
        return False
    group = pool_labels(resource).get(LABEL_NODE_GROUP)
    if group is not None:
        return bool(group != SYSTEM_GROUP)
    limits = _spec(resource).get("limits")
    return (isinstance(limits, Mapping) and GPU_RESOURCE in limits) or any(
        t.get("key") == GPU_TAINT_KEY for t in pool_taints(resource)
    )


def node_class_of(resources: Sequence[Resource], pool: Resource) -> Resource | None:
    """The EC2NodeClass a NodePool's template names (nodeClassRef), when it is in the stack."""
    ref = get(_spec(pool), "template.spec.nodeClassRef.name")
    return next((r for r in resources if r.get("type") == NODE_CLASS and name(r) == ref), None)


def gpu_node_classes(resources: Sequence[Resource]) -> list[tuple[Resource, str]]:
    """(EC2NodeClass, the GPU pool using it) for every GPU pool whose class is in the stack."""
    out = []
    for pool in resources:
        if is_gpu_pool(pool):
            node_class = node_class_of(resources, pool)
            if node_class is not None:
                out.append((node_class, name(pool)))
    return out


def user_data(node_class: Resource) -> str | None:
    """An EC2NodeClass's userData (plain text, unlike a launch template's); None if absent or unknown."""
    value = _spec(node_class).get("userData")
    return value if isinstance(value, str) and not is_unknown(value) else None


def gpu_pool_taint(resource: Resource) -> Iterator[str]:
    """A GPU NodePool's template carries the nvidia.com/gpu NoSchedule taint (Kubernetes spelling)."""
    if not is_gpu_pool(resource) or is_unknown(get(_spec(resource), "template.spec.taints")):
        return
    if not any(t.get("key") == GPU_TAINT_KEY and t.get("effect") == "NoSchedule" for t in pool_taints(resource)):
        yield (
            f"GPU NodePool {name(resource)!r} has no {GPU_TAINT_KEY} NoSchedule taint in its template: any pod can land"
            " on the GPU nodes it launches"
        )


def imds_locked(resource: Resource) -> Iterator[str]:
    """IMDSv2 only (httpTokens required) with a PUT hop limit of 1, so a pod cannot reach the node role's credentials
    through the instance metadata service (the CRD defaults both when metadataOptions or a field is omitted)."""
    if resource.get("type") != NODE_CLASS:
        return
    options = _spec(resource).get("metadataOptions")
    if options is None or is_unknown(options) or not isinstance(options, Mapping):
        return
    tokens = options.get("httpTokens", "required")
    hops = options.get("httpPutResponseHopLimit", 1)
    if not is_unknown(tokens) and tokens != "required":
        yield (
            f"EC2NodeClass {name(resource)!r} sets metadataOptions.httpTokens {tokens}: IMDSv1 answers without a"
            " session token, so any process that can reach it (a pod, an SSRF) reads the node role's credentials"
        )
    if not is_unknown(hops) and str(hops) != "1":
        yield (
            f"EC2NodeClass {name(resource)!r} sets metadataOptions.httpPutResponseHopLimit {hops}: IMDS tokens reach"
            " pods one network hop away, so pods can read the node role's credentials"
        )


def volumes_encrypted(resource: Resource) -> Iterator[str]:
    """Every EBS volume the EC2NodeClass maps is encrypted (omitted mappings are Karpenter's encrypted defaults)."""
    if resource.get("type") != NODE_CLASS:
        return
    mappings = _spec(resource).get("blockDeviceMappings")
    if not isinstance(mappings, list):
        return
    for i, mapping in enumerate(mappings):
        ebs = mapping.get("ebs") if isinstance(mapping, Mapping) else None
        if not isinstance(ebs, Mapping):
            continue
        encrypted = ebs.get("encrypted")
        if is_unknown(encrypted) or truthy(encrypted):
            continue
        device = mapping.get("deviceName", f"blockDeviceMappings[{i}]")
        state = "false" if encrypted is not None else "not set (EC2 encrypts only with the account's default on)"
        yield (
            f"EC2NodeClass {name(resource)!r} maps {device} with encrypted {state}: the volume holds images, logs and"
            " local checkpoints in the clear"
        )


def _drift_budget(pool: Resource) -> str | None:
    """The least `nodes` of the unscheduled budgets that apply to reason Drifted (they name it, or no reason)."""
    budgets = get(_spec(pool), "disruption.budgets")
    values = [
        str(b.get("nodes"))
        for b in budgets or []
        if isinstance(b, Mapping) and "schedule" not in b and (not b.get("reasons") or "Drifted" in b["reasons"])
    ]
    return "0" if "0" in values or "0%" in values else (values[0] if values else None)


def gpu_pool_disruption(resource: Resource) -> Iterator[str]:
    """A GPU pool never evicts running work for Karpenter's own reasons: no expiry (v1 expiry is forceful: it waits
    for neither budgets nor karpenter.sh/do-not-disrupt), consolidation only of empty nodes, and on Training and
    Interactive pools a drift budget of 0 (a drifted node keeps its job and leaves once empty)."""
    if not is_gpu_pool(resource):
        return
    pool = name(resource)
    spec = _spec(resource)
    expire = get(spec, "template.spec.expireAfter")
    if not is_unknown(expire) and expire != "Never":
        yield (
            f"GPU NodePool {pool!r} expires its nodes after {expire or '720h (the default)'}: expiry drains a node"
            " whatever runs on it, ignoring disruption budgets and karpenter.sh/do-not-disrupt"
        )
    policy = get(spec, "disruption.consolidationPolicy")
    after = get(spec, "disruption.consolidateAfter")
    if not is_unknown(policy) and policy != "WhenEmpty" and after != "Never":
        yield (
            f"GPU NodePool {pool!r} consolidates {policy or 'WhenEmptyOrUnderutilized (the default)'}: Karpenter evicts"
            " running GPU pods to pack them onto fewer nodes"
        )
    cls = pool_labels(resource).get(LABEL_WORKLOAD_CLASS)
    budgets = get(spec, "disruption.budgets")
    if cls in NO_DRIFT_CLASSES and not is_unknown(budgets) and _drift_budget(resource) != "0":
        yield (
            f"{cls} NodePool {pool!r} has no disruption budget of 0 nodes for reason Drifted: a NodePool or"
            " EC2NodeClass change (a new AMI) evicts running jobs to replace their nodes"
        )


def _floating(term: Mapping[str, Any]) -> str | None:
    """Why an amiSelectorTerm does not name one exact image (None when it does): an alias at `latest`, an SSM
    parameter that AWS moves to each new release (`.../recommended/...`, `latest`), a name pattern, or tags alone
    (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go @ v1.14.1, AMISelectorTerm.Alias: "Setting the version
    to latest will result in drift when a new AMI is released. This is **not** recommended for production")."""
    alias, ssm, name_ = term.get("alias"), term.get("ssmParameter"), term.get("name")
    if isinstance(alias, str):
        return f"alias {alias}" if alias.endswith("@latest") else None
    if isinstance(ssm, str):
        return f"ssmParameter {ssm}" if "/recommended/" in ssm or "latest" in ssm.split("/") else None
    if term.get("id"):
        return None
    if isinstance(name_, str):
        return f"name {name_}" if "*" in name_ or "?" in name_ else None
    if term.get("tags"):
        return "tags only"
    return None


def image_pinned(resource: Resource) -> Iterator[str]:
    """An EC2NodeClass names exact AMIs: a floating term makes Karpenter drift every node when AWS publishes a new
    release, without any change to the spec."""
    if resource.get("type") != NODE_CLASS:
        return
    terms = _spec(resource).get("amiSelectorTerms")
    if not isinstance(terms, list):
        return
    for term in terms:
        why = _floating(term) if isinstance(term, Mapping) and not is_unknown(term) else None
        if why:
            yield (
                f"EC2NodeClass {name(resource)!r} selects its AMI by {why}: a new AMI release drifts and replaces"
                " every node without a spec change"
            )


ZONE_KEYS = ("topology.k8s.aws/zone-id", "topology.kubernetes.io/zone")


def _one_zone(pool: Resource, node_class: Resource | None) -> bool | None:
    """Whether the pool's nodes stay in one zone: a zone requirement with one value, or one subnet term by id
    (None when unknown)."""
    requirements = get(_spec(pool), "template.spec.requirements")
    for r in requirements if isinstance(requirements, list) else []:
        if isinstance(r, Mapping) and r.get("key") in ZONE_KEYS and r.get("operator") == "In":
            values = r.get("values")
            if isinstance(values, list) and len(values) == 1:
                return True
    if node_class is None:
        return None
    subnets = _spec(node_class).get("subnetSelectorTerms")
    if is_unknown(subnets) or not isinstance(subnets, list):
        return None
    return len(subnets) == 1 and isinstance(subnets[0], Mapping) and bool(subnets[0].get("id"))


def efa_pool_single_zone(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    """An EFA Karpenter pool (label gpufleet.io/fabric EFA, or the EFA taint) launches in one zone."""
    for pool in resources:
        if not is_gpu_pool(pool):
            continue
        efa = pool_labels(pool).get("gpufleet.io/fabric") == "EFA" or any(
            t.get("key") == "vpc.amazonaws.com/efa" for t in pool_taints(pool)
        )
        if efa and _one_zone(pool, node_class_of(resources, pool)) is False:
            yield (
                pool,
                (
                    f"EFA NodePool {name(pool)!r} may launch in more than one zone (no single-zone requirement, and its"
                    " EC2NodeClass selects more than one subnet): EFA traffic does not cross zones"
                ),
            )
