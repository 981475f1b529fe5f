"""Every rule, called directly on plain resource dicts: at least one passing and one failing fixture each.

A case lists the resources and the ids the rule must report (empty = passes). Passing cases must also be clean
of every other mandatory rule, so each fixture is a coherent little fleet and a planted violation is caught by
the rule it targets."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.policies.rules import MANDATORY, RULES, RULES_BY_NAME, evaluate
from tests.policies.objects import (
    CLOSE_ESCAPE,
    SINGLE_NUMA,
    TOOLKIT_ENV,
    bucket_set,
    clone,
    device_plugin_configmap,
    eks_cluster,
    gpu_operator,
    k8s,
    launch_template,
    mime,
    node_class,
    node_group,
    node_pool,
    queue_name_policy,
    res,
    system_group,
    team,
    vpc_cni,
)
from tests.policies.privileged_cases import PRIVILEGED_CASES


def fleet(
    *extra: dict[str, Any], group: dict[str, Any] | None = None, template: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A good H100 Training group with its launch template and the GPU Operator, plus `extra` resources."""
    return [group or node_group(), template or launch_template("h100"), gpu_operator(), *extra]


def with_inputs(resource: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = clone(resource)
    for key, value in changes.items():
        if value is None:
            out["inputs"].pop(key, None)
        else:
            out["inputs"][key] = value
    return out


def with_labels(resource: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    out = clone(resource)
    out["inputs"]["labels"] = {**out["inputs"]["labels"], **labels}
    return out


NG, LT, OP = "h100-node-group", "h100-launch-template", "helm-gpu-operator"
BOTTLEROCKET_NUMA = '[settings.kubernetes]\ntopology-manager-policy = "single-numa-node"\n'
TS_CONFIG = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
MPS_CONFIG = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
TEAMS = team("vision") + team("speech")


def _bucket(**changes: Any) -> list[dict[str, Any]]:
    out = bucket_set()
    out[0].update({k: v for k, v in changes.items() if k in ("protect", "retainOnDelete")})
    out[0]["inputs"].update({k: v for k, v in changes.items() if k not in ("protect", "retainOnDelete")})
    return out


def _pab(**fields: Any) -> list[dict[str, Any]]:
    out = bucket_set()
    out[2]["inputs"].update(fields)
    return out


def _cq_selector(selector: Any) -> list[dict[str, Any]]:
    cq = k8s(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "vision"},
            "spec": {"resourceGroups": []},
        }
    )
    if selector is not ...:
        cq["inputs"]["spec"]["namespaceSelector"] = selector
    return [cq]


def _lq_to(cluster_queue: str) -> list[dict[str, Any]]:
    out = team("vision") + team("speech") + queue_name_policy(["vision", "speech"])
    out[2]["inputs"]["spec"]["clusterQueue"] = cluster_queue
    return out


def _teams(edit: Any = None) -> list[dict[str, Any]]:
    """Two complete teams (vision, speech) and the queue-name policy; `edit(resources)` plants a violation."""
    out = clone(TEAMS) + queue_name_policy(["vision", "speech"])
    if edit is not None:
        edit(out)
    return out


def _by_id(resources: list[dict[str, Any]], rid: str) -> dict[str, Any]:
    return next(r for r in resources if r["id"] == rid)


def _untag(resources: list[dict[str, Any]]) -> None:
    entry = _by_id(resources, "access-team-vision")
    entry["inputs"]["tags"] = {}
    _by_id(resources, "access-team-vision-edit")["inputs"]["accessScope"] = {"type": "cluster"}


def _bind_to(role: dict[str, Any]) -> Any:
    def edit(resources: list[dict[str, Any]]) -> None:
        resources.append(role)
        _by_id(resources, "clusterrolebinding-cluster-gpufleet-team-vision-queue-viewer")["inputs"]["roleRef"][
            "name"
        ] = role["inputs"]["metadata"]["name"]

    return edit


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        }
    )


def _policy(edit: Any) -> Any:
    def plant(resources: list[dict[str, Any]]) -> None:
        edit(_by_id(resources, "networkpolicy-vision-default-deny")["inputs"]["spec"])

    return plant


def _psa(level: str | None) -> Any:
    def plant(resources: list[dict[str, Any]]) -> None:
        labels = _by_id(resources, "namespace-cluster-vision")["inputs"]["metadata"]["labels"]
        labels.pop("pod-security.kubernetes.io/enforce")
        if level is not None:
            labels["pod-security.kubernetes.io/enforce"] = level

    return plant


VISION_NS = "namespace-cluster-vision"
VISION_EDIT = "access-team-vision-edit"
VISION_VIEWER = "clusterrolebinding-cluster-gpufleet-team-vision-queue-viewer"


def _operator_with_dp_config(default: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {"name": "gpufleet-device-plugin-config", "create": False}
    if default:
        config["default"] = default
    return gpu_operator(
        devicePlugin={"env": [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}], "config": config}
    )


def _group(group: str, cls: str, **labels: str) -> list[dict[str, Any]]:
    ng = node_group(group, cls=cls)
    ng["inputs"]["labels"].update(labels)
    if cls == "Interactive":
        ng["inputs"]["warmPoolConfig"] = {"minSize": 1, "poolState": "STOPPED"}
    return [ng, launch_template(group)]


NC, NP = "ec2nodeclass-cluster-l40s", "nodepool-cluster-l40s"


def _pool(cls: str = "Inference", edit: Any = None, group: str = "l40s") -> list[dict[str, Any]]:
    """A Karpenter pool and its EC2NodeClass; `edit(spec)` changes the NodePool's spec."""
    pool = node_pool(group, cls)
    if edit is not None:
        edit(pool["inputs"]["spec"])
    return [node_class(group), pool]


def _class(edit: Any = None, user_data: str | None = None) -> list[dict[str, Any]]:
    """An Inference pool whose EC2NodeClass `edit(spec)` changes."""
    nc = node_class("l40s", user_data)
    if edit is not None:
        edit(nc["inputs"]["spec"])
    return [nc, node_pool("l40s")]


def _headroom(group: str, replicas: int = 1) -> dict[str, Any]:
    """The placeholder Deployment gpufleet.plan.manifests.headroom renders for a group's headroom."""
    labels = {"app.kubernetes.io/name": "gpufleet-headroom", "gpufleet.io/node-group": group}
    return k8s(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"headroom-{group}", "namespace": "gpufleet-system", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}},
        }
    )


def with_pool_labels(pool: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    pool["inputs"]["spec"]["template"]["metadata"]["labels"].update(labels)
    return pool


KARPENTER_CASES: list[tuple[str, str, list[dict[str, Any]], set[str]]] = [
    ("karpenter-imds-v2", "IMDSv2, hop limit 1", _class(), set()),
    ("karpenter-imds-v2", "metadataOptions left to the CRD default", _class(lambda s: s.pop("metadataOptions")), set()),
    (
        "karpenter-imds-v2",
        "IMDSv1 allowed",
        _class(lambda s: s["metadataOptions"].update(httpTokens="optional")),
        {NC},
    ),
    (
        "karpenter-imds-v2",
        "hop limit 2 reaches pods",
        _class(lambda s: s["metadataOptions"].update(httpPutResponseHopLimit=2)),
        {NC},
    ),
    ("karpenter-volumes-encrypted", "encrypted root", _class(), set()),
    (
        "karpenter-volumes-encrypted",
        "Karpenter's default mappings",
        _class(lambda s: s.pop("blockDeviceMappings")),
        set(),
    ),
    (
        "karpenter-volumes-encrypted",
        "unencrypted root",
        _class(lambda s: s["blockDeviceMappings"][0]["ebs"].update(encrypted=False)),
        {NC},
    ),
    (
        "karpenter-volumes-encrypted",
        "data volume without encrypted",
        _class(lambda s: s["blockDeviceMappings"].append({"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "1Ti"}})),
        {NC},
    ),
    ("karpenter-gpu-disruption", "Inference pool as rendered", _pool(), set()),
    ("karpenter-gpu-disruption", "Training pool with drift budget 0", _pool("Training"), set()),
    (
        "karpenter-gpu-disruption",
        "consolidation off altogether",
        _pool(
            edit=lambda s: s["disruption"].update(
                consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="Never"
            )
        ),
        set(),
    ),
    (
        "karpenter-gpu-disruption",
        "nodes expire after 720h",
        _pool(edit=lambda s: s["template"]["spec"].update(expireAfter="720h")),
        {NP},
    ),
    (
        "karpenter-gpu-disruption",
        "expireAfter left to the default",
        _pool(edit=lambda s: s["template"]["spec"].pop("expireAfter")),
        {NP},
    ),
    (
        "karpenter-gpu-disruption",
        "consolidation of underutilized nodes",
        _pool(edit=lambda s: s["disruption"].pop("consolidationPolicy")),
        {NP},
    ),
    (
        "karpenter-gpu-disruption",
        "Interactive pool that drifts busy nodes",
        _pool("Interactive", edit=lambda s: s["disruption"].update(budgets=[{"nodes": "1"}])),
        {NP},
    ),
    (
        "gpu-node-group-tainted",
        "GPU pool without the GPU taint",
        _pool(edit=lambda s: s["template"]["spec"].update(taints=[])),
        {NP},
    ),
    ("gpu-node-group-tainted", "GPU pool with the GPU taint", _pool(), set()),
    (
        "training-topology-aligned",
        "Training pool at best-effort",
        [
            node_class("h200", mime(SINGLE_NUMA.replace("single-numa-node", "best-effort"), CLOSE_ESCAPE)),
            node_pool("h200", "Training"),
        ],
        {"ec2nodeclass-cluster-h200"},
    ),
    ("training-topology-aligned", "Training pool aligned", _pool("Training", group="h200"), set()),
    ("node-image-pinned", "EC2NodeClass on an exact release's SSM parameter", _class(), set()),
    (
        "node-image-pinned",
        "EC2NodeClass on alias al2023@latest",
        _class(lambda s: s.update(amiSelectorTerms=[{"alias": "al2023@latest"}])),
        {NC},
    ),
    (
        "node-image-pinned",
        "EC2NodeClass on the recommended parameter",
        _class(
            lambda s: s.update(
                amiSelectorTerms=[
                    {
                        "ssmParameter": "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
                    }
                ]
            )
        ),
        {NC},
    ),
    (
        "node-image-pinned",
        "EC2NodeClass on a pinned alias",
        _class(lambda s: s.update(amiSelectorTerms=[{"alias": "al2023@v20260714"}])),
        set(),
    ),
    (
        "efa-single-zone",
        "EFA pool with one subnet",
        [
            node_class("h200", subnetSelectorTerms=[{"id": "subnet-1"}]),
            with_pool_labels(node_pool("h200", "Training"), {"gpufleet.io/fabric": "EFA"}),
        ],
        set(),
    ),
    (
        "efa-single-zone",
        "EFA pool across two subnets",
        [
            node_class("h200", subnetSelectorTerms=[{"id": "subnet-1"}, {"id": "subnet-2"}]),
            with_pool_labels(node_pool("h200", "Training"), {"gpufleet.io/fabric": "EFA"}),
        ],
        {"nodepool-cluster-h200"},
    ),
    (
        "host-toolkit-escape-closed",
        "pool's userData leaves the escape open",
        _class(user_data=mime(SINGLE_NUMA)),
        {NC},
    ),
    (
        "host-toolkit-escape-closed",
        "Bottlerocket pool at its default",
        _class(user_data=BOTTLEROCKET_NUMA),
        set(),
    ),
]


# --- serving-readiness-probe: an Inference group l40s tainted gpufleet.io/serving, the serving PriorityClass ----------

SERVING_TAINT = {"key": "gpufleet.io/serving", "value": "true", "effect": "NoSchedule"}


def _priority_class(name: str, value: int, policy: str) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpufleet"}},
            "value": value,
            "preemptionPolicy": policy,
        }
    )


def _serving_fleet(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    l40s, template = _group("l40s", "Inference")
    l40s["inputs"]["taints"].append({**SERVING_TAINT, "effect": "NO_SCHEDULE"})
    classes = [_priority_class("serving", 100000, "PreemptLowerPriority"), _priority_class("batch", 100, "Never")]
    return fleet(l40s, template, *classes, *extra)


def _server(
    kind: str = "Deployment",
    ns: str = "language",
    probe: bool = False,
    labels: dict[str, str] | None = None,
    **pod: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "server", "image": "vllm/vllm-openai:v0.10.2"}
    container["resources"] = {"limits": {"nvidia.com/gpu": 4}}
    if probe:
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}
    spec = {"containers": [container], **pod}
    meta = {"name": "llm", "namespace": ns, "labels": labels or {}}
    if kind == "Pod":
        return k8s({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    if kind == "LeaderWorkerSet":
        probed = clone({"containers": [container]})
        probed["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}
        lwt = {"size": 2, "leaderTemplate": {"spec": {**spec, **probed}}, "workerTemplate": {"spec": spec}}
        return k8s(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": kind,
                "metadata": meta,
                "spec": {"leaderWorkerTemplate": lwt},
            }
        )
    return k8s({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {"template": {"spec": spec}}})


def _readiness_binding(actions: list[str], namespaces: list[str]) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": f"gpufleet-serving-readiness-{actions[0].lower()}"},
            "spec": {
                "policyName": "gpufleet-serving-readiness",
                "validationActions": actions,
                "matchResources": {
                    "namespaceSelector": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}
                        ]
                    }
                },
            },
        }
    )


def _inference_queue(ns: str) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": ns},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "resourceGroups": [
                    {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "l40s", "resources": []}]}
                ],
            },
        }
    )


ON_L40S = {"nodeSelector": {"gpufleet.io/node-group": "l40s"}}
SERVER = "deployment-language-llm"

CASES: list[tuple[str, str, list[dict[str, Any]], set[str]]] = KARPENTER_CASES + [
    # (rule, case, resources, ids the rule must report)
    ("endpoint-not-open", "public endpoint limited to a VPN range", [eks_cluster(["203.0.113.0/24"])], set()),
    ("endpoint-not-open", "private endpoint", [eks_cluster(None, public=False)], set()),
    (
        "endpoint-not-open",
        "open but acknowledged",
        [eks_cluster(["0.0.0.0/0"], reason="lab cluster without a VPN")],
        set(),
    ),
    ("endpoint-not-open", "CIDRs unknown at preview", [eks_cluster(["<ref:?.?>"])], set()),
    ("endpoint-not-open", "explicit 0.0.0.0/0", [eks_cluster(["203.0.113.0/24", "0.0.0.0/0"])], {"cluster"}),
    # issue 47 item 9: a /0 in another script's digits (a tree edited by hand) is open as written; /00 is /0
    (
        "endpoint-not-open",
        "/0 in Arabic-Indic digits",
        [eks_cluster(["\u0660.\u0660.\u0660.\u0660/\u0660"])],
        {"cluster"},
    ),
    ("endpoint-not-open", "/00", [eks_cluster(["0.0.0.0/00"])], {"cluster"}),
    ("endpoint-not-open", "/0x", [eks_cluster(["10.0.0.0/0x"])], set()),
    ("endpoint-not-open", "CIDRs omitted (EKS default)", [eks_cluster(None)], {"cluster"}),
    ("endpoint-not-open", "public access omitted (EKS default true)", [eks_cluster(None, public=None)], {"cluster"}),
    ("endpoint-open-acknowledged", "limited endpoint", [eks_cluster(["203.0.113.0/24"])], set()),
    (
        "endpoint-open-acknowledged",
        "acknowledged open endpoint",
        [eks_cluster(None, reason="lab cluster without a VPN")],
        {"cluster"},
    ),
    ("gpu-node-group-tainted", "tainted GPU group", fleet(), set()),
    ("gpu-node-group-tainted", "untainted system group", fleet(system_group()), set()),
    (
        "gpu-node-group-tainted",
        "taints unknown at preview",
        fleet(group=with_inputs(node_group(), taints="<ref:?.?>")),
        set(),
    ),
    ("gpu-node-group-tainted", "no taint", fleet(group=with_inputs(node_group(), taints=[])), {NG}),
    (
        "gpu-node-group-tainted",
        "PreferNoSchedule only",
        fleet(
            group=with_inputs(
                node_group(), taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "PREFER_NO_SCHEDULE"}]
            )
        ),
        {NG},
    ),
    ("gpu-node-group-tainted", "unlabelled NVIDIA AMI group", [with_inputs(node_group(), labels={}, taints=[])], {NG}),
    ("one-instance-type", "one type", fleet(), set()),
    ("one-instance-type", "CPU system group with two types", fleet(system_group()), set()),
    (
        "one-instance-type",
        "two GPU types",
        fleet(group=with_inputs(node_group(), instanceTypes=["p5.48xlarge", "p5en.48xlarge"])),
        {NG},
    ),
    ("node-image-pinned", "release and template version pinned", fleet(), set()),
    (
        "node-image-pinned",
        "CUSTOM AMI without release",
        fleet(group=with_inputs(node_group(), amiType="CUSTOM", releaseVersion=None)),
        set(),
    ),
    ("node-image-pinned", "no releaseVersion", fleet(group=with_inputs(node_group(), releaseVersion=None)), {NG}),
    (
        "node-image-pinned",
        "launch template $Latest",
        fleet(group=with_inputs(node_group(), launchTemplate={"id": f"<ref:{LT}.id>", "version": "$Latest"})),
        {NG},
    ),
    (
        "node-image-pinned",
        "launch template $Default",
        fleet(group=with_inputs(node_group(), launchTemplate={"id": f"<ref:{LT}.id>", "version": "$Default"})),
        {NG},
    ),
    (
        "node-image-pinned",
        "launch template without version",
        fleet(group=with_inputs(node_group(), launchTemplate={"id": f"<ref:{LT}.id>"})),
        {NG},
    ),
    ("desired-size-ignored", "ignored", fleet(), set()),
    (
        "desired-size-ignored",
        "ignored, snake_case path",
        fleet(group={**node_group(), "ignoreChanges": ["scaling_config.desired_size"]}),
        set(),
    ),
    ("desired-size-ignored", "not ignored", fleet(group={**node_group(), "ignoreChanges": []}), {NG}),
    (
        "desired-size-ignored",
        "other path ignored",
        fleet(group={**node_group(), "ignoreChanges": ["scalingConfig.maxSize"]}),
        {NG},
    ),
    ("training-topology-aligned", "nodeadm single-numa-node", fleet(), set()),
    (
        "training-topology-aligned",
        "Bottlerocket single-numa-node",
        fleet(template=launch_template("h100", BOTTLEROCKET_NUMA)),
        set(),
    ),
    (
        "training-topology-aligned",
        "Inference group without policy",
        fleet(
            group=with_labels(node_group(), {"gpufleet.io/workload-class": "Inference"}),
            template=launch_template("h100", mime("kind: NodeConfig\nspec: {}\n", CLOSE_ESCAPE)),
        ),
        set(),
    ),
    (
        "training-topology-aligned",
        "user data unknown at preview",
        fleet(template=with_inputs(launch_template("h100"), userData="<ref:?.?>")),
        set(),
    ),
    (
        "training-topology-aligned",
        "NodeConfig without policy",
        fleet(
            template=launch_template(
                "h100", mime("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n", CLOSE_ESCAPE)
            )
        ),
        {LT},
    ),
    (
        "training-topology-aligned",
        "best-effort",
        fleet(
            template=launch_template("h100", mime(SINGLE_NUMA.replace("single-numa-node", "best-effort"), CLOSE_ESCAPE))
        ),
        {LT},
    ),
    (
        "training-topology-aligned",
        "restricted",
        fleet(
            template=launch_template("h100", mime(SINGLE_NUMA.replace("single-numa-node", "restricted"), CLOSE_ESCAPE))
        ),
        set(),
    ),
    (
        "training-topology-aligned",
        "a later NodeConfig part overrides",
        fleet(
            template=launch_template(
                "h100",
                mime(SINGLE_NUMA + "---\n" + SINGLE_NUMA.replace("single-numa-node", "best-effort"), CLOSE_ESCAPE),
            )
        ),
        {LT},
    ),
    (
        "training-topology-aligned",
        "Bottlerocket without policy",
        fleet(template=launch_template("h100", '[settings.kubernetes]\ncpu-manager-policy = "static"\n')),
        {LT},
    ),
    (
        "training-topology-aligned",
        "no launch template",
        [with_inputs(node_group(), launchTemplate=None), gpu_operator()],
        {NG},
    ),
    (
        "efa-single-zone",
        "one subnet and EFA interfaces",
        fleet(group=node_group(fabric="EFA"), template=launch_template("h100", efa=True)),
        set(),
    ),
    ("efa-single-zone", "non-EFA group in two subnets", fleet(), set()),
    (
        "efa-single-zone",
        "EFA group in two subnets",
        fleet(
            group=with_inputs(node_group(fabric="EFA"), subnetIds=["subnet-1", "subnet-2"]),
            template=launch_template("h100", efa=True),
        ),
        {NG},
    ),
    (
        "efa-single-zone",
        "EFA group without EFA interfaces",
        fleet(group=node_group(fabric="EFA"), template=launch_template("h100")),
        {LT},
    ),
    ("gpu-operator-cve-fixed", "v26.7.0", fleet(), set()),
    ("gpu-operator-cve-fixed", "v25.3.1 is the first fixed release", [gpu_operator("v25.3.1")], set()),
    (
        "gpu-operator-cve-fixed",
        "old toolkit version unused (toolkit disabled)",
        [gpu_operator(toolkit={"enabled": False, "version": "v1.16.1"})],
        set(),
    ),
    ("gpu-operator-cve-fixed", "v25.3.0 is affected", [gpu_operator("v25.3.0")], {OP}),
    ("gpu-operator-cve-fixed", "v24.6.1 is affected (CVE-2024-0132)", [gpu_operator("v24.6.1")], {OP}),
    ("gpu-operator-cve-fixed", "a range is not a pin", [gpu_operator("^25.3")], {OP}),
    ("gpu-operator-cve-fixed", "no version", [with_inputs(gpu_operator(), version=None)], {OP}),
    (
        "gpu-operator-cve-fixed",
        "operator toolkit v1.17.7",
        [gpu_operator(toolkit={"enabled": True, "version": "v1.17.7-ubuntu20.04", "env": TOOLKIT_ENV})],
        {OP},
    ),
    ("gpu-operator-escape-closed", "volume-mounts, host toolkit", fleet(), set()),
    (
        "gpu-operator-escape-closed",
        "operator toolkit with both env vars",
        [gpu_operator(toolkit={"enabled": True, "env": TOOLKIT_ENV})],
        set(),
    ),
    ("gpu-operator-escape-closed", "device plugin strategy unset", [gpu_operator(devicePlugin={})], {OP}),
    (
        "gpu-operator-escape-closed",
        "envvar still in the strategy list",
        [gpu_operator(devicePlugin={"env": [{"name": "DEVICE_LIST_STRATEGY", "value": "envvar,volume-mounts"}]})],
        {OP},
    ),
    ("gpu-operator-escape-closed", "operator toolkit (chart default) without env", [gpu_operator(toolkit={})], {OP}),
    (
        "gpu-operator-escape-closed",
        "operator toolkit accepts the env var",
        [gpu_operator(toolkit={"enabled": True, "env": [{**TOOLKIT_ENV[0], "value": "true"}, TOOLKIT_ENV[1]]})],
        {OP},
    ),
    ("host-toolkit-escape-closed", "host toolkit closed by user data", fleet(), set()),
    (
        "host-toolkit-escape-closed",
        "operator toolkit owns the config",
        [
            node_group(),
            launch_template("h100", mime(SINGLE_NUMA)),
            gpu_operator(toolkit={"enabled": True, "env": TOOLKIT_ENV}),
        ],
        set(),
    ),
    (
        "host-toolkit-escape-closed",
        "Bottlerocket default",
        fleet(template=launch_template("h100", BOTTLEROCKET_NUMA)),
        set(),
    ),
    (
        "host-toolkit-escape-closed",
        "user data without the toolkit setting",
        fleet(template=launch_template("h100", mime(SINGLE_NUMA))),
        {LT},
    ),
    (
        "host-toolkit-escape-closed",
        "Bottlerocket setting turned on",
        fleet(
            template=launch_template(
                "h100",
                BOTTLEROCKET_NUMA
                + "[settings.nvidia-container-runtime]\nvisible-devices-envvar-when-unprivileged = true\n",
            )
        ),
        {LT},
    ),
    ("checkpoint-bucket-protected", "protected, retained, encrypted, private", bucket_set(), set()),
    ("checkpoint-bucket-protected", "retainOnDelete unknown (CrossGuard)", _bucket(retainOnDelete=None), set()),
    (
        "checkpoint-bucket-protected",
        "inline encryption, access block by bucket name",
        [
            res(
                "b",
                "aws:s3/bucketV2:BucketV2",
                {
                    "bucket": "ckpt",
                    "serverSideEncryptionConfiguration": {
                        "rule": {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}
                    },
                },
                protect=True,
                retainOnDelete=True,
            ),
            res(
                "pab",
                "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
                {
                    "bucket": "ckpt",
                    "blockPublicAcls": True,
                    "blockPublicPolicy": True,
                    "ignorePublicAcls": True,
                    "restrictPublicBuckets": True,
                },
            ),
        ],
        set(),
    ),
    ("checkpoint-bucket-protected", "not protected", _bucket(protect=False), {"checkpoint-bucket"}),
    ("checkpoint-bucket-protected", "not retained", _bucket(retainOnDelete=False), {"checkpoint-bucket"}),
    ("checkpoint-bucket-protected", "forceDestroy", _bucket(forceDestroy=True), {"checkpoint-bucket"}),
    ("checkpoint-bucket-protected", "no encryption", bucket_set()[:1] + bucket_set()[2:], {"checkpoint-bucket"}),
    ("checkpoint-bucket-protected", "no public access block", bucket_set()[:2], {"checkpoint-bucket"}),
    (
        "checkpoint-bucket-protected",
        "public policies allowed",
        _pab(restrictPublicBuckets=False),
        {"checkpoint-bucket"},
    ),
    ("checkpoint-bucket-protected", "public ACL", _bucket(acl="public-read"), {"checkpoint-bucket"}),
    ("team-namespace-queued", "bound and covered", TEAMS + queue_name_policy(["vision", "speech"]), set()),
    (
        "team-namespace-queued",
        "no team namespaces",
        [k8s({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpufleet-system"}})],
        set(),
    ),
    (
        "team-namespace-queued",
        "no LocalQueue",
        [r for r in TEAMS if r["id"] != "localqueue-vision-vision"] + queue_name_policy(["vision", "speech"]),
        {"namespace-cluster-vision"},
    ),
    ("team-namespace-queued", "LocalQueue on another team's queue", _lq_to("speech"), {"namespace-cluster-vision"}),
    ("team-namespace-queued", "LocalQueue on a missing queue", _lq_to("nope"), {"namespace-cluster-vision"}),
    (
        "team-namespace-queued",
        "binding misses a namespace",
        TEAMS + queue_name_policy(["speech"]),
        {"namespace-cluster-vision"},
    ),
    (
        "team-namespace-queued",
        "binding only warns",
        TEAMS + queue_name_policy(["vision", "speech"], actions=("Warn",)),
        {"namespace-cluster-vision", "namespace-cluster-speech"},
    ),
    (
        "team-namespace-queued",
        "no queue-name policy",
        list(TEAMS),
        {"namespace-cluster-vision", "namespace-cluster-speech"},
    ),
    (
        "cluster-queue-selects-namespaces",
        "selects the team namespace",
        team("vision") + queue_name_policy(["vision"]),
        set(),
    ),
    (
        "cluster-queue-selects-namespaces",
        "empty selector admits all",
        _cq_selector({}),
        {"clusterqueue-cluster-vision"},
    ),
    ("cluster-queue-selects-namespaces", "no selector", _cq_selector(...), {"clusterqueue-cluster-vision"}),
    (
        "cluster-queue-selects-namespaces",
        "name label exists (every namespace)",
        _cq_selector({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "Exists"}]}),
        {"clusterqueue-cluster-vision"},
    ),
    (
        "cluster-queue-selects-namespaces",
        "NotIn only",
        _cq_selector(
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
                ]
            }
        ),
        {"clusterqueue-cluster-vision"},
    ),
    ("team-has-members", "every team has an access entry", _teams(), set()),
    (
        "team-has-members",
        "member found by group when the tag is missing",
        _teams(lambda r: _by_id(r, "access-team-vision")["inputs"].update(tags={})),
        set(),
    ),
    (
        "team-has-members",
        "no access entry for vision",
        _teams(lambda r: r.remove(_by_id(r, "access-team-vision"))),
        {"namespace-cluster-vision"},
    ),
    ("team-access-in-namespace", "edit scoped to the team namespace, read-only queue viewer", _teams(), set()),
    (
        "team-access-in-namespace",
        "ClusterRole bound in the team namespace by a RoleBinding",
        _teams(
            lambda r: _by_id(r, "rolebinding-vision-gpufleet-team-vision")["inputs"]["roleRef"].update(
                kind="ClusterRole", name="edit"
            )
        ),
        set(),
    ),
    (
        "team-access-in-namespace",
        "scope unknown at preview",
        _teams(lambda r: _by_id(r, VISION_EDIT)["inputs"].update(accessScope={"type": "<ref:?.?>"})),
        set(),
    ),
    (
        "team-access-in-namespace",
        "cluster-scoped edit",
        _teams(lambda r: _by_id(r, VISION_EDIT)["inputs"].update(accessScope={"type": "cluster"})),
        {VISION_EDIT},
    ),
    (
        "team-access-in-namespace",
        "edit in two namespaces",
        _teams(lambda r: _by_id(r, VISION_EDIT)["inputs"]["accessScope"].update(namespaces=["vision", "speech"])),
        {VISION_EDIT},
    ),
    (
        "team-access-in-namespace",
        "edit in another team's namespace",
        _teams(lambda r: _by_id(r, VISION_EDIT)["inputs"]["accessScope"].update(namespaces=["speech"])),
        {VISION_EDIT},
    ),
    ("team-access-in-namespace", "team found by group, cluster-scoped", _teams(_untag), {VISION_EDIT}),
    (
        "team-access-in-namespace",
        "RoleBinding in another team's namespace",
        _teams(
            lambda r: _by_id(r, "rolebinding-speech-gpufleet-team-speech")["inputs"]["subjects"].append(
                {"kind": "Group", "name": "gpufleet-team-vision"}
            )
        ),
        {"rolebinding-speech-gpufleet-team-speech"},
    ),
    (
        "team-access-in-namespace",
        "bound cluster-wide to the built-in edit role",
        _teams(lambda r: _by_id(r, VISION_VIEWER)["inputs"]["roleRef"].update(name="edit")),
        {VISION_VIEWER},
    ),
    (
        "team-access-in-namespace",
        "cluster role that writes ClusterQueues",
        _teams(
            _bind_to(
                _cluster_role(
                    "queue-admin",
                    [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get", "update"]}],
                )
            )
        ),
        {VISION_VIEWER},
    ),
    (
        "team-access-in-namespace",
        "cluster role that reads every namespace's pods",
        _teams(
            _bind_to(
                _cluster_role("pod-reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
            )
        ),
        {VISION_VIEWER},
    ),
    ("team-namespace-default-deny", "default deny and CNI enforcement", _teams() + [vpc_cni()], set()),
    ("team-namespace-default-deny", "no team namespaces", [vpc_cni(None)], set()),
    (
        "team-namespace-default-deny",
        "a second, wider policy beside the default deny",
        _teams(lambda r: r.append(clone(_by_id(r, "networkpolicy-vision-default-deny")) | {"id": "np-2"})),
        set(),
    ),
    (
        "team-namespace-default-deny",
        "no NetworkPolicy in vision",
        _teams(lambda r: r.remove(_by_id(r, "networkpolicy-vision-default-deny"))),
        {VISION_NS},
    ),
    (
        "team-namespace-default-deny",
        "policy selects some pods only",
        _teams(_policy(lambda s: s.update(podSelector={"matchLabels": {"app": "x"}}))),
        {VISION_NS},
    ),
    (
        "team-namespace-default-deny",
        "egress-only policy",
        _teams(_policy(lambda s: s.update(policyTypes=["Egress"]))),
        {VISION_NS},
    ),
    (
        "team-namespace-default-deny",
        "ingress from every namespace",
        _teams(_policy(lambda s: s["ingress"].append({"from": [{"namespaceSelector": {}}]}))),
        {VISION_NS},
    ),
    (
        "team-namespace-default-deny",
        "ingress rule without from",
        _teams(_policy(lambda s: s["ingress"].append({"ports": [{"port": 80}]}))),
        {VISION_NS},
    ),
    (
        "team-namespace-default-deny",
        "ingress from 0.0.0.0/0",
        _teams(_policy(lambda s: s["ingress"].append({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}))),
        {VISION_NS},
    ),
    ("team-namespace-default-deny", "CNI without network policy agent", _teams() + [vpc_cni(None)], {"addon-vpc-cni"}),
    (
        "team-namespace-default-deny",
        "CNI agent turned off",
        _teams() + [vpc_cni('{"enableNetworkPolicy": "false"}')],
        {"addon-vpc-cni"},
    ),
    ("workload-namespace-pod-security", "baseline", _teams(), set()),
    ("workload-namespace-pod-security", "restricted", _teams(_psa("restricted")), set()),
    ("workload-namespace-pod-security", "privileged", _teams(_psa("privileged")), {VISION_NS}),
    ("workload-namespace-pod-security", "no enforce label (privileged)", _teams(_psa(None)), {VISION_NS}),
    ("serving-readiness-probe", "probed server on l40s", _serving_fleet(_server(probe=True, **ON_L40S)), set()),
    (
        "serving-readiness-probe",
        "unprobed server on h100",
        _serving_fleet(_server(nodeSelector={"gpufleet.io/node-group": "h100"})),
        set(),
    ),
    (
        "serving-readiness-probe",
        "gpufleet's own placeholder",
        _serving_fleet(_server(ns="gpufleet-system", labels={"app.kubernetes.io/managed-by": "gpufleet"}, **ON_L40S)),
        set(),
    ),
    (
        "serving-readiness-probe",
        "a namespace the Deny binding leaves out",
        _serving_fleet(
            _readiness_binding(["Deny"], ["vision"]),
            _readiness_binding(["Warn", "Audit"], ["language"]),
            _server(**ON_L40S),
        ),
        set(),
    ),
    (
        "serving-readiness-probe",
        "a fleet stack whose teams are all Off",
        _serving_fleet(*_teams(), _server(ns="vision", **ON_L40S)),
        set(),
    ),
    ("serving-readiness-probe", "unprobed server on l40s", _serving_fleet(_server(**ON_L40S)), {SERVER}),
    (
        "serving-readiness-probe",
        "in a namespace the Deny binding covers",
        _serving_fleet(_readiness_binding(["Deny"], ["language"]), _server(**ON_L40S)),
        {SERVER},
    ),
    (
        "serving-readiness-probe",
        "tolerates the serving taint",
        _serving_fleet(_server("StatefulSet", tolerations=[{**SERVING_TAINT, "operator": "Equal"}])),
        {"statefulset-language-llm"},
    ),
    (
        "serving-readiness-probe",
        "LWS worker without a probe",
        _serving_fleet(_server("LeaderWorkerSet", tolerations=[{"key": "gpufleet.io/serving", "operator": "Exists"}])),
        {"leaderworkerset-language-llm"},
    ),
    (
        "serving-readiness-probe",
        "bare pod of the serving class: a priority class places nothing",
        _serving_fleet(_server("Pod", priorityClassName="serving")),
        set(),
    ),
    (
        "serving-readiness-probe",
        "bare pod tolerating the serving taint",
        _serving_fleet(_server("Pod", tolerations=[{"key": "gpufleet.io/serving", "operator": "Exists"}])),
        {"pod-language-llm"},
    ),
    (
        "serving-readiness-probe",
        "a keyless Exists toleration places nothing",
        _serving_fleet(_server(tolerations=[{"operator": "Exists"}])),
        set(),
    ),
    (
        "serving-readiness-probe",
        "the serving taint tolerated by a pod that selects a Training group",
        _serving_fleet(
            _server(
                nodeSelector={"gpufleet.io/node-group": "h100"}, tolerations=[{**SERVING_TAINT, "operator": "Equal"}]
            )
        ),
        set(),
    ),
    (
        "serving-readiness-probe",
        "a required node affinity term naming the Inference group",
        _serving_fleet(
            _server(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "gpufleet.io/node-group", "operator": "In", "values": ["l40s"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            )
        ),
        {SERVER},
    ),
    (
        "serving-readiness-probe",
        "Karpenter Inference pool by workload class",
        fleet(*_pool(), _server(nodeSelector={"gpufleet.io/workload-class": "Inference"})),
        {SERVER},
    ),
    (
        "serving-readiness-probe",
        "a team with only Inference quota",
        _serving_fleet(_inference_queue("language"), _server()),
        {SERVER},
    ),
    ("interactive-warm-pool", "Interactive with warm pool", _group("notebooks", "Interactive"), set()),
    (
        "interactive-warm-pool",
        "Interactive with headroom instead of a warm pool",
        [node_group("notebooks", cls="Interactive"), launch_template("notebooks"), _headroom("notebooks")],
        set(),
    ),
    (
        "interactive-warm-pool",
        "Interactive Karpenter pool without headroom",
        _pool("Interactive", group="notebooks"),
        {"nodepool-cluster-notebooks"},
    ),
    (
        "interactive-warm-pool",
        "Interactive Karpenter pool with headroom",
        [*_pool("Interactive", group="notebooks"), _headroom("notebooks")],
        set(),
    ),
    (
        "interactive-warm-pool",
        "headroom of 0 replicas keeps nothing warm",
        [*_pool("Interactive", group="notebooks"), _headroom("notebooks", 0)],
        {"nodepool-cluster-notebooks"},
    ),
    ("interactive-warm-pool", "Training without warm pool", fleet(), set()),
    (
        "interactive-warm-pool",
        "Interactive without warm pool",
        [node_group("notebooks", cls="Interactive"), launch_template("notebooks")],
        {"notebooks-node-group"},
    ),
    (
        "time-slicing-interactive-or-batch",
        "time-sliced Interactive group",
        _group("notebooks", "Interactive", **{"nvidia.com/device-plugin.config": "notebooks"})
        + [
            _operator_with_dp_config("default"),
            device_plugin_configmap({"default": "version: v1\n", "notebooks": TS_CONFIG}),
        ],
        set(),
    ),
    (
        "time-slicing-interactive-or-batch",
        "MPS Inference group",
        _group("l40s", "Inference", **{"nvidia.com/device-plugin.config": "l40s"})
        + [
            _operator_with_dp_config("default"),
            device_plugin_configmap({"default": "version: v1\n", "l40s": MPS_CONFIG}),
        ],
        set(),
    ),
    (
        "time-slicing-interactive-or-batch",
        "time-sliced Training group",
        _group("h100", "Training", **{"nvidia.com/device-plugin.config": "h100"})
        + [
            _operator_with_dp_config("default"),
            device_plugin_configmap({"default": "version: v1\n", "h100": TS_CONFIG}),
        ],
        {NG},
    ),
    (
        "time-slicing-interactive-or-batch",
        "time-slicing default applies to an unlabelled Inference group",
        _group("l40s", "Inference")
        + [_operator_with_dp_config("shared"), device_plugin_configmap({"shared": TS_CONFIG})],
        {"l40s-node-group"},
    ),
    (
        "time-slicing-interactive-or-batch",
        "Bottlerocket time-slicing on Inference",
        [
            node_group("l40s", cls="Inference"),
            launch_template(
                "l40s", '[settings.kubelet-device-plugins.nvidia]\ndevice-sharing-strategy = "time-slicing"\n'
            ),
            gpu_operator(),
        ],
        {"l40s-node-group"},
    ),
]


CASES += PRIVILEGED_CASES


@pytest.mark.parametrize(("rule", "case", "resources", "expected"), CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_rule(rule: str, case: str, resources: list[dict[str, Any]], expected: set[str]) -> None:
    findings = RULES_BY_NAME[rule].run(resources)
    assert {f.resource for f in findings} == expected, [f.message for f in findings]
    assert all(f.rule == rule and f.message and f.hint for f in findings)
    if not expected:
        others = [f for f in evaluate(resources) if f.severity == MANDATORY]
        assert others == [], f"passing fixture {case!r} violates other rules: {others}"


def test_every_rule_has_a_passing_and_a_failing_fixture() -> None:
    for rule in RULES:
        outcomes = {bool(expected) for name, _, _, expected in CASES if name == rule.name}
        assert outcomes == {True, False}, rule.name


def test_rule_names_are_unique_and_levels_known() -> None:
    assert len({r.name for r in RULES}) == len(RULES)
    assert {r.severity for r in RULES} == {"mandatory", "advisory"}
    assert {r.name for r in RULES if r.severity == "advisory"} == {
        "endpoint-open-acknowledged",
        "interactive-warm-pool",
        "time-slicing-interactive-or-batch",
        "privileged-image-digest",
    }


def test_findings_are_sorted_mandatory_first() -> None:
    resources = [
        with_inputs(node_group("notebooks", cls="Interactive"), taints=[]),
        launch_template("notebooks"),
        gpu_operator(),
    ]
    assert [(f.severity, f.rule) for f in evaluate(resources)] == [
        ("mandatory", "gpu-node-group-tainted"),
        ("advisory", "interactive-warm-pool"),
    ]
