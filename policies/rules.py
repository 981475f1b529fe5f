"""The fleet's policies as pure predicates. Importing this module starts nothing and imports no Pulumi.

Each rule reads plain resource dicts (see `gpufleet.policies.resources`) and yields violations. The same rules run in
two places: `gpufleet check DIR` over a synth tree, and the CrossGuard pack (`policies/__main__.py`) during
`pulumi preview --policy-pack policies`. Rules judge only values known at preview time: an unknown value
(`<ref:...>`) is never a violation. Every rule passes on resources it does not concern, so stages can grow
without breaking policies that do not look at them.

    from gpufleet.policies.rules import evaluate
    findings = evaluate(resources)          # list[PolicyFinding], mandatory first
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from gpufleet.policies import checks_access, checks_cluster, checks_karpenter, checks_nodes, checks_serving
from gpufleet.policies.resources import Resource

MANDATORY = "mandatory"
ADVISORY = "advisory"


@dataclass(frozen=True, slots=True)
class Violation:
    """What a check yields: the offending resource id, what is wrong, and (optionally) a specific fix."""

    resource: str | None
    message: str
    hint: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyFinding:
    """A rule's violation by one resource (gpufleet.base.findings)."""

    rule: str
    severity: str  # mandatory | advisory: the rule's enforcement level
    resource: str | None
    message: str
    hint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """A named policy. `scope` "resource": `check(resource)`; "stack": `check(resources)` (cross-resource)."""

    name: str
    severity: str  # mandatory | advisory
    scope: str
    description: str
    hint: str
    check: Callable[..., Iterable[Violation]]

    def run(self, resources: Sequence[Resource]) -> list[PolicyFinding]:
        if self.scope == "resource":
            found = [v for r in resources for v in self.check(r)]
        else:
            found = list(self.check(resources))
        return [
            PolicyFinding(
                rule=self.name, severity=self.severity, resource=v.resource, message=v.message, hint=v.hint or self.hint
            )
            for v in found
        ]


def _resource_rule(fn: Callable[[Resource], Iterable[str]]) -> Callable[[Resource], Iterator[Violation]]:
    def check(resource: Resource) -> Iterator[Violation]:
        for message in fn(resource):
            yield Violation(str(resource.get("id")), message)

    check.__name__ = fn.__name__
    return check


def _stack_rule(
    fn: Callable[[Sequence[Resource]], Iterable[tuple[Resource, str] | tuple[Resource, str, str]]],
) -> Callable[[Sequence[Resource]], Iterator[Violation]]:
    """Wraps a predicate yielding (resource, message) or (resource, message, specific fix)."""

    def check(resources: Sequence[Resource]) -> Iterator[Violation]:
        for found in fn(resources):
            yield Violation(str(found[0].get("id")), found[1], found[2] if len(found) == 3 else None)

    check.__name__ = fn.__name__
    return check


_MIN_OPERATOR = checks_cluster.dotted(checks_cluster.MIN_GPU_OPERATOR)
_MIN_TOOLKIT = checks_cluster.dotted(checks_cluster.MIN_CONTAINER_TOOLKIT)

RULES: tuple[Rule, ...] = (
    Rule(
        name="endpoint-not-open",
        severity=MANDATORY,
        scope="resource",
        description=(
            "The cluster's public API endpoint is not open to 0.0.0.0/0 (explicitly, or by omitting publicAccessCidrs),"
            " unless the spec acknowledges it with a reason."
        ),
        hint=(
            "set cluster.publicEndpoint.cidrs to the networks that need the API (VPN egress, CI runners), or"
            " endpointAccess: Private; if it must stay open, say why in"
            " cluster.publicEndpoint.acknowledgeOpenToInternet"
        ),
        check=_resource_rule(checks_access.endpoint_not_open),
    ),
    Rule(
        name="gpu-node-group-tainted",
        severity=MANDATORY,
        scope="resource",
        description=(
            "Every GPU node group (and every GPU Karpenter NodePool's template) carries the nvidia.com/gpu NO_SCHEDULE"
            " taint, so only pods that request GPUs land there."
        ),
        hint=(
            'add the taint {key: nvidia.com/gpu, value: "true", effect: NO_SCHEDULE} to the node group (EKS\'s '
            "ExtendedResourceToleration admission adds the toleration to every pod requesting nvidia.com/gpu)"
        ),
        check=_resource_rule(checks_nodes.gpu_taint),
    ),
    Rule(
        name="one-instance-type",
        severity=MANDATORY,
        scope="resource",
        description=(
            "A GPU node group has exactly one instance type: one device type per group keeps quotas, flavors and"
            " topology exact."
        ),
        hint="split the node group: one node group per instance type",
        check=_resource_rule(checks_nodes.one_instance_type),
    ),
    Rule(
        name="node-image-pinned",
        severity=MANDATORY,
        scope="resource",
        description=(
            "The AMI release is pinned (releaseVersion) and the launch template version is a number, never $Latest or"
            " $Default."
        ),
        hint=(
            "set nodeGroups[].ami.releaseVersion (cluster.systemNodes.releaseVersion for the system group) and "
            "reference the launch template's latestVersion, not $Latest/$Default"
        ),
        check=_resource_rule(checks_nodes.image_pinned),
    ),
    Rule(
        name="desired-size-ignored",
        severity=MANDATORY,
        scope="resource",
        description=(
            "Node groups ignore changes to scalingConfig.desiredSize: the autoscaler owns it, and a deploy must never"
            " scale GPUs back."
        ),
        hint='register the node group with ignore_changes=["scalingConfig.desiredSize"]',
        check=_resource_rule(checks_nodes.desired_size_ignored),
    ),
    Rule(
        name="training-topology-aligned",
        severity=MANDATORY,
        scope="stack",
        description=(
            "Training node groups and Karpenter pools run the kubelet Topology Manager with an aligning policy,"
            " restricted or single-numa-node (launch template user data, EC2NodeClass userData)."
        ),
        hint=(
            "set nodeGroups[].topology.policy: restricted (or leave it unset on Training groups) so the launch"
            " template's NodeConfig / Bottlerocket settings carry topologyManagerPolicy restricted"
        ),
        check=_stack_rule(checks_nodes.training_topology),
    ),
    Rule(
        name="efa-single-zone",
        severity=MANDATORY,
        scope="stack",
        description="EFA node groups sit in one zone (one subnet) and their launch template attaches EFA interfaces.",
        hint=(
            "give the EFA group one subnet (nodeGroups[].zone and subnetIds) and fabric: EFA so its launch "
            "template gets one EFA interface per network card"
        ),
        check=_stack_rule(checks_nodes.efa_single_zone),
    ),
    Rule(
        name="karpenter-imds-v2",
        severity=MANDATORY,
        scope="resource",
        description=(
            "An EC2NodeClass's nodes answer IMDSv2 only (httpTokens required) with a PUT hop limit of 1, so pods cannot"
            " reach the node role's credentials."
        ),
        hint=(
            "set spec.metadataOptions {httpEndpoint: enabled, httpTokens: required, httpPutResponseHopLimit: 1} (or"
            " leave metadataOptions out: the CRD defaults to exactly that); pods use EKS Pod Identity instead"
        ),
        check=_resource_rule(checks_karpenter.imds_locked),
    ),
    Rule(
        name="karpenter-volumes-encrypted",
        severity=MANDATORY,
        scope="resource",
        description="Every EBS volume an EC2NodeClass maps (root and data) is encrypted.",
        hint=(
            "set encrypted: true on every spec.blockDeviceMappings[].ebs (or leave blockDeviceMappings out: Karpenter's"
            " default mappings are encrypted)"
        ),
        check=_resource_rule(checks_karpenter.volumes_encrypted),
    ),
    Rule(
        name="karpenter-gpu-disruption",
        severity=MANDATORY,
        scope="resource",
        description=(
            "A GPU NodePool never evicts running work for Karpenter's own reasons: expireAfter Never, consolidation"
            " WhenEmpty, and on Training and Interactive pools a disruption budget of 0 nodes for reason Drifted."
        ),
        hint=(
            "set spec.template.spec.expireAfter: Never, spec.disruption.consolidationPolicy: WhenEmpty, and on"
            ' Training and Interactive pools a budget {nodes: "0", reasons: [Drifted]} (gpufleet renders all three)'
        ),
        check=_resource_rule(checks_karpenter.gpu_pool_disruption),
    ),
    Rule(
        name="gpu-operator-cve-fixed",
        severity=MANDATORY,
        scope="resource",
        description=(
            f"The GPU Operator chart is pinned to an exact version >= {_MIN_OPERATOR} (container toolkit "
            f">= {_MIN_TOOLKIT}): the fixes for CVE-2025-23266 (NVIDIAScape) and CVE-2024-0132."
        ),
        hint=(
            f"pin versions.gpuOperator.chart to {_MIN_OPERATOR} or later (and the toolkit version, when set, to"
            f" {_MIN_TOOLKIT} or later)"
        ),
        check=_resource_rule(checks_cluster.gpu_operator_cve_fixed),
    ),
    Rule(
        name="gpu-operator-escape-closed",
        severity=MANDATORY,
        scope="resource",
        description=(
            "The NVIDIA_VISIBLE_DEVICES container escape is closed in the GPU Operator values: device lists "
            "as volume mounts, and the operator's toolkit refuses the env var from unprivileged pods."
        ),
        hint=(
            "devicePlugin.env: [{name: DEVICE_LIST_STRATEGY, value: volume-mounts}]; with toolkit.enabled, toolkit.env:"
            " ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false,"
            " ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true"
        ),
        check=_resource_rule(checks_cluster.gpu_operator_escape_closed),
    ),
    Rule(
        name="host-toolkit-escape-closed",
        severity=MANDATORY,
        scope="stack",
        description=(
            "Where the node's own container toolkit is used (operator toolkit disabled), the GPU launch "
            "templates and GPU pools' EC2NodeClasses turn off accept-nvidia-visible-devices-envvar-when-unprivileged."
        ),
        hint=(
            "keep gpufleet's user data part that sets accept-nvidia-visible-devices-envvar-when-unprivileged = false "
            "in /etc/nvidia-container-runtime/config.toml (AL2023), or do not enable it in Bottlerocket settings"
        ),
        check=_stack_rule(checks_cluster.host_toolkit_escape_closed),
    ),
    Rule(
        name="checkpoint-bucket-protected",
        severity=MANDATORY,
        scope="stack",
        description="The checkpoint bucket is protected, retained on delete, encrypted and private.",
        hint=(
            "register the bucket with protect and retain_on_delete, add a server-side encryption configuration "
            "and a public access block with all four settings true"
        ),
        check=_stack_rule(checks_cluster.bucket_protected),
    ),
    Rule(
        name="team-namespace-queued",
        severity=MANDATORY,
        scope="stack",
        description=(
            "Every team namespace has a LocalQueue bound to a ClusterQueue that admits it, and is covered by "
            "the denying queue-name ValidatingAdmissionPolicy."
        ),
        hint=(
            "give the team a LocalQueue in its namespace pointing at its ClusterQueue, and bind the queue-name "
            "ValidatingAdmissionPolicy (validationActions [Deny]) to the namespace"
        ),
        check=_stack_rule(checks_cluster.team_namespace_queued),
    ),
    Rule(
        name="cluster-queue-selects-namespaces",
        severity=MANDATORY,
        scope="resource",
        description="No ClusterQueue admits all namespaces: its namespaceSelector is set and selects positively.",
        hint=(
            "set spec.namespaceSelector to select the team's namespace only (e.g. matchLabels "
            "{kubernetes.io/metadata.name: <namespace>})"
        ),
        check=_resource_rule(checks_cluster.cluster_queue_selector),
    ),
    Rule(
        name="serving-readiness-probe",
        severity=MANDATORY,
        scope="stack",
        description=(
            "A serving workload (Deployment, StatefulSet, ReplicaSet, LeaderWorkerSet, bare Pod) whose pod template"
            " lands on an Inference node group gives every container that requests GPUs a readinessProbe, where the"
            " stack's gpufleet-serving-readiness policy denies (or everywhere in a stack without gpufleet's teams)."
        ),
        hint=(
            "add a readinessProbe that sends one inference to each GPU container (the recipes in docs/inference.md),"
            " or set teams[].servingReadinessProbe: Warn for the team"
        ),
        check=_stack_rule(checks_serving.serving_readiness_probe),
    ),
    Rule(
        name="endpoint-open-acknowledged",
        severity=ADVISORY,
        scope="resource",
        description=(
            "A public API endpoint open to the internet with a recorded reason (cluster tag"
            " gpufleet.io/open-endpoint-reason)."
        ),
        hint="review the reason; limit cluster.publicEndpoint.cidrs when it no longer holds",
        check=_resource_rule(checks_access.endpoint_open_acknowledged),
    ),
    Rule(
        name="team-has-members",
        severity=MANDATORY,
        scope="stack",
        description=(
            "Every team namespace (label gpufleet.io/team) has at least one EKS access entry of the team "
            "(tag gpufleet.io/team or Kubernetes group gpufleet-team-<team>)."
        ),
        hint="add teams[].members: the IAM roles the team's people assume",
        check=_stack_rule(checks_access.team_has_members),
    ),
    Rule(
        name="team-access-in-namespace",
        severity=MANDATORY,
        scope="stack",
        description=(
            "A team's access stays in its namespace: its access policy associations are scoped to exactly its "
            "namespace, RoleBindings of its group live there, and ClusterRoleBindings of its group only read Kueue's "
            "cluster-scoped kinds."
        ),
        hint=(
            "scope team access policies to {type: namespace, namespaces: [<team namespace>]}, bind team groups in their"
            " own namespace, and cluster-wide only to read-only ClusterRoles over Kueue's cluster-scoped kinds"
        ),
        check=_stack_rule(checks_access.team_access_in_namespace),
    ),
    Rule(
        name="team-namespace-default-deny",
        severity=MANDATORY,
        scope="stack",
        description=(
            "Every workload namespace (label gpufleet.io/team, or holding a LocalQueue) has a NetworkPolicy that"
            " selects all its pods for Ingress and admits only its own pods and named namespaces, and the VPC CNI"
            " add-on (when in the stack) enables its network policy agent."
        ),
        hint=(
            "add the default-deny ingress NetworkPolicy (podSelector {}, ingress from podSelector {} and the monitoring"
            ' namespace) to the namespace, and set the vpc-cni add-on configurationValues {"enableNetworkPolicy":'
            ' "true"}'
        ),
        check=_stack_rule(checks_access.team_namespace_default_deny),
    ),
    Rule(
        name="workload-namespace-pod-security",
        severity=MANDATORY,
        scope="stack",
        description=(
            "Every workload namespace enforces Pod Security Admission baseline or restricted "
            "(label pod-security.kubernetes.io/enforce)."
        ),
        hint=(
            "label the namespace pod-security.kubernetes.io/enforce: baseline (teams[].podSecurity: Restricted for"
            " restricted)"
        ),
        check=_stack_rule(checks_access.workload_namespace_pod_security),
    ),
    Rule(
        name="interactive-warm-pool",
        severity=ADVISORY,
        scope="stack",
        description=(
            "Interactive node groups keep capacity warm (a warm pool, or headroom; on a Karpenter pool headroom), so"
            " a notebook does not wait for a cold GPU node."
        ),
        hint=(
            "add nodeGroups[].warmPool (e.g. {minSize: 1, state: Stopped}) on a managed group, or"
            " nodeGroups[].headroom: {nodes: 1} (the only option on a Karpenter group)"
        ),
        check=_stack_rule(checks_nodes.interactive_warm_pool),
    ),
    Rule(
        name="time-slicing-interactive-or-batch",
        severity=ADVISORY,
        scope="stack",
        description="Time-slicing (no memory or fault isolation) is used only on Interactive or Batch node groups.",
        hint="use sharing Exclusive, MIG or MPS on Training and Inference groups, or change the workload class",
        check=_stack_rule(checks_cluster.time_slicing_class),
    ),
    Rule(
        name="privileged-image-digest",
        severity=ADVISORY,
        scope="stack",
        description=(
            "Every privileged container gpufleet renders itself (remediation controller, planted-fault Job, DCGM health"
            " sidecar, Multus, bandwidth gate; gpufleet/facts/images.py) runs an image pinned by digest, not by a tag"
            " that can be pushed again."
        ),
        hint="give the image's digest in the spec (images.<key>: name:tag@sha256:<digest>)",
        check=_stack_rule(checks_cluster.privileged_image_digest),
    ),
)

RULES_BY_NAME: Mapping[str, Rule] = {rule.name: rule for rule in RULES}


def evaluate(resources: Sequence[Resource], rules: Sequence[Rule] = RULES) -> list[PolicyFinding]:
    """Every finding of every rule, mandatory first, then by rule order and resource."""
    order = {rule.name: i for i, rule in enumerate(RULES)}
    findings = [f for rule in rules for f in rule.run(resources)]
    return sorted(findings, key=lambda f: (f.severity != MANDATORY, order.get(f.rule, len(order)), f.resource or ""))
