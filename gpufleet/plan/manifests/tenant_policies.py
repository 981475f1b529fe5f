"""The ValidatingAdmissionPolicies that keep one team from stepping on another (docs/tenancy-and-access.md), as
plain dicts, each bound to the team namespaces. RBAC only adds: AmazonEKSEditPolicy grants a team member create,
update and delete of NetworkPolicies, Services, ConfigMaps, ServiceAccounts and DaemonSets in the namespace
(https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html), so what a team must not do
with them is refused here, at admission.

1. `gpufleet-team-priorities`: a workload in a team namespace may name, as the Kueue label
   `kueue.x-k8s.io/priority-class` or as a pod `priorityClassName` (a pod's, or its template's: Kueue takes a
   job's priority from the template when the label is absent), only the classes of `teams[].priorities`. Applies
   to every requester, controllers too (a Job controller creating a pod of a forbidden class is the same breach).
   Kueue lets the label change on a running workload (kueue pkg/workload validation.go), so UPDATE is judged too,
   but only when the label or the classes changed (objects admitted before the policy stay updatable).
2. `gpufleet-protect-owned-objects`: a team's group may not create, change or delete an object labelled
   `app.kubernetes.io/managed-by: gpufleet` (its NetworkPolicies, LocalQueues, checkpoint ServiceAccount, default
   ServiceAccount, ConfigMaps, the S3 and FSx PersistentVolumeClaims, the weight prefetch DaemonSets) nor put
   that label on its own objects.
3. `gpufleet-team-network-policies`: a NetworkPolicy a team's group writes may only name peers inside its own
   namespace (podSelector only, every rule with peers): NetworkPolicies only ever add allowed traffic, so a team's
   policy can never widen gpufleet's default-deny ones, and cannot narrow them either (Kubernetes
   NetworkPolicy semantics: the allowed traffic is the union of every policy selecting a pod).
4. `gpufleet-no-owner-spoofing`: a team member may not create an object with, nor add to one, a controller
   ownerReference naming a kind whose children are admitted, or judged, at the parent: every owner kind Kueue walks
   up from a child (the kinds of all its integrations, and the ReplicaSet between a Deployment and its pods: kueue
   v0.19.2 pkg/controller/jobframework integrationmanager.go isKnownOwner), and those gpufleet's own policies judge
   at the parent (a DaemonSet's pods, gpufleet.plan.manifests.readiness_policy). Kueue follows a controller
   reference whose uid matches the named object and treats the child as part of its parent's admitted workload
   ("same-namespace ownership spoofing is out of scope", kueue pkg/controller/jobframework reconciler.go
   FindAncestorJobManagedByKueue), so a Pod naming the ReplicaSet of the team's own queue-labelled Deployment would
   run outside every quota. Such references are only written by the controllers (the kube-controller-manager's,
   Kueue's, the JobSet, trainer and LeaderWorkerSet operators), under ServiceAccounts outside the team namespaces; a
   member's request cannot prove it came from one. "A team member" here is a team's group or a ServiceAccount of
   the request's own namespace (a member may create one and a token for it). An UPDATE keeping the claims the object
   had is admitted (a member labelling a pod its Deployment made). A CronJob owner stays allowed: `kubectl create
   job --from=cronjob/...` writes it, and Kueue admits such a Job on its own.
5. `gpufleet-team-no-daemonsets`: a team's group may not create DaemonSets: Kueue gates their pods, gives them a
   GPU flavor's nodeSelector, and they stay Pending holding quota.
6. `gpufleet-team-service-exposure`: a team's group may create Services of type ClusterIP or ExternalName, and
   NodePort or LoadBalancer only when `teams[].serviceTypes` allows it; never with `externalIPs`
   (CVE-2020-8554, which the EKS Best Practices Guide for multi-tenancy says to block).

"A team's group" is the Kubernetes group of the team's EKS access entries (gpufleet.spec.access.team_group, prefix
gpufleet-team-; EKS rejects access-entry groups starting with system:, so no ServiceAccount is in one).
CEL follows Kubernetes' admission CEL as gpufleet.plan.manifests.admission_policy does: `has()` guards every optional
field, `object` is null on DELETE and `oldObject` on CREATE (told apart by `request.operation`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpufleet.plan.manifests.admission_policy import API
from gpufleet.spec.names import LABEL_MANAGED_BY, LABEL_PRIORITY_CLASS, TEAM_GROUP_PREFIX

PRIORITY_POLICY = "gpufleet-team-priorities"
OWNED_POLICY = "gpufleet-protect-owned-objects"
NETWORK_POLICY_POLICY = "gpufleet-team-network-policies"
OWNER_POLICY = "gpufleet-no-owner-spoofing"
DAEMONSET_POLICY = "gpufleet-team-no-daemonsets"
SERVICE_POLICY = "gpufleet-team-service-exposure"
POLICIES = (PRIORITY_POLICY, OWNED_POLICY, NETWORK_POLICY_POLICY, OWNER_POLICY, DAEMONSET_POLICY, SERVICE_POLICY)

_MANAGED_KEY, _MANAGED_VALUE = next(iter(LABEL_MANAGED_BY.items()))
TEAM_PRINCIPAL = (
    f"has(request.userInfo.groups) && request.userInfo.groups.exists(g, g.startsWith('{TEAM_GROUP_PREFIX}'))"
)
# Service types every team may create: no port on the nodes, nothing reachable from outside the cluster.
INTERNAL_SERVICE_TYPES = ("ClusterIP", "ExternalName")

# Where each kind keeps its pod specs (JobSet: apis/jobset/v1alpha2 ReplicatedJob.template is a JobTemplateSpec;
# PyTorchJob and MPIJob: a map of replica type -> ReplicaSpec with a PodTemplateSpec `template`, kubeflow
# training-operator pkg/apis/kubeflow.org/v1 and mpi-operator v2beta1). A TrainJob's pods come from its runtime's
# JobSet template (admin-owned ClusterTrainingRuntimes), whose JobSet this policy judges when the trainer
# controller creates it. gpufleet installs neither PyTorchJob nor MPIJob; they are listed so that a fleet whose admins
# add the training or MPI operator stays guarded (a rule for a resource the API server does not serve matches nothing).
_WORKLOADS = (
    ("", "v1", "pods"),
    ("batch", "v1", "jobs"),
    ("batch", "v1", "cronjobs"),
    ("apps", "v1", "deployments"),
    ("apps", "v1", "statefulsets"),
    ("apps", "v1", "replicasets"),
    ("jobset.x-k8s.io", "*", "jobsets"),
    ("kubeflow.org", "*", "pytorchjobs"),
    ("kubeflow.org", "*", "mpijobs"),
    ("trainer.kubeflow.org", "*", "trainjobs"),
    ("leaderworkerset.x-k8s.io", "*", "leaderworkersets"),
)
# Controller owners a team member may not claim (policy 4), as (apiVersion group, kind): every Kueue v0.19.2
# integration's kind (pkg/controller/jobs/*: the GVKs their RegisterIntegration calls register; isKnownOwner walks
# through all registered ones, enabled or not), the ReplicaSet Kueue walks through, and the DaemonSet whose pods
# gpufleet-serving-readiness judges at the parent. Kinds the fleet does not install are listed too: admins may add
# their operators, and naming a kind that is not served refuses nothing legitimate.
CLAIMED_OWNERS = (
    ("", "Pod"),
    ("batch", "Job"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("jobset.x-k8s.io", "JobSet"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    ("trainer.kubeflow.org", "TrainJob"),
    ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "MPIJob"),
    ("kubeflow.org", "TFJob"),
    ("kubeflow.org", "PaddleJob"),
    ("kubeflow.org", "XGBoostJob"),
    ("kubeflow.org", "JAXJob"),
    ("ray.io", "RayCluster"),
    ("ray.io", "RayJob"),
    ("ray.io", "RayService"),
    ("workload.codeflare.dev", "AppWrapper"),
    ("sparkoperator.k8s.io", "SparkApplication"),
)
# What policy 4 judges: the workloads, and every other kind Kueue admits, whose child a member could pass for
# (a RayJob's RayCluster, an AppWrapper's JobSet). A rule for a resource the API server does not serve matches nothing.
_OWNED_WORKLOADS = (
    *_WORKLOADS,
    ("kubeflow.org", "*", "tfjobs"),
    ("kubeflow.org", "*", "paddlejobs"),
    ("kubeflow.org", "*", "xgboostjobs"),
    ("kubeflow.org", "*", "jaxjobs"),
    ("ray.io", "*", "rayclusters"),
    ("ray.io", "*", "rayjobs"),
    ("ray.io", "*", "rayservices"),
    ("workload.codeflare.dev", "*", "appwrappers"),
    ("sparkoperator.k8s.io", "*", "sparkapplications"),
)
# A team member or an identity one can make: a ServiceAccount of the request's namespace (Kubernetes service account
# usernames are system:serviceaccount:<namespace>:<name>; no controller runs in a team namespace).
TEAM_IDENTITY = (
    f"({TEAM_PRINCIPAL}) || (has(request.userInfo.username) &&"
    " request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':'))"
)


def _rules(resources: Sequence[tuple[str, str, str]], operations: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"apiGroups": [group], "apiVersions": [version], "operations": list(operations), "resources": [resource]}
        for group, version, resource in resources
    ]


def _policy(
    name: str,
    resource_rules: list[dict[str, Any]],
    validations: list[dict[str, Any]],
    *,
    match_conditions: Sequence[dict[str, str]] = (),
    variables: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": resource_rules}}
    if match_conditions:
        spec["matchConditions"] = list(match_conditions)
    if variables:
        spec["variables"] = list(variables)
    spec["validations"] = validations
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(LABEL_MANAGED_BY)},
        "spec": spec,
    }


def _team_principal() -> dict[str, str]:
    return {"name": "requested-by-a-team-member", "expression": TEAM_PRINCIPAL}


def _cel(value: Any) -> str:
    """A CEL literal of strings, lists and maps (JSON's syntax is CEL's for these)."""
    return json.dumps(value, sort_keys=True)


# ---------------------------------------------------------------------------------------------------------------
# 1. Priorities


def _present(root: str) -> str:
    """`root` exists: `object` but on DELETE, `oldObject` but on CREATE (told by the operation, not by comparing
    with null, so the CEL means the same to every evaluator)."""
    return "request.operation != 'DELETE'" if root == "object" else "request.operation != 'CREATE'"


def _label(root: str, key: str) -> str:
    return (
        f"{_present(root)} && has({root}.metadata.labels) && '{key}' in {root}.metadata.labels ?"
        f" {root}.metadata.labels['{key}'] : ''"
    )


def _pod_specs(root: str) -> str:
    """The pod specs of `root` (a list), by kind."""
    s = f"{root}.spec"

    def replicas(field: str) -> str:
        return f"has({s}.{field}) ? {s}.{field}.map(k, {s}.{field}[k].template.spec) : []"

    return (
        f"!({_present(root)}) || !has({root}.spec) ? [] : "
        f"{root}.kind == 'Pod' ? [{s}] : "
        f"{root}.kind in ['Job', 'Deployment', 'StatefulSet', 'ReplicaSet'] ?"
        f" (has({s}.template) && has({s}.template.spec) ? [{s}.template.spec] : []) : "
        f"{root}.kind == 'CronJob' ? (has({s}.jobTemplate) && has({s}.jobTemplate.spec) &&"
        f" has({s}.jobTemplate.spec.template) && has({s}.jobTemplate.spec.template.spec) ?"
        f" [{s}.jobTemplate.spec.template.spec] : []) : "
        f"{root}.kind == 'JobSet' ? (has({s}.replicatedJobs) ? {s}.replicatedJobs.map(j, j.template.spec.template.spec)"
        " : []) : "
        f"{root}.kind == 'PyTorchJob' ? ({replicas('pytorchReplicaSpecs')}) : "
        f"{root}.kind == 'MPIJob' ? ({replicas('mpiReplicaSpecs')}) : "
        # LeaderWorkerSet (lws apis/leaderworkerset/v1): leaderWorkerTemplate.workerTemplate, and leaderTemplate
        # when the leader differs.
        f"{root}.kind == 'LeaderWorkerSet' ? (has({s}.leaderWorkerTemplate) ?"
        f" (has({s}.leaderWorkerTemplate.workerTemplate) && has({s}.leaderWorkerTemplate.workerTemplate.spec) ?"
        f" [{s}.leaderWorkerTemplate.workerTemplate.spec] : []) +"
        f" (has({s}.leaderWorkerTemplate.leaderTemplate) && has({s}.leaderWorkerTemplate.leaderTemplate.spec) ?"
        f" [{s}.leaderWorkerTemplate.leaderTemplate.spec] : []) : []) : []"
    )


def _classes(root: str) -> str:
    return (
        f"({_pod_specs(root)}).filter(s, has(s.priorityClassName) && s.priorityClassName != '')"
        ".map(s, s.priorityClassName)"
    )


def allowed_priorities(allowed: Mapping[str, Sequence[str]]) -> str:
    """The CEL of the classes the request's namespace may use (namespace -> class names)."""
    table = {ns: list(names) for ns, names in sorted(allowed.items())}
    return f"request.namespace in {_cel(table)} ? {_cel(table)}[request.namespace] : []"


def priority_policy(allowed: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """`allowed`: team namespace -> the priority classes its workloads may name
    (gpufleet.spec.defaults.team_priorities)."""
    ops = ("CREATE", "UPDATE")
    return _policy(
        PRIORITY_POLICY,
        _rules(_WORKLOADS, ops),
        variables=[
            {"name": "allowed", "expression": allowed_priorities(allowed)},
            {"name": "label", "expression": _label("object", LABEL_PRIORITY_CLASS)},
            {"name": "oldLabel", "expression": _label("oldObject", LABEL_PRIORITY_CLASS)},
            {"name": "classes", "expression": _classes("object")},
            {"name": "oldClasses", "expression": _classes("oldObject")},
        ],
        validations=[
            {
                "expression": (
                    "variables.label == '' || variables.label in variables.allowed ||"
                    " (request.operation == 'UPDATE' && variables.label == variables.oldLabel)"
                ),
                "messageExpression": (
                    f"'the label {LABEL_PRIORITY_CLASS}: ' + variables.label + ' names a priority class namespace ' +"
                    " request.namespace + ' may not use; it may use: ' + (size(variables.allowed) == 0 ? 'none' :"
                    " variables.allowed.join(', ')) + ' (teams[].priorities)'"
                ),
                "message": (
                    f"the label {LABEL_PRIORITY_CLASS} names a priority class this team may not use"
                    " (teams[].priorities)"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": (
                    "variables.classes.all(c, c in variables.allowed) ||"
                    " (request.operation == 'UPDATE' && variables.classes == variables.oldClasses)"
                ),
                "messageExpression": (
                    "'priorityClassName ' + variables.classes.filter(c, !(c in variables.allowed)).join(', ') +"
                    " ' is a priority class namespace ' + request.namespace + ' may not use; it may use: ' +"
                    " (size(variables.allowed) == 0 ? 'none' : variables.allowed.join(', ')) + ' (teams[].priorities)'"
                ),
                "message": "priorityClassName names a priority class this team may not use (teams[].priorities)",
                "reason": "Forbidden",
            },
        ],
    )


# ---------------------------------------------------------------------------------------------------------------
# 2, 3. gpufleet's objects and the teams' own NetworkPolicies


def _owned(root: str) -> str:
    return (
        f"({_present(root)} && has({root}.metadata.labels) && '{_MANAGED_KEY}' in {root}.metadata.labels &&"
        f" {root}.metadata.labels['{_MANAGED_KEY}'] == '{_MANAGED_VALUE}')"
    )


# What gpufleet renders in team namespaces (gpufleet.plan.manifests.tenancy, .kueue, .storage).
OWNED_RESOURCES = (
    ("networking.k8s.io", "v1", "networkpolicies"),
    ("kueue.x-k8s.io", "*", "localqueues"),
    ("", "v1", "serviceaccounts"),
    ("", "v1", "configmaps"),
    # The S3 (Mountpoint) and FSx claims: a deleted claim leaves its static PV Released, and it never binds again.
    ("", "v1", "persistentvolumeclaims"),
    # The weight prefetch (teams[].prefetch): a team may scale its own serving, not the cache under it.
    ("apps", "v1", "daemonsets"),
    ("rbac.authorization.k8s.io", "v1", "roles"),
    ("rbac.authorization.k8s.io", "v1", "rolebindings"),
)


def owned_objects_policy() -> dict[str, Any]:
    return _policy(
        OWNED_POLICY,
        _rules(OWNED_RESOURCES, ("CREATE", "UPDATE", "DELETE")),
        match_conditions=[_team_principal()],
        validations=[
            {
                "expression": f"!{_owned('oldObject')} && !{_owned('object')}",
                "messageExpression": (
                    "(request.operation == 'DELETE' ? oldObject : object).kind + ' ' + request.name + ' belongs to"
                    f" gpufleet ({_MANAGED_KEY}: {_MANAGED_VALUE}): a team may not create, change or delete it, nor"
                    " label its own objects so; ask a cluster admin to change the fleet spec'"
                ),
                "message": (
                    f"objects labelled {_MANAGED_KEY}: {_MANAGED_VALUE} are gpufleet's: a team may not create, change"
                    " or delete them"
                ),
                "reason": "Forbidden",
            }
        ],
    )


def _peers_in_namespace(rules: str, peers: str) -> str:
    return (
        f"!has(object.spec.{rules}) || object.spec.{rules}.all(r, has(r.{peers}) && size(r.{peers}) > 0 &&"
        f" r.{peers}.all(p, has(p.podSelector) && !has(p.namespaceSelector) && !has(p.ipBlock)))"
    )


def team_network_policy_policy() -> dict[str, Any]:
    message = (
        "a team's NetworkPolicy may only allow traffic {} pods of its own namespace (every rule lists peers, each"
        " a podSelector without namespaceSelector or ipBlock): gpufleet's default-deny policies decide what"
        " crosses the namespace"
    )
    return _policy(
        NETWORK_POLICY_POLICY,
        _rules((("networking.k8s.io", "v1", "networkpolicies"),), ("CREATE", "UPDATE")),
        match_conditions=[_team_principal(), {"name": "not-gpufleets", "expression": f"!{_owned('object')}"}],
        validations=[
            {
                "expression": _peers_in_namespace("ingress", "from"),
                "message": message.format("from"),
                "reason": "Forbidden",
            },
            {"expression": _peers_in_namespace("egress", "to"), "message": message.format("to"), "reason": "Forbidden"},
        ],
    )


# ---------------------------------------------------------------------------------------------------------------
# 4, 5, 6. Owner references, DaemonSets, Services


def _claimed_owner(r: str) -> str:
    """The CEL test that ownerReference `r` names one of CLAIMED_OWNERS."""
    return " || ".join(
        f"({r}.apiVersion.startsWith('{group}/') && {r}.kind == '{kind}')"
        if group
        else f"({r}.apiVersion == 'v1' && {r}.kind == '{kind}')"
        for group, kind in CLAIMED_OWNERS
    )


CLAIM_REFUSED = (
    " as its controller: only the controller of that kind creates such children, and Kueue would count this one as"
    " part of an admitted workload, outside the quota of the team. Remove the controller ownerReference and submit"
    " the workload through the queue of the team"
)


def _claims(root: str) -> str:
    """The controller ownerReferences of `root` that name one of CLAIMED_OWNERS (a list)."""
    return (
        f"{_present(root)} && has({root}.metadata.ownerReferences) ? {root}.metadata.ownerReferences.filter(r,"
        f" has(r.controller) && r.controller && ({_claimed_owner('r')})) : []"
    )


def owner_spoofing_policy() -> dict[str, Any]:
    return _policy(
        OWNER_POLICY,
        _rules(_OWNED_WORKLOADS, ("CREATE", "UPDATE")),
        match_conditions=[{"name": "requested-by-a-team-identity", "expression": TEAM_IDENTITY}],
        variables=[
            {"name": "claims", "expression": _claims("object")},
            {"name": "oldClaims", "expression": _claims("oldObject")},
        ],
        validations=[
            {
                # On UPDATE a claim the object already had is the creator's, not the member's: a member may still
                # label or annotate a pod its Deployment's ReplicaSet made.
                "expression": "variables.claims.all(r, request.operation == 'UPDATE' && r in variables.oldClaims)",
                "messageExpression": (
                    "object.kind + ' ' + request.name + ' names ' + variables.claims.filter(r, !(r in"
                    " variables.oldClaims)).map(r, r.kind + ' ' + r.name).join(', ') +"
                    f" '{CLAIM_REFUSED}'"
                ),
                "message": (
                    "a team member may not create an object whose controller ownerReference names a kind only a"
                    " controller creates children of (a Pod, Job, ReplicaSet, Deployment, StatefulSet, DaemonSet or a"
                    " Kueue-managed job kind): Kueue would count it as part of an admitted workload, outside the"
                    " team's quota. Submit the workload through the team's queue instead"
                ),
                "reason": "Forbidden",
            }
        ],
    )


def daemonset_policy() -> dict[str, Any]:
    return _policy(
        DAEMONSET_POLICY,
        _rules((("apps", "v1", "daemonsets"),), ("CREATE",)),
        match_conditions=[_team_principal()],
        validations=[
            {
                "expression": "false",
                "message": (
                    "teams may not run DaemonSets: Kueue gates their pods in a team namespace and gives them a GPU"
                    " flavor's node selector, so they stay Pending holding quota. Run per-node work as a Job or"
                    " JobSet through the team's queue, or ask a cluster admin for a system component"
                ),
                "reason": "Forbidden",
            }
        ],
    )


def service_policy(allowed: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """`allowed`: team namespace -> the exposing Service types (teams[].serviceTypes) its members may create."""
    table = {ns: [*INTERNAL_SERVICE_TYPES, *types] for ns, types in sorted(allowed.items())}
    return _policy(
        SERVICE_POLICY,
        _rules((("", "v1", "services"),), ("CREATE", "UPDATE")),
        match_conditions=[_team_principal()],
        variables=[
            {"name": "type", "expression": "has(object.spec.type) ? object.spec.type : 'ClusterIP'"},
            {
                "name": "allowed",
                "expression": f"request.namespace in {_cel(table)} ? {_cel(table)}[request.namespace] : ['ClusterIP']",
            },
        ],
        validations=[
            {
                "expression": "variables.type in variables.allowed",
                "messageExpression": (
                    "'Services of type ' + variables.type + ' are not allowed in namespace ' + request.namespace +"
                    " ' (they expose pods outside the cluster or on every node); allowed: ' +"
                    " variables.allowed.join(', ') + ' (teams[].serviceTypes)'"
                ),
                "message": "this Service type is not allowed for the team (teams[].serviceTypes)",
                "reason": "Forbidden",
            },
            {
                "expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
                "message": (
                    "Services may not set externalIPs: any external IP would be routed to the Service on every node"
                    " (CVE-2020-8554)"
                ),
                "reason": "Forbidden",
            },
        ],
    )
