"""Predicates over node groups and their launch templates (registered as rules in `gpufleet.policies.rules`).

Resource-scope predicates take one resource and yield messages; stack-scope ones take every resource and
yield (resource, message). Each returns nothing for resources it does not concern.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from gpufleet.policies import checks_karpenter
from gpufleet.policies.resources import (
    Resource,
    by_kind,
    by_type,
    is_unknown,
    launch_template_of,
    taints,
    topology_manager_policy,
    user_data_text,
    workload_class,
)
from gpufleet.spec.names import LABEL_FABRIC, LABEL_NODE_GROUP, LABEL_WORKLOAD_CLASS
from gpufleet.tree.entries import (
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    group_name,
    inputs,
    is_gpu_node_group,
    is_node_group,
    labels,
)

GPU_TAINT_KEY = "nvidia.com/gpu"
EFA_TAINT_KEY = "vpc.amazonaws.com/efa"
FLOATING_VERSIONS = ("$Latest", "$Default")


def gpu_taint(resource: Resource) -> Iterator[str]:
    yield from checks_karpenter.gpu_pool_taint(resource)
    if not is_gpu_node_group(resource):
        return
    raw = inputs(resource).get("taints")
    if is_unknown(raw):
        return
    if not any(t.get("key") == GPU_TAINT_KEY and t.get("effect") == "NO_SCHEDULE" for t in taints(resource)):
        yield (
            f"GPU node group {group_name(resource)!r} has no {GPU_TAINT_KEY} NO_SCHEDULE taint: any pod can land on its"
            " GPU nodes"
        )


def one_instance_type(resource: Resource) -> Iterator[str]:
    if not is_gpu_node_group(resource):
        return
    types = inputs(resource).get("instanceTypes")
    if isinstance(types, list) and len(types) > 1:
        yield (
            f"GPU node group {group_name(resource)!r} mixes instance types {types}: its nodes differ in GPU model or"
            " count"
        )


def image_pinned(resource: Resource) -> Iterator[str]:
    yield from checks_karpenter.image_pinned(resource)
    if not is_node_group(resource):
        return
    args = inputs(resource)
    # A CUSTOM AMI comes from the launch template's imageId, which is an exact image by definition.
    if args.get("amiType") != "CUSTOM" and not args.get("releaseVersion"):
        yield (
            f"node group {group_name(resource)!r} has no releaseVersion: EKS picks the latest AMI release when nodes"
            " are created or updated"
        )
    template = args.get("launchTemplate")
    if isinstance(template, Mapping):
        version = template.get("version")
        if version is None or version == "":
            yield (
                f"node group {group_name(resource)!r} uses a launch template without a version: EKS follows its default"
                " version"
            )
        elif not is_unknown(version) and str(version) in FLOATING_VERSIONS:
            yield (
                f"node group {group_name(resource)!r} uses launch template version {version}: nodes change whenever the"
                " template does"
            )


def _camel(path: str) -> str:
    return ".".join(re.sub(r"_([a-z])", lambda m: m.group(1).upper(), part) for part in path.split("."))


def desired_size_ignored(resource: Resource) -> Iterator[str]:
    if not is_node_group(resource):
        return
    ignored = {_camel(p) for p in resource.get("ignoreChanges") or ()}
    if not ignored & {"scalingConfig.desiredSize", "scalingConfig"}:
        yield (
            f"node group {group_name(resource)!r} does not ignore scalingConfig.desiredSize: a deploy resets the"
            " autoscaler's size (and can drain running GPU jobs)"
        )


def training_topology(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    yield from karpenter_training_topology(resources)
    for group in by_type(resources, NODE_GROUP):
        if not is_gpu_node_group(group) or workload_class(group) != "Training":
            continue
        name = group_name(group)
        template = launch_template_of(resources, group)
        if template is None:
            yield (
                group,
                f"Training group {name!r} has no launch template, so nothing sets the kubelet Topology Manager policy",
            )
            continue
        if isinstance(template, str):
            continue  # not resolvable before deployment
        text = user_data_text(template)
        if text is None:
            if inputs(template).get("userData") is None:
                yield (
                    template,
                    (
                        f"launch template of Training group {name!r} has no user data: Topology Manager stays at policy"
                        " none"
                    ),
                )
            continue
        policy = topology_manager_policy(text)
        if policy not in ("restricted", "single-numa-node"):
            yield (
                template,
                (
                    f"launch template of Training group {name!r} sets topologyManagerPolicy {policy or 'none (unset)'},"
                    " not restricted: a pod's GPUs, NICs and CPUs may span more NUMA nodes than they need"
                ),
            )


def karpenter_training_topology(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    """A Training Karpenter pool's EC2NodeClass userData sets an aligning Topology Manager policy (Karpenter merges
    its own NodeConfig after ours and sets no topologyManagerPolicy: spec.kubelet has no such field)."""
    for pool in by_type(resources, checks_karpenter.NODE_POOL):
        if not checks_karpenter.is_gpu_pool(pool):
            continue
        if checks_karpenter.pool_labels(pool).get(LABEL_WORKLOAD_CLASS) != "Training":
            continue
        name = checks_karpenter.name(pool)
        node_class = checks_karpenter.node_class_of(resources, pool)
        if node_class is None:
            continue  # a class outside the stack cannot be read before deployment
        text = checks_karpenter.user_data(node_class)
        if text is None:
            if inputs(node_class).get("spec", {}).get("userData") is None:
                yield (
                    node_class,
                    (
                        f"EC2NodeClass of Training NodePool {name!r} has no userData: Topology Manager stays at policy"
                        " none"
                    ),
                )
            continue
        policy = topology_manager_policy(text)
        if policy not in ("restricted", "single-numa-node"):
            yield (
                node_class,
                (
                    f"EC2NodeClass of Training NodePool {name!r} sets topologyManagerPolicy {policy or 'none (unset)'},"
                    " not restricted: a pod's GPUs, NICs and CPUs may span more NUMA nodes than they need"
                ),
            )


def _is_efa_group(group: Resource) -> bool:
    return labels(group).get(LABEL_FABRIC) == "EFA" or any(t.get("key") == EFA_TAINT_KEY for t in taints(group))


def efa_single_zone(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    yield from checks_karpenter.efa_pool_single_zone(resources)
    for group in by_type(resources, NODE_GROUP):
        if not _is_efa_group(group):
            continue
        name = group_name(group)
        subnets = inputs(group).get("subnetIds")
        if isinstance(subnets, list) and len(subnets) != 1:
            yield (
                group,
                (
                    f"EFA group {name!r} spans {len(subnets)} subnets: EFA traffic does not cross zones, so nodes in"
                    " different zones cannot talk over EFA"
                ),
            )
        template = launch_template_of(resources, group)
        if template is None:
            yield group, f"EFA group {name!r} has no launch template, so its nodes get no EFA interfaces"
            continue
        if isinstance(template, str) or template.get("type") != LAUNCH_TEMPLATE:
            continue
        interfaces = inputs(template).get("networkInterfaces")
        if is_unknown(interfaces):
            continue
        kinds = {str(i.get("interfaceType")) for i in interfaces or [] if isinstance(i, Mapping)}
        if "efa" not in kinds:
            yield template, f"launch template of EFA group {name!r} attaches no EFA interface (interfaceType efa)"


HEADROOM_APP = "gpufleet-headroom"  # gpufleet.plan.manifests.headroom.APP: the placeholder Deployments' label


def _headroom_groups(resources: Sequence[Resource]) -> set[str] | None:
    """The groups a headroom Deployment keeps nodes warm for (replicas above 0); None when one is unknown."""
    out: set[str] = set()
    for d in by_kind(resources, "Deployment"):
        meta = inputs(d).get("metadata")
        labels_ = meta.get("labels") if isinstance(meta, Mapping) else None
        if not isinstance(labels_, Mapping) or labels_.get("app.kubernetes.io/name") != HEADROOM_APP:
            continue
        replicas = (inputs(d).get("spec") or {}).get("replicas")
        if is_unknown(replicas):
            return None
        if isinstance(replicas, int) and replicas > 0:
            out.add(str(labels_.get(LABEL_NODE_GROUP)))
    return out


def interactive_warm_pool(resources: Sequence[Resource]) -> Iterator[tuple[Resource, str]]:
    """An Interactive group keeps capacity warm: a managed group a warm pool or headroom, a Karpenter pool (which has
    no warm pool) headroom (placeholder pods that keep whole nodes running, gpufleet.plan.manifests.headroom)."""
    warm = _headroom_groups(resources)
    if warm is None:
        return
    for group in by_type(resources, NODE_GROUP):
        if not is_gpu_node_group(group) or workload_class(group) != "Interactive" or group_name(group) in warm:
            continue
        pool = inputs(group).get("warmPoolConfig")
        if pool is None or (isinstance(pool, Mapping) and pool.get("enabled") is False):
            yield (
                group,
                (
                    f"Interactive group {group_name(group)!r} has no warm pool and no headroom: a user waits for a"
                    " cold GPU node (minutes) on scale-up"
                ),
            )
    for pool_ in by_type(resources, checks_karpenter.NODE_POOL):
        name = checks_karpenter.name(pool_)
        cls = checks_karpenter.pool_labels(pool_).get(LABEL_WORKLOAD_CLASS)
        if not checks_karpenter.is_gpu_pool(pool_) or cls != "Interactive":
            continue
        pool_group = str(checks_karpenter.pool_labels(pool_).get(LABEL_NODE_GROUP) or name)
        if pool_group not in warm:
            yield (
                pool_,
                (
                    f"Interactive NodePool {name!r} has no headroom: Karpenter launches a node only once a user's pod"
                    " is pending, a cold start of minutes"
                ),
            )
